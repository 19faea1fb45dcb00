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
 * Limits on every run: RLIMIT_CPU (cpu_timeout_s, SIGXCPU then SIGKILL),
 * RLIMIT_FSIZE 256 MiB, RLIMIT_NOFILE 256, RLIMIT_CORE 0 (no core dumps;
 * PR_SET_DUMPABLE cannot be forced on a program, execve resets it), and a
 * per-run cgroup (v2, else v1) with pids.max, memory limit and no swap where
 * the host has one; the address space is never capped (CUDA reserves huge
 * ranges). A non-isolated run's processes are killed as a process group and
 * through the cgroup; one that left the group with setsid() and has no
 * cgroup to catch it may survive (isolation closes that gap).
 *
 * Isolation (isolate = 1; see kb_sandbox_probe() for the host's side): the
 * run gets its own mount, PID, network (loopback only), IPC and UTS
 * namespaces; a new root with /usr, /lib*, /bin, /sbin and ro_paths
 * read-only, a minimal /etc, private /tmp and /dev/shm, /dev with only
 * null/zero/full/random/urandom (+ GPU nodes when gpu), its own /proc, and
 * the workdir and rw_paths read-write at their host paths (so absolute
 * paths in argv work); an unprivileged uid/gid of its own (chowned onto
 * the workdir and rw_paths for the run and back afterwards, set-id bits
 * stripped, never following a link), no capabilities,
 * NO_NEW_PRIVS, and a seccomp deny list (sandbox_seccomp.c). When the run's
 * first process exits, the PID namespace ends and takes every process of
 * the run with it, daemons included. If the host cannot isolate, isolated
 * runs fail as infra errors; they never run unisolated.
 *
 * Thread-safety: runs may overlap in several threads (a held run waits
 * beside the job's own commands); their set-up and the hand-back of their
 * directories take a lock, and each thread waits for its own children
 * only. The child is made with a raw clone(2) and never allocates, so
 * calling from a process with other threads (librdkafka) is safe; the run
 * is killed if the calling thread exits (PR_SET_PDEATHSIG).
 *
 * Build: worker/sandbox/, linked with kbcore
 * (kb_log), PkgConfig::SECCOMP and m. tests/hostile/ holds its suites.
 */
#ifndef KB_SANDBOX_H
#define KB_SANDBOX_H

#include <stddef.h>
#include <sys/types.h>

struct kb_device_family;

struct kb_sandbox_opts {
	const char *workdir; /* writable directory, becomes cwd */
	char *const *
		argv; /* argv[0]: absolute path or name looked up in PATH of env */
	char *const *env;      /* complete environment, NULL-terminated */
	int want_report;       /* give the child a report pipe on fd 3 */
	double wall_timeout_s; /* kill the group after this long (> 0) */
	double cpu_timeout_s;  /* RLIMIT_CPU; 0 = wall_timeout_s */
	size_t output_limit;   /* bytes kept per stream; 0 = 64 KiB */
	size_t report_limit;   /* bytes kept of the report; 0 = 1 MiB */
	long memory_limit_mb;  /* cgroup memory.max where available; 0 = none */
	int max_processes;     /* cgroup pids.max / RLIMIT_NPROC; 0 = 256 */
	int gpu;     /* bind the GPU device nodes (and /sys, read-only) into an
				 * isolated run */
	int isolate; /* namespaces, seccomp, unprivileged uid (1 in production) */
	/* Added by the sandbox owner (zero-initialised callers get defaults): */
	char *const
		*ro_paths; /* extra host paths bound read-only into an isolated
				 * run (e.g. "/opt/conda"); NULL-terminated or NULL.
				 * KB_SANDBOX_RO_PATHS (colon-separated) adds more. */
	/* With gpu, which device nodes the run gets: every family's nodes
	 * present in /dev, as the device table (device.h,
	 * kb_device_dev_node) names them; with gpu_restrict, of the
	 * per-device nodes of gpu_family (NVIDIA: /dev/nvidiaN; AMD:
	 * /dev/dri/renderDN beside /dev/kfd) only the one numbered
	 * gpu_index, and of other families' none, so a worker's run sees
	 * its own GPU alone. */
	int gpu_restrict;
	int gpu_index;
	const struct kb_device_family *gpu_family; /* NULL: none */
	const char *cwd;       /* working directory; NULL = workdir. It must be
				 * inside the workdir or one of the bound paths
				 * (a read-only one will do: then only the workdir
				 * and rw_paths are writable). */
	char *const *rw_paths; /* further directories bound read-write (at their
				 * host paths) and handed to the run's uid like the
				 * workdir; NULL-terminated or NULL */
	/* A held run (ready.h): started before its job is known, released
	 * later. Requires want_report. The program gets go_fd (the caller's
	 * socket; the caller keeps its copy) as fd 4, after the report
	 * pipe, and the wall-clock limit counts from the release: the moment
	 * release_fd (an eventfd the caller writes) becomes readable, its
	 * value being the limit in milliseconds. Until then hold_timeout_s
	 * limits the run (wall_timeout_s is not used). */
	int held;
	int go_fd, release_fd;
	double hold_timeout_s;
};

struct kb_sandbox_result {
	int exited, exit_code; /* normal exit and its status */
	int released;          /* a held run: it was released (wall_s counts
				 * from then) */
	int signaled,
		signal; /* killed by a signal (other than our timeout kill) */
	int timed_out;  /* we killed it at the wall-clock limit */
	double wall_s, cpu_s;
	long max_rss_kb;
	char *out, *err; /* captured stdout/stderr (NUL-terminated, malloc'd) */
	size_t out_len, err_len;
	size_t out_dropped, err_dropped; /* bytes past output_limit */
	char *report; /* bytes from the report channel (NUL-terminated) */
	size_t report_len;
	size_t report_dropped;
	int infra_error; /* the sandbox failed, not the program */
	char infra_msg[256];
	/* Added by the sandbox owner: */
	int oom_killed; /* the cgroup's OOM killer killed a process of the run */
	int mem_at_limit; /* the run reached its own memory limit (reclaimed) */
	unsigned active; /* KB_SANDBOX_* bits: what was enforced for this run */
};

/* Isolation features (bits of kb_sandbox_caps.features and result.active). */
enum {
	KB_SANDBOX_NS =
		1u
		<< 0, /* own mount, pid, net, ipc, uts namespaces + pivot_root */
	KB_SANDBOX_USERNS = 1u << 1, /* user namespace (used when not root) */
	KB_SANDBOX_UID =
		1u << 2, /* own unprivileged uid/gid per run (root mode) */
	KB_SANDBOX_SECCOMP = 1u << 3,   /* seccomp deny list */
	KB_SANDBOX_CG_PIDS = 1u << 4,   /* cgroup pids.max */
	KB_SANDBOX_CG_MEMORY = 1u << 5, /* cgroup memory limit, no swap */
	KB_SANDBOX_CG_KILL = 1u << 6,   /* cgroup v2 cgroup.kill at the end */
	KB_SANDBOX_NPROC = 1u << 7,     /* RLIMIT_NPROC (per-run uid) */
};

/* What this host supports, found by kb_sandbox_probe(). */
struct kb_sandbox_caps {
	unsigned features;  /* KB_SANDBOX_* usable by isolated runs */
	int isolate_ok;     /* isolate=1 runs can be served */
	char mode[16];      /* "root", "userns" or "none" */
	char cgroup[32];    /* "v2 <path>", "v1", or "none" */
	char why[256];      /* when !isolate_ok: what is missing */
	char summary[1024]; /* the line that was logged */
};

/* Detects what this host allows (namespaces, user namespaces, pivot_root,
 * seccomp, cgroup v2 delegation or v1 controllers), runs one isolated
 * /bin/true as a trial, and logs one line saying what is active. Runs once
 * per process; later calls return the cached answer. kb_sandbox_run() calls
 * it on its first isolated run, so calling it at startup is optional but
 * recommended (the log line then appears at startup). Environment:
 * KB_SANDBOX_UID_BASE (60000) and KB_SANDBOX_UIDS (1000): the per-run uid
 * range; KB_SANDBOX_CGROUP: a delegated cgroup v2 directory to use;
 * KB_SANDBOX_RO_PATHS: extra read-only paths. Returns 0 (caps filled, even
 * when isolate_ok is 0) or a negative errno when caps is NULL. Not
 * thread-safe (call before starting runs). */
int kb_sandbox_probe(struct kb_sandbox_caps *caps, char *errstr,
		     size_t errstr_size);

/* Runs the command to completion. Returns 0 when the command ran (however it
 * ended: see *r), or a negative code when the sandbox could not be set up, in
 * which case r->infra_error is 1 and errstr says why. Free r with
 * kb_sandbox_result_clear() in both cases. */
int kb_sandbox_run(const struct kb_sandbox_opts *o, struct kb_sandbox_result *r,
		   char *errstr, size_t errstr_size);

void kb_sandbox_result_clear(struct kb_sandbox_result *r);

#endif
