// Hostile: claims shorter calls than it makes (issue 29). It sums honestly,
// one thread, and then lies about the time through one of two channels:
//
//   KBT_SHAVE_HOW=clock (default): finds the harness's clock pointer in its
//     own process (as vectorsum_timer.c does) and replaces it with a clock
//     that tells the truth about when a call starts and lies about when it
//     ends;
//   KBT_SHAVE_HOW=arena: a thread of its own watches the guard's control
//     page in the shared arena and, the moment the call's "done" is posted,
//     rewrites the end stamp there before the harness's parent reads it.
//
// By how much: KBT_SHAVE_SCALE (the claim is that fraction of the call,
// default 0.6) or KBT_SHAVE_MINUS_US (the claim is that much shorter;
// wins over the scale). KBT_SHAVE_CAL=N (clock only): during the harness's
// calibration requests, when they come to this process, the clock runs N
// times slow, so their busy loop takes N times longer than it claims and
// the handoff calibrated from them grows by that much.
//
// Each call it first writes what the harness would have been told of the
// previous call without the lie, "shave: claim <call> <ns>" (call: 0 for
// the first), to stderr: tests/problems/cpu_timing.sh scores that claim as
// the harness would have and compares.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The guard's control page (problems/harness/guard.c, struct kbh__ctl):
 * what a submission can learn by reading its own memory. */
#define CTL_REQ_SEQ 0
#define CTL_OP 8
#define CTL_DONE_SEQ 64
#define CTL_T0 80
#define CTL_T1 88
#define OP_CALL 16 /* KBH_GUARD_OP_USER: harness_cpu.c's timed call */
#define OP_CAL 17  /* its calibration request */

static int (*real_clock)(clockid_t, struct timespec *);
static volatile unsigned char *ctl;
static double scale = 0.6;
static uint64_t minus_ns, cal_slow;
static _Atomic uint64_t shave_ns;   /* what to take off this call's end */
static _Atomic unsigned long calls; /* custom_kernel calls so far */
/* the untold claim of call claim_of (0: none yet) */
static _Atomic uint64_t real_claim;
static _Atomic unsigned long claim_of;

static void record_claim(uint64_t ns)
{
	atomic_store(&real_claim, ns);
	atomic_store(&claim_of, atomic_load(&calls));
}

static uint64_t ns_of(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec;
}

static void set_ns(struct timespec *ts, uint64_t ns)
{
	ts->tv_sec = (time_t)(ns / 1000000000ull);
	ts->tv_nsec = (long)(ns % 1000000000ull);
}

static uint32_t ctl_u32(size_t off)
{
	return atomic_load((_Atomic uint32_t *)(void *)(ctl + off));
}

/* The harness reads the clock at t0 and at t1 of a timed call (nothing
 * else in between: the submission's own clock is libc's). Per request,
 * the first read is told as it is, the second is the lie. During a
 * calibration request the clock runs cal_slow times slow from its first
 * read. */
static int shaved(clockid_t id, struct timespec *ts)
{
	static uint32_t seq;
	static unsigned reads;
	static uint64_t base;
	int rc = real_clock(id, ts);
	uint32_t s = ctl_u32(CTL_REQ_SEQ);
	if (s != seq) {
		seq = s;
		reads = 0;
		base = ns_of(ts);
	}
	reads++;
	uint32_t op = ctl_u32(CTL_OP);
	if (op == OP_CAL && cal_slow > 1) {
		set_ns(ts, base + (ns_of(ts) - base) / cal_slow);
	} else if (op == OP_CALL && reads == 2) {
		record_claim(ns_of(ts) - base);
		set_ns(ts, ns_of(ts) - atomic_load(&shave_ns));
	}
	return rc;
}

/* The control page: a one-page shared mapping whose op word says "timed
 * call" and whose sequence numbers say one request is in flight. Called
 * from inside a call. */
static int find_ctl(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[1024];
	if (!f)
		return -1;
	while (!ctl && fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		char perms[8];
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 ||
		    hi - lo != 4096 || strcmp(perms, "rw-s") != 0)
			continue;
		const volatile unsigned char *p = (void *)lo;
		uint32_t req = *(const volatile uint32_t *)(p + CTL_REQ_SEQ);
		uint32_t done = *(const volatile uint32_t *)(p + CTL_DONE_SEQ);
		uint32_t op = *(const volatile uint32_t *)(p + CTL_OP);
		if (op == OP_CALL && req == done + 1)
			ctl = (volatile unsigned char *)lo;
	}
	fclose(f);
	return ctl ? 0 : -1;
}

