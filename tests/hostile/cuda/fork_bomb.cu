// fork_bomb (vectoradd, test mode, short timeout).
//
// Attempts: from custom_kernel, a fork bomb: every process forks again as
// fast as it can (children renamed "kbh-forkbomb"), up to a self-imposed
// cap of 4096 processes (counted in shared memory) so that a host without
// any limit survives the test. The calling process waits 2 s, reports how
// many forks succeeded and failed, and returns without computing.
//
// Expected: verdict failed (no output written) or timeout; not ranked.
// "ACHIEVED" (the cap was reached: neither pids.max nor RLIMIT_NPROC
// stopped it) fails the expectation; the script then checks that no
// process of the run is left and that the next honest run passes.
#include <cuda_fp16.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "task.h"

#define SAY(...)                                                               \
	do {                                                                   \
		printf(__VA_ARGS__);                                           \
		printf("\n");                                                  \
		fflush(stdout);                                                \
	} while (0)

static const long kCap = 4096;

struct counters {
	long made, failed, first_errno;
};

static void bomb(struct counters *c)
{
	prctl(PR_SET_NAME, "kbh-forkbomb", 0, 0, 0);
	for (;;) {
		if (__atomic_load_n(&c->made, __ATOMIC_RELAXED) >= kCap) {
			pause();
			continue;
		}
		pid_t p = fork();
		if (p == 0) {
			prctl(PR_SET_NAME, "kbh-forkbomb", 0, 0, 0);
			continue; /* the child bombs too */
		}
		if (p > 0) {
			__atomic_add_fetch(&c->made, 1, __ATOMIC_RELAXED);
		} else {
			long zero = 0;
			__atomic_compare_exchange_n(&c->first_errno, &zero,
						    (long)errno, 0,
						    __ATOMIC_RELAXED,
						    __ATOMIC_RELAXED);
			__atomic_add_fetch(&c->failed, 1, __ATOMIC_RELAXED);
			usleep(1000);
		}
	}
}

extern "C" void custom_kernel(const __half *a, const __half *b, __half *out,
			      size_t n)
{
	static int done;
	(void)a, (void)b, (void)out, (void)n;
	if (done++)
		return;
	struct counters *c = (struct counters *)mmap(NULL, sizeof(*c),
						     PROT_READ | PROT_WRITE,
						     MAP_SHARED | MAP_ANONYMOUS,
						     -1, 0);
	if (c == MAP_FAILED) {
		SAY("mmap: %s", strerror(errno));
		return;
	}
	memset(c, 0, sizeof(*c));
	pid_t root = fork();
	if (root == 0) {
		bomb(c);
		_exit(0);
	}
	if (root < 0) {
		SAY("blocked: first fork failed (%s)", strerror(errno));
		return;
	}
	sleep(2);
	long made = __atomic_load_n(&c->made, __ATOMIC_RELAXED);
	long failed = __atomic_load_n(&c->failed, __ATOMIC_RELAXED);
	SAY("fork bomb after 2 s: %ld forks succeeded, %ld failed (first errno %ld: %s)",
	    made, failed, c->first_errno,
	    c->first_errno ? strerror((int)c->first_errno) : "-");
	if (made >= kCap)
		SAY("ACHIEVED: %ld processes (the test's own cap): no process limit",
		    made);
	else
		SAY("blocked: the process limit held at about %ld processes",
		    made + 1);
	/* The bomb keeps running: the sandbox must reap it all when the run
	 * ends. The output stays unwritten (poisoned), so the tests fail. */
}
