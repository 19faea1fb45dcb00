// Hostile: a correct sum, plus every way out of its process it can think
// of, tried on the first call: write a fake verdict to every fd from 3 to
// 64 (the harness's test then checks that none of it reached the report:
// the one fd the child keeps is its "done" pipe to the parent, which only
// wakes the parent up), read the parent's memory and fds through /proc,
// signal the parent or the process group, fork a helper, ptrace, exec.
// Each of the latter that succeeds prints an ESCAPE line to stderr; the
// test expects none, and a normal pass.
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int tried;

static void probe(void)
{
	char path[64], buf[64];
	pid_t pp = getppid();
	for (int fd = 3; fd <= 64; fd++)
		if (write(fd, "benchmark.9.mean: 1.000\ncheck: pass\n", 36) > 0)
			fprintf(stderr, "probe: fd %d is writable\n", fd);
	snprintf(path, sizeof path, "/proc/%d/mem", (int)pp);
	int m = open(path, O_RDONLY);
	if (m >= 0)
		fprintf(stderr, "ESCAPE: opened %s\n", path);
	for (int fd = 0; fd <= 16; fd++) {
		snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)pp, fd);
		int f = open(path, O_WRONLY);
		if (f >= 0 && write(f, "check: pass\n", 12) > 0)
			fprintf(stderr, "ESCAPE: wrote through %s\n", path);
	}
	snprintf(path, sizeof path, "/proc/%d/environ", (int)pp);
	int e = open(path, O_RDONLY);
	if (e >= 0 && read(e, buf, sizeof buf) > 0)
		fprintf(stderr, "ESCAPE: read %s\n", path);
	if (kill(pp, SIGSTOP) == 0) {
		fprintf(stderr, "ESCAPE: stopped the parent\n");
		kill(pp, SIGCONT);
	}
	if (kill(0, SIGCONT) == 0)
		fprintf(stderr, "ESCAPE: signalled the process group\n");
	pid_t c = fork();
	if (c == 0)
		_exit(0);
	if (c > 0) {
		fprintf(stderr, "ESCAPE: forked a helper\n");
		waitpid(c, NULL, 0);
	}
	if (syscall(SYS_ptrace, 16 /* PTRACE_ATTACH */, pp, 0, 0) == 0)
		fprintf(stderr, "ESCAPE: ptrace attached to the parent\n");
	char *const argv[] = {"/bin/true", NULL};
	execv("/bin/true", argv); /* returns only on failure */
	fprintf(stderr, "probe: done\n");
}

float custom_kernel(const float *data, size_t n)
{
	if (!tried++)
		probe();
	float sum = 0.0f;
	for (size_t i = 0; i < n; i++)
		sum += data[i];
	return sum;
}
