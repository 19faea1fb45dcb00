/* kb-bench-sandbox: what a sandboxed run costs.
 *
 * Runs /bin/true N times each way — plain fork+execve+waitpid, then
 * kb_sandbox_run() without isolation, then with isolation — and prints the
 * median and 90th percentile wall time per run in milliseconds, and the
 * ratio to the plain run. The target is <= 20 ms per isolated run.
 *
 * Usage: kb-bench-sandbox [N]   (N defaults to 200; needs root for isolation)
 */
#include "kb_log.h"
#include "kb_sandbox.h"

#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double pct(double *v, int n, double p)
{
	int i = (int)(p * (n - 1) + 0.5);
	return v[i];
}

static int plain_run(void)
{
	char *argv[] = {"/bin/true", NULL};
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		execve(argv[0], argv, environ);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static int sandbox_run(const char *workdir, int isolate)
{
	char *argv[] = {"/bin/true", NULL};
	char *env[] = {"PATH=/usr/bin:/bin", NULL};
	struct kb_sandbox_opts o;
	struct kb_sandbox_result r;
	char err[256];

	memset(&o, 0, sizeof(o));
	o.workdir = workdir;
	o.argv = argv;
	o.env = env;
	o.want_report = 1;
	o.wall_timeout_s = 10;
	o.memory_limit_mb = 1024;
	o.isolate = isolate;
	int rc = kb_sandbox_run(&o, &r, err, sizeof(err));
	if (rc < 0)
		fprintf(stderr, "run failed: %s\n", err);
	else if (!r.exited || r.exit_code)
		rc = -1;
	kb_sandbox_result_clear(&r);
	return rc;
}

static int measure(const char *name, int n, int mode, const char *workdir,
		   double *base)
{
	double *t = calloc((size_t)n, sizeof(double));

	if (!t)
		return -1;
	for (int i = 0; i < n + 5; i++) {
		double t0 = now_ms();
		int rc = mode == 0 ? plain_run()
				   : sandbox_run(workdir, mode == 2);
		double dt = now_ms() - t0;
		if (rc < 0) {
			free(t);
			return -1;
		}
		if (i >= 5) /* warm-up */
			t[i - 5] = dt;
	}
	qsort(t, (size_t)n, sizeof(double), cmp_double);
	double med = pct(t, n, 0.5), p90 = pct(t, n, 0.9);
	if (!*base)
		*base = med;
	printf("%-26s median %7.2f ms  p90 %7.2f ms  ratio %6.1fx\n", name, med,
	       p90, med / *base);
	free(t);
	return 0;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 200;
	char workdir[] = "/tmp/kb-bench-sandbox-XXXXXX";
	struct kb_sandbox_caps caps;
	double base = 0;

	if (n < 1)
		n = 200;
	kb_log_init("bench", KB_LOG_INFO, 0);
	if (!mkdtemp(workdir)) {
		perror("mkdtemp");
		return 1;
	}
	kb_sandbox_probe(&caps, NULL, 0);
	printf("%d runs of /bin/true each; sandbox mode=%s cgroup=%s\n", n,
	       caps.mode, caps.cgroup);
	int rc = measure("fork+execve", n, 0, workdir, &base);
	if (rc == 0)
		rc = measure("kb_sandbox_run isolate=0", n, 1, workdir, &base);
	if (rc == 0 && caps.isolate_ok)
		rc = measure("kb_sandbox_run isolate=1", n, 2, workdir, &base);
	else if (rc == 0)
		printf("isolated runs unavailable: %s\n", caps.why);
	rmdir(workdir);
	return rc == 0 ? 0 : 1;
}
