/* kb_sandbox: runs one untrusted command (a build or a harness run) and
 * reports how it ended. Every process the worker starts for a submission
 * goes through kb_sandbox_run(); the worker itself never forks user code.
 *
 * The child gets: cwd = workdir, exactly the environment in env (nothing
 * inherited), stdin from /dev/null, stdout and stderr captured (each capped
 * at output_limit bytes; the rest is drained and counted, never buffered),
 * and — when want_report — a pipe as the report channel on fd 3, announced
 * by the caller through POPCORN_FD=3 in env. All other descriptors are
 * closed. The child and everything it starts live in one process group that
 * is killed when the run ends or the wall-clock limit passes (SIGKILL; a
 * program that ignores SIGTERM gains nothing).
 *
 * Faults are kept apart as isolate does: sandbox setup failures are
 * infra_error (not the program's fault); exit status, signals and timeouts
 * are the program's.
 *
 * Thread-safety: one run at a time per process (it waits for its children).
 */
#ifndef KB_SANDBOX_H
#define KB_SANDBOX_H

#include <stddef.h>
#include <sys/types.h>

struct kb_sandbox_opts {
	const char *workdir;    /* writable directory, becomes cwd */
	char *const *argv;      /* argv[0]: absolute path or name looked up in PATH of env */
	char *const *env;       /* complete environment, NULL-terminated */
	int want_report;        /* give the child a report pipe on fd 3 */
	double wall_timeout_s;  /* kill the group after this long (> 0) */
	double cpu_timeout_s;   /* RLIMIT_CPU; 0 = wall_timeout_s */
	size_t output_limit;    /* bytes kept per stream; 0 = 64 KiB */
	size_t report_limit;    /* bytes kept of the report; 0 = 1 MiB */
	long memory_limit_mb;   /* cgroup memory.max where available; 0 = none */
	int max_processes;      /* cgroup pids.max / RLIMIT_NPROC; 0 = 256 */
	int gpu;                /* bind the GPU device nodes into the sandbox */
	int isolate;            /* namespaces, seccomp, unprivileged uid (1 in production) */
};

struct kb_sandbox_result {
	int exited, exit_code;  /* normal exit and its status */
	int signaled, signal;   /* killed by a signal (other than our timeout kill) */
	int timed_out;          /* we killed it at the wall-clock limit */
	double wall_s, cpu_s;
	long max_rss_kb;
	char *out, *err;        /* captured stdout/stderr (NUL-terminated, malloc'd) */
	size_t out_len, err_len;
	size_t out_dropped, err_dropped; /* bytes past output_limit */
	char *report;           /* bytes from the report channel (NUL-terminated) */
	size_t report_len;
	size_t report_dropped;
	int infra_error;        /* the sandbox failed, not the program */
	char infra_msg[256];
};

/* Runs the command to completion. Returns 0 when the command ran (however it
 * ended: see *r), or a negative code when the sandbox could not be set up, in
 * which case r->infra_error is 1 and errstr says why. Free r with
 * kb_sandbox_result_clear() in both cases. */
int kb_sandbox_run(const struct kb_sandbox_opts *o, struct kb_sandbox_result *r,
		   char *errstr, size_t errstr_size);

void kb_sandbox_result_clear(struct kb_sandbox_result *r);

#endif
