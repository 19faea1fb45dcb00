/* sandbox_internal: what kb_sandbox.c shares with its helper files.
 *
 * kb_sandbox.c (parent side) prepares a struct kb__sb_plan with everything the
 * child needs — resolved paths, generated /etc files, the compiled seccomp
 * program, rlimit values — because the child is created with a raw clone(2)
 * from a possibly multi-threaded worker: it must not call malloc or anything
 * that takes a lock, only system calls and the string helpers below.
 *
 * Not a public interface; everything here is prefixed kb__sb_ and used only by
 * worker/sandbox/.
 */
#ifndef KB_SANDBOX_INTERNAL_H
#define KB_SANDBOX_INTERNAL_H

#include <stddef.h>
#include <sys/types.h>

struct sock_filter;
struct kb_sandbox_caps;
struct kb_sandbox_opts;

/* Child → parent control record (fits in PIPE_BUF, so writes are atomic). */
enum { SB_MSG_ERR = 1, SB_MSG_STATUS = 2 };
struct kb__sb_msg {
	int kind;
	int value; /* errno for SB_MSG_ERR, wait status for SB_MSG_STATUS */
	char text[200];
};

#define SB_MAX_BINDS 64
#define SB_PATH 4096

enum kb__sb_bind_kind {
	SB_BIND_RO,  /* read-only, nosuid, nodev */
	SB_BIND_RW,  /* read-write, nosuid, nodev (the workdir) */
	SB_BIND_DEV, /* a device node or directory of them: rw, nosuid, noexec */
};

struct kb__sb_bind {
	const char *src; /* host path (absolute) */
	const char *dst; /* path inside the new root (absolute) */
	int kind;        /* enum kb__sb_bind_kind */
	int optional;    /* a missing source is skipped rather than an error */
};

struct kb__sb_plan {
	/* Common. */
	char *const *argv;
	char *const *env;
	const char *workdir; /* realpath */
	const char *cwd; /* where the program starts: workdir or below a bind */
	char *const *rw; /* realpaths of the extra writable binds, or NULL */
	int want_report;
	int fd_out, fd_err, fd_report, fd_ctl, fd_sync; /* child ends */
	int fd_go; /* a held run's go socket (becomes fd 4), or -1 */
	pid_t parent_pid;
	unsigned long cpu_s, fsize, nofile, nproc; /* nproc 0 = leave alone */

	/* Isolation (isolate = 1). */
	int isolate;
	int userns; /* CLONE_NEWUSER; the parent writes the id maps */
	uid_t uid;  /* run uid/gid (inside the user namespace in userns mode) */
	gid_t gid;
	const struct sock_filter *bpf, *bpf2; /* two stacked filters */
	unsigned short bpf_len, bpf2_len;
	int spec_allow; /* SECCOMP_FILTER_FLAG_SPEC_ALLOW supported */
	struct kb__sb_bind
		binds[SB_MAX_BINDS]; /* in order; sources via /oldroot */
	int nbinds;
	char etc_passwd[512], etc_group[256];
	char tmp_opts[64],
		shm_opts[64]; /* tmpfs options of /tmp and /dev/shm */
	char arena[16384];    /* storage for the strings the binds point to */
	size_t arena_used;
};

/* Child entry (never returns). In isolate mode it is the new PID
 * namespace's init. */
__attribute__((noreturn)) void kb__sb_child_main(const struct kb__sb_plan *p);

/* Builds the new root and pivots into it (child side, malloc-free).
 * Returns 0 or -errno with a message in msg. */
int kb__sb_mount_setup(const struct kb__sb_plan *p, char *msg, size_t msg_size);

/* Async-signal-safe string helpers (sandbox_str.c). */
size_t kb__sb_strlcpy(char *dst, const char *src, size_t n);
size_t kb__sb_strlcat(char *dst, const char *src, size_t n);
void kb__sb_fmt_err(char *msg, size_t n, const char *what, const char *arg,
		    int err);

