// sleeper (vectoradd, test mode, short timeout).
//
// Attempts: to outlast the timeout politely: ignores and blocks every
// signal it can (SIGTERM, SIGINT, SIGHUP, SIGALRM -- the harness's own
// watchdog --, SIGXCPU, SIGUSR1/2, SIGPIPE), starts a child that does the
// same (renamed "kbh-sleeper"), then sleeps forever in custom_kernel.
//
// Expected: verdict timeout (the sandbox uses SIGKILL); not ranked; no
// process left behind (the child included).
#include <cuda_fp16.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "task.h"

static void deaf(void)
{
	static const int sigs[] = {SIGTERM, SIGINT,  SIGHUP,  SIGALRM, SIGXCPU,
				   SIGUSR1, SIGUSR2, SIGPIPE, SIGQUIT, SIGTSTP};
	sigset_t all;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], SIG_IGN);
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, NULL);
}

static void sleep_forever(void)
{
	for (;;) {
		struct timespec ts = {3600, 0};
		nanosleep(&ts, NULL);
	}
}

extern "C" void custom_kernel(const __half *a, const __half *b, __half *out,
			      size_t n)
{
	(void)a, (void)b, (void)out, (void)n;
	pid_t p = fork();
	if (p == 0) {
		prctl(PR_SET_NAME, "kbh-sleeper", 0, 0, 0);
		setsid();
		deaf();
		sleep_forever();
	}
	deaf();
	printf("ignoring SIGTERM/SIGALRM/...; child %d does the same; sleeping forever\n",
	       (int)p);
	fflush(stdout);
	sleep_forever();
}
