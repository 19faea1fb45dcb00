/* ptrace and process_vm_readv against its own child, init and its parent;
 * signals to everything. */
#include "hostile.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>

static char target_data[64] = "not for your eyes";

static void try_pid(pid_t pid, const char *who)
{
	char buf[64], what[128];
	struct iovec local = {buf, sizeof(buf)},
		     remote = {target_data, sizeof(target_data)};

	snprintf(what, sizeof(what), "ptrace(PTRACE_ATTACH, %s)", who);
	long r = ptrace(PTRACE_ATTACH, pid, 0, 0);
	EXPECT_FAIL(r == 0, what);
	if (r == 0)
		ptrace(PTRACE_DETACH, pid, 0, 0);
	snprintf(what, sizeof(what), "ptrace(PTRACE_SEIZE, %s)", who);
	EXPECT_FAIL(ptrace(PTRACE_SEIZE, pid, 0, 0) == 0, what);
	snprintf(what, sizeof(what), "process_vm_readv(%s)", who);
	EXPECT_FAIL(process_vm_readv(pid, &local, 1, &remote, 1, 0) > 0, what);
}

int main(void)
{
	hostile_start();
	pid_t child = fork();
	if (child == 0) {
		for (;;)
			pause();
	}
	usleep(50000);
	try_pid(child, "own child");
	try_pid(1, "pid 1 (the run's init)");
	try_pid(getppid(), "parent");
	EXPECT_FAIL(ptrace(PTRACE_TRACEME, 0, 0, 0) == 0,
		    "ptrace(PTRACE_TRACEME)");
	/* Signals: init is root, the worker is invisible. */
	/* Killing the run's init would end the run early without a status.
	 * The kernel ignores SIGKILL sent to a namespace's init from inside
	 * (and init is root in root mode): if we are still here afterwards,
	 * it survived; the test also checks that the run ended normally. */
	int kr = kill(1, SIGKILL);
	usleep(100000);
	printf("kill(1, SIGKILL) returned %d (%s); init survived\n", kr,
	       kr ? strerror(errno) : "ok");
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	/* kill(-1) hits only what we may signal: ourselves and our children. */
	signal(SIGTERM, SIG_IGN);
	printf("kill(-1, SIGTERM): %s\n",
	       kill(-1, SIGTERM) == 0 ? "sent" : strerror(errno));
	return hostile_achieved;
}
