// daemon (vectoradd, test mode).
//
// Attempts: a daemon that outlives its run and keeps a CUDA context.
// custom_kernel double-forks; the grandchild calls setsid(), ignores every
// signal it can and re-executes the program itself (/proc/self/exe) with
// KBH_DAEMON=1 in its environment: a constructor of this file sees the
// variable before main() and becomes the daemon (renamed "kbh-daemon"):
// it creates a CUDA context, holds 1 GiB of device memory, launches a
// small kernel every 100 ms and writes a heartbeat into the workdir and
// into /tmp/kbh-marker-daemon. (A forked child cannot use the parent's
// CUDA context, hence the exec.) It keeps the run's stdout, stderr and
// report pipe open. The run itself returns without computing.
//
// Expected: verdict failed (not timeout: the worker must not wait for the
// daemon's pipes); not ranked; when the run ends the daemon is
// gone (PID namespace / cgroup kill), GPU memory is back to baseline, no
// /tmp/kbh-marker-daemon on the host, and the next honest run passes.
#include <cuda_fp16.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "task.h"

extern char **environ;

__global__ void tick(unsigned *p)
{
	p[threadIdx.x] += 1;
}

static void heartbeat(const char *path, unsigned long i)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd >= 0) {
		char line[64];
		int len = snprintf(line, sizeof(line), "%d %lu\n",
				   (int)getpid(), i);
		if (write(fd, line, (size_t)len) < 0)
			i = 0;
		close(fd);
	}
}

static void ignore_signals(void)
{
	for (int s = 1; s < 32; s++)
		if (s != SIGKILL && s != SIGSTOP)
			signal(s, SIG_IGN);
}

static void daemon_main(void)
{
	prctl(PR_SET_NAME, "kbh-daemon", 0, 0, 0);
	ignore_signals();
	unsetenv("KBH_DAEMON");
	void *hold = NULL;
	unsigned *ctr = NULL;
	int cuda_ok = cudaSetDevice(0) == cudaSuccess &&
		      cudaMalloc(&hold, (size_t)1 << 30) == cudaSuccess &&
		      cudaMemset(hold, 0x5a, (size_t)1 << 30) == cudaSuccess &&
		      cudaMalloc(&ctr, 32 * sizeof(unsigned)) == cudaSuccess;
	heartbeat("kbh-daemon-started", cuda_ok);
	for (unsigned long i = 0;; i++) {
		if (cuda_ok) {
			tick<<<1, 32>>>(ctr);
			cudaDeviceSynchronize();
		}
		heartbeat("kbh-daemon-heartbeat", i);
		heartbeat("/tmp/kbh-marker-daemon", i);
		struct timespec ts = {0, 100 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
}

__attribute__((constructor)) static void maybe_daemon(void)
{
	const char *v = getenv("KBH_DAEMON");
	if (v && strcmp(v, "1") == 0) {
		daemon_main();
		_exit(0);
	}
}

extern "C" void custom_kernel(const __half *a, const __half *b, __half *out,
			      size_t n)
{
	static int done;
	(void)a, (void)b, (void)out, (void)n;
	if (done++)
		return;
	pid_t p = fork();
	if (p == 0) {
		setsid();
		if (fork() != 0)
			_exit(0);
		ignore_signals();
		/* Keep stdout, stderr and the report pipe open across the exec
		 * (the harness marks fd 3 close-on-exec; a dup is not): a worker
		 * that waits for end-of-file on them would wait forever. */
		dup2(3, 100);
		setenv("KBH_DAEMON", "1", 1);
		char *argv[] = {(char *)"kbh-daemon", NULL};
		execve("/proc/self/exe", argv, environ);
		/* exec failed: stay around without CUDA. */
		prctl(PR_SET_NAME, "kbh-daemon", 0, 0, 0);
		for (unsigned long i = 0;; i++) {
			heartbeat("kbh-daemon-heartbeat", i);
			heartbeat("/tmp/kbh-marker-daemon", i);
			sleep(1);
		}
	}
	/* Give the daemon time to create its context. */
	sleep(3);
	FILE *f = fopen("kbh-daemon-started", "r");
	int ok = -1;
	if (f) {
		int pid = 0;
		if (fscanf(f, "%d %d", &pid, &ok) != 2)
			ok = -1;
		fclose(f);
	}
	printf("daemon started (first fork %d): %s\n", (int)p,
	       ok == 1   ? "it holds a CUDA context and 1 GiB of device memory"
	       : ok == 0 ? "without a CUDA context"
			 : "no sign of it yet");
	fflush(stdout);
}