/* Seccomp (parent side): compiles the filter once. Returns 0 or -errno. */
int kb__sb_seccomp_program(const struct sock_filter **prog, unsigned short *len,
			   char *errstr, size_t errstr_size);

/* The second, hand-written filter (personality arguments). */
const struct sock_filter *kb__sb_seccomp_second(unsigned short *len);

/* Probe (parent side, sandbox_probe.c): what the host allows, found
 * without a run. kb__sb_probe_host() fills c's mode, features, cgroup and why
 * (empty when a trial run may decide) and h; kb__sb_probe_summary() writes
 * c->summary from both and logs it (info when isolation is available, else
 * a warning). kb_sandbox_probe() (kb_sandbox.c) runs the trial between. */
struct kb__sb_host {
	int ns_rc, userns_rc; /* try_clone() without and with CLONE_NEWUSER */
	unsigned cgf;         /* KB_SANDBOX_CG_* the cgroup setup offers */
	char cg[300];         /* its description */
};
void kb__sb_probe_host(struct kb_sandbox_caps *c, struct kb__sb_host *h);
void kb__sb_probe_summary(struct kb_sandbox_caps *c,
			  const struct kb__sb_host *h);

/* Isolation (parent side, sandbox_isolate.c). Plans an isolated run into p
 * (p->userns set by the caller from the probe): binds, /etc files, seccomp,
 * a uid slot (its lock in *slot_fd). Returns 0 or -errno with errstr set. */
int kb__sb_isolate_prepare(const struct kb_sandbox_opts *o,
			   struct kb__sb_plan *p, int *slot_fd, char *errstr,
			   size_t errstr_size);
/* Recursive lchown of workdir to uid/gid that follows no link and crosses
 * no mount (before: the hand-over before the run, logged when entries
 * fail). Only workdir itself must succeed. Returns 0 or -errno. */
int kb__sb_isolate_chown(const char *workdir, uid_t uid, gid_t gid, int before);
/* Writes the child's uid/gid maps (user namespace mode). Returns 0 or
 * -errno with errstr set. */
int kb__sb_isolate_write_idmaps(pid_t pid, const struct kb__sb_plan *p,
				char *errstr, size_t errstr_size);

/* Cgroups (parent side). */
struct kb__sb_cgroup {
	int version;          /* 0 none, 1 or 2 */
	char dir[SB_PATH];    /* v2: the run's cgroup; v1: pids controller's */
	char memdir[SB_PATH]; /* v1: memory controller's run cgroup */
	unsigned active;      /* KB_SANDBOX_CG_* that took effect */
};
/* Detects the cgroup setup once (logs nothing); fills a description. */
int kb__sb_cgroup_init(char *desc, size_t desc_size, unsigned *features);
/* Creates the run's cgroup with the limits (memory_mb 0 = none). Fills cg;
 * cg->version 0 when cgroups are unavailable (not an error). Returns 0 or
 * -errno when cgroups exist but the run's cgroup could not be made. */
int kb__sb_cgroup_create(struct kb__sb_cgroup *cg, const char *name,
			 long memory_mb, int max_procs, char *errstr,
			 size_t errstr_size);
int kb__sb_cgroup_attach(const struct kb__sb_cgroup *cg, pid_t pid);
void kb__sb_cgroup_kill(const struct kb__sb_cgroup *cg);
int kb__sb_cgroup_oom_kills(const struct kb__sb_cgroup *cg);
/* 1 when the run's group reached its own memory limit at least once (it
 * reclaimed its own pages: pressure it caused). */
int kb__sb_cgroup_mem_at_limit(const struct kb__sb_cgroup *cg);
/* CPU time (s) the run's live processes used so far: the cgroup's own
 * count (v2), else the sum over its processes (or the leader alone
 * without a cgroup) of their and their reaped children's times. For a run
 * about to be killed, whose processes nobody will reap to count them. */
double kb__sb_cgroup_cpu_s(const struct kb__sb_cgroup *cg, pid_t leader);
void kb__sb_cgroup_destroy(struct kb__sb_cgroup *cg);

#endif