/* Points every copy of libc's clock_gettime in the executable's writable
 * data (.data, .bss) at shaved. */
static int patch_clock(void)
{
	void *real = dlsym(RTLD_DEFAULT, "clock_gettime");
	char exe[512], line[1024];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	FILE *f = fopen("/proc/self/maps", "r");
	if (!real || n <= 0 || !f)
		return -1;
	exe[n] = '\0';
	real_clock = (int (*)(clockid_t, struct timespec *))real;
	int patched = 0;
	unsigned long exe_end = 0;
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		char perms[8], path[512] = "";
		if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %511s", &lo, &hi,
			   perms, path) < 3)
			continue;
		int is_exe = strcmp(path, exe) == 0;
		int is_bss = !path[0] && lo == exe_end;
		if (is_exe)
			exe_end = hi;
		if (!(is_exe || is_bss) || strcmp(perms, "rw-p") != 0)
			continue;
		for (void **p = (void **)lo; (unsigned long)(p + 1) <= hi; p++)
			if (*p == real) {
				*p = (void *)shaved;
				patched++;
			}
	}
	fclose(f);
	return patched;
}

/* The arena channel: spins on the control page and rewrites t1 of every
 * timed call between the child's "done" and the parent's read of it. */
static void *rewriter(void *arg)
{
	(void)arg;
	uint32_t handled = 0;
	for (;;) {
		uint32_t done = ctl_u32(CTL_DONE_SEQ);
		if (done != handled && done == ctl_u32(CTL_REQ_SEQ)) {
			handled = done;
			if (ctl_u32(CTL_OP) == OP_CALL) {
				volatile uint64_t *t0 =
					(volatile uint64_t *)(void *)(ctl +
								      CTL_T0);
				volatile uint64_t *t1 =
					(volatile uint64_t *)(void *)(ctl +
								      CTL_T1);
				record_claim(*t1 - *t0);
				*t1 -= atomic_load(&shave_ns);
				/* stopped and continued in between: the
				 * stamps were an older call's */
				if (ctl_u32(CTL_REQ_SEQ) != done)
					atomic_store(&claim_of, 0);
			}
		}
		__asm__ volatile("" ::: "memory");
	}
	return NULL;
}

static void setup(void)
{
	const char *how = getenv("KBT_SHAVE_HOW"), *v;
	if ((v = getenv("KBT_SHAVE_SCALE")))
		scale = atof(v);
	if ((v = getenv("KBT_SHAVE_MINUS_US")))
		minus_ns = strtoull(v, NULL, 10) * 1000ull;
	if ((v = getenv("KBT_SHAVE_CAL")))
		cal_slow = strtoull(v, NULL, 10);
	if (find_ctl()) {
		fprintf(stderr, "shave: no control page\n");
		return;
	}
	if (how && strcmp(how, "arena") == 0) {
		pthread_t t;
		int rc = pthread_create(&t, NULL, rewriter, NULL);
		fprintf(stderr, "shave: arena rewriter %s\n",
			rc ? "failed" : "started");
	} else {
		fprintf(stderr, "shave: patched %d pointer(s)\n",
			patch_clock());
	}
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ns_of(&ts);
}

float custom_kernel(const float *data, size_t n)
{
	uint64_t s = now_ns();
	unsigned long k = atomic_fetch_add(&calls, 1) + 1;
	if (k == 1)
		setup();
	/* the previous call's, if it was recorded for that call (a rewriter
	 * thread that ran too late to lie recorded nothing) */
	else if (atomic_load(&claim_of) == k - 1)
		fprintf(stderr, "shave: claim %lu %llu\n", k - 2,
			(unsigned long long)atomic_load(&real_claim));
	float acc[8] = {0};
	size_t i = 0;
	for (; i + 8 <= n; i += 8)
		for (int k = 0; k < 8; k++)
			acc[k] += data[i + k];
	float sum = 0.0f;
	for (; i < n; i++)
		sum += data[i];
	for (int k = 0; k < 8; k++)
		sum += acc[k];
	atomic_store(&shave_ns, minus_ns ? minus_ns
					 : (uint64_t)((1.0 - scale) *
						      (double)(now_ns() - s)));
	return sum;
}
