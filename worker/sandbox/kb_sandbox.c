/* kb_sandbox: runs one untrusted command and reports how it ended.
 *
 * Theory of operation
 * -------------------
 * The parent (this file) prepares everything the child will need in a
 * struct kb__sb_plan — the child is made with a raw clone(2) of a worker that
 * has librdkafka threads, so it may not allocate (sandbox_child.c). The
 * child waits on a sync socket until the parent has put it into the run's
 * cgroup and (in user-namespace mode) written its id maps, then sets itself
 * up and execs. Setup failures come back as SB_MSG_ERR records on a
 * close-on-exec control pipe: those are infra errors, never the program's.
 *
 * The parent then polls stdout, stderr, the report pipe, the control pipe
 * and a pidfd of the child, keeping up to the limits and counting the rest,
 * until the child exits or the wall-clock deadline passes. Either way the
 * whole run is then killed: the process group (SIGKILL), the cgroup
 * (cgroup.kill or each member), and with isolation the PID namespace, whose
 * init's death takes every process of the run with it (daemons included).
 * The pipes are drained to EOF (bounded), the child reaped, the cgroup and
 * the uid slot released.
 *
 * With isolation the child is the init of new mount, PID, network, IPC and
 * UTS namespaces; it builds a new root (read-only system directories, a
 * minimal /etc, private /tmp and /dev, its own /proc, the workdir
 * read-write at its own path), pivots into it, and starts the program as an
 * unprivileged per-run uid under a seccomp deny list (sandbox_mount.c,
 * sandbox_seccomp.c). kb_sandbox_probe() (below, with sandbox_probe.c)
 * decides once whether this host can do that, by a trial run; if not,
 * isolated runs fail as infra errors rather than run unisolated.
 */
#include "kb_sandbox.h"
#include "sandbox_internal.h"

#include "kb_log.h"
#include "kb_util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_OUTPUT_LIMIT (64u * 1024)
#define DEFAULT_REPORT_LIMIT (1024u * 1024)
#define DEFAULT_MAX_PROCS 256
#define FSIZE_LIMIT (256ul << 20)
#define NOFILE_LIMIT 256
#define DRAIN_GRACE_S 2.0 /* after the kill, how long to wait for pipe EOF */
#define SB_MAX_RW 4       /* rw_paths per run */

struct stream {
	int fd;
	char *buf;
	size_t len, cap, limit, dropped;
};

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void set_err(struct kb_sandbox_result *r, char *errstr,
		    size_t errstr_size, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void set_err(struct kb_sandbox_result *r, char *errstr,
		    size_t errstr_size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->infra_msg, sizeof(r->infra_msg), fmt, ap);
	va_end(ap);
	r->infra_error = 1;
	if (errstr && errstr_size)
		snprintf(errstr, errstr_size, "%s", r->infra_msg);
}

/* Reads what is available; keeps up to the limit and counts the rest.
 * Returns -ENOMEM if the buffer could not grow, else 0. */
static int stream_read(struct stream *s)
{
	char chunk[65536];

	/* At most 1 MiB per call, so that a flood on one stream cannot keep
	 * the loop from the others or from the deadline. */
	for (int i = 0; i < 16; i++) {
		ssize_t n = read(s->fd, chunk, sizeof(chunk));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				kb_close_fd(
					&s->fd); /* EIO etc.: treat as EOF */
			return 0;
		}
		if (n == 0) {
			kb_close_fd(&s->fd);
			return 0;
		}
		size_t room = s->limit - s->len;
		size_t keep = (size_t)n < room ? (size_t)n : room;
		if (keep) {
			if (s->len + keep + 1 > s->cap) {
				size_t cap = s->cap ? s->cap : 4096;
				while (cap < s->len + keep + 1)
					cap *= 2;
				if (cap > s->limit + 1)
					cap = s->limit + 1;
				char *nb = realloc(s->buf, cap);
				if (!nb)
					return -ENOMEM;
				s->buf = nb;
				s->cap = cap;
			}
			memcpy(s->buf + s->len, chunk, keep);
			s->len += keep;
		}
		s->dropped += (size_t)n - keep;
		if ((size_t)n < sizeof(chunk))
			return 0;
	}
	return 0;
}

/* Hands the stream's bytes to the result as a NUL-terminated string. */
static int stream_take(struct stream *s, char **out, size_t *len,
		       size_t *dropped)
{
	if (!s->buf && !(s->buf = malloc(1)))
		return -ENOMEM;
	s->buf[s->len] = '\0';
	*out = s->buf;
	*len = s->len;
	*dropped = s->dropped;
	s->buf = NULL;
	return 0;
}

static int make_pipe(int fds[2], int nonblock_read)
{
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	if (nonblock_read && fcntl(fds[0], F_SETFL, O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

static int pidfd_open_(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	errno = ENOSYS;
	return -1;
#endif
}

/* Kills every process of the run that is still there. */
static void kill_run(pid_t pid, const struct kb__sb_cgroup *cg)
{
	if (pid > 0) {
		kill(-pid,
		     SIGKILL); /* the group (the leader is not yet reaped) */
		kill(pid, SIGKILL); /* in case it had not reached setsid() */
	}
	if (cg && cg->version)
		kb__sb_cgroup_kill(cg);
}

/* Everything one run needs in the parent; released by run_cleanup(). */
struct run {
	struct kb__sb_plan plan;
	struct stream out, err, rep;
	int ctl_r, sync_w, pidfd;
	int child_fds[5];
	pid_t pid;
	struct kb__sb_cgroup cg;
	int slot_fd;
	char workdir[PATH_MAX], cwd[PATH_MAX];
	char rw[SB_MAX_RW][PATH_MAX];
	char *rwv[SB_MAX_RW + 1];
	/* The directories handed to the run's uid, with their owners before
	 * the run (root mode), given back by run_cleanup(). */
	struct handed {
		const char *path;
		uid_t uid;
		gid_t gid;
	} handed[SB_MAX_RW + 1];
	int nhanded;
	/* What the run told us: the start (a held run's release), the
	 * wall-clock limit from then, the control pipe's records, the
	 * leader's wait status. */
	double t0, limit_s;
	int released;
	int have_err_msg, have_status, prog_status;
	int wst;
};

void kb_sandbox_result_clear(struct kb_sandbox_result *r)
{
	if (!r)
		return;
	free(r->out);
	free(r->err);
	free(r->report);
	memset(r, 0, sizeof(*r));
}

/* Fills in the status fields from a wait status. */
static void set_status(struct kb_sandbox_result *r, int st)
{
	if (WIFEXITED(st)) {
		r->exited = 1;
		r->exit_code = WEXITSTATUS(st);
	} else if (WIFSIGNALED(st)) {
		r->signaled = 1;
		r->signal = WTERMSIG(st);
	}
}

static void probe_cached(struct kb_sandbox_caps *caps);

/* Taken while a run is set up (uid slot, cgroup, seccomp program,
 * the hand-over of its directories, the clone) and while its directories
 * are given back: the static state of those steps is shared by runs in
 * other threads. */
static pthread_mutex_t setup_lock = PTHREAD_MUTEX_INITIALIZER;

static void run_cleanup(struct run *x)
{
	kb_close_fd(&x->out.fd);
	kb_close_fd(&x->err.fd);
	kb_close_fd(&x->rep.fd);
	kb_close_fd(&x->ctl_r);
	kb_close_fd(&x->sync_w);
	kb_close_fd(&x->pidfd);
	for (int i = 0; i < 5; i++)
		kb_close_fd(&x->child_fds[i]);
	free(x->out.buf);
	free(x->err.buf);
	free(x->rep.buf);
	x->out.buf = x->err.buf = x->rep.buf = NULL;
	if (x->cg.version)
		kb__sb_cgroup_destroy(&x->cg);
	pthread_mutex_lock(&setup_lock);
	while (x->nhanded > 0) {
		const struct handed *h = &x->handed[--x->nhanded];

		kb__sb_isolate_chown(h->path, h->uid, h->gid, 0);
	}
	pthread_mutex_unlock(&setup_lock);
	kb_close_fd(&x->slot_fd); /* releases the uid slot */
}

/* Resolves the workdir, the cwd and the rw paths into x. Returns 0, or a
 * negative errno with the infra error set. */
static int resolve_paths(const struct kb_sandbox_opts *o, struct run *x,
			 struct kb_sandbox_result *r, char *errstr,
			 size_t errstr_size)
{
	const char *cwd = o->cwd ? o->cwd : o->workdir;
	int n = 0;

	if (!realpath(o->workdir, x->workdir)) {
		int e = errno;
		set_err(r, errstr, errstr_size, "sandbox: workdir %s: %s",
			o->workdir, strerror(e));
		return -e;
	}
	if (!realpath(cwd, x->cwd)) {
		int e = errno;
		set_err(r, errstr, errstr_size, "sandbox: cwd %s: %s", cwd,
			strerror(e));
		return -e;
	}
	for (char *const *s = o->rw_paths; s && *s; s++) {
		if (n == SB_MAX_RW) {
			set_err(r, errstr, errstr_size,
				"sandbox: more than %d rw_paths", SB_MAX_RW);
			return -E2BIG;
		}
		if (!realpath(*s, x->rw[n])) {
			int e = errno;
			set_err(r, errstr, errstr_size, "sandbox: %s: %s", *s,
				strerror(e));
			return -e;
		}
		x->rwv[n] = x->rw[n];
		n++;
	}
	x->rwv[n] = NULL;
	return 0;
}

/* Hands path (a directory, never a link) to the run's uid, remembering its
 * owner for run_cleanup(). Returns 0 or a negative errno with the infra
 * error set. */
static int hand_over(struct run *x, const char *path,
		     struct kb_sandbox_result *r, char *errstr,
		     size_t errstr_size)
{
	struct handed *h = &x->handed[x->nhanded];
	struct stat st;

	if (lstat(path, &st) < 0) {
		int e = errno;
		set_err(r, errstr, errstr_size, "sandbox: %s: %s", path,
			strerror(e));
		return -e;
	}
	if (!S_ISDIR(st.st_mode)) {
		set_err(r, errstr, errstr_size,
			"sandbox: %s is not a directory", path);
		return -ENOTDIR;
	}
	h->path = path;
	h->uid = st.st_uid;
	h->gid = st.st_gid;
	x->nhanded++; /* from here on, undo whatever part was done */
	if (kb__sb_isolate_chown(path, x->plan.uid, x->plan.gid, 1) < 0) {
		int e = errno;
		set_err(r, errstr, errstr_size, "sandbox: chown %s: %s", path,
			strerror(e));
		return -e;
	}
	return 0;
}

/* Plans the run into x (limits, isolation, the run's uid, the cgroup) and
 * makes its pipes. Returns 0, or a negative errno with the infra error set;
 * what was made is released by run_fail(). */
static int run_prepare(const struct kb_sandbox_opts *o, struct run *x,
		       const struct kb_sandbox_caps *caps,
		       struct kb_sandbox_result *r, char *errstr,
		       size_t errstr_size)
{
	static unsigned long counter;
	int p_out[2] = {-1, -1}, p_err[2] = {-1, -1}, p_rep[2] = {-1, -1};
	int p_ctl[2] = {-1, -1}, p_sync[2] = {-1, -1};
	char eb[256] = "";
	int rc;

	struct kb__sb_plan *p = &x->plan;
	p->argv = o->argv;
	p->env = o->env;
	p->workdir = x->workdir;
	p->cwd = x->cwd;
	p->rw = x->rwv;
	p->want_report = !!o->want_report;
	p->fd_go = o->held ? o->go_fd : -1;
	p->parent_pid = getpid();
	double cpu = o->cpu_timeout_s > 0 ? o->cpu_timeout_s
					  : o->wall_timeout_s;
	p->cpu_s = (unsigned long)ceil(cpu);
	if (p->cpu_s < 1)
		p->cpu_s = 1;
	p->fsize = FSIZE_LIMIT;
	p->nofile = NOFILE_LIMIT;
	int max_procs = o->max_processes > 0 ? o->max_processes
					     : DEFAULT_MAX_PROCS;

	x->out.limit = x->err.limit = o->output_limit ? o->output_limit
						      : DEFAULT_OUTPUT_LIMIT;
	x->rep.limit = o->report_limit ? o->report_limit : DEFAULT_REPORT_LIMIT;

	if (o->isolate) {
		p->userns = !!(caps->features & KB_SANDBOX_USERNS);
		rc = kb__sb_isolate_prepare(o, p, &x->slot_fd, eb, sizeof(eb));
		if (rc < 0) {
			set_err(r, errstr, errstr_size, "%s", eb);
			return rc;
		}
		p->nproc = (caps->features & KB_SANDBOX_NPROC)
				   ? (unsigned long)max_procs
				   : 0;
		r->active |= KB_SANDBOX_NS | (p->bpf ? KB_SANDBOX_SECCOMP : 0) |
			     (p->userns ? KB_SANDBOX_USERNS : KB_SANDBOX_UID) |
			     (p->nproc ? KB_SANDBOX_NPROC : 0);
		/* Hand the writable directories to the run's uid for the run
		 * (in user namespace mode the run's uid is ours: nothing to
		 * do). After the run the same walk gives them back and strips
		 * set-id bits. */
		if (!p->userns) {
			if ((rc = hand_over(x, x->workdir, r, errstr,
					    errstr_size)) < 0)
				return rc;
			for (int i = 0; x->rwv[i]; i++)
				if ((rc = hand_over(x, x->rwv[i], r, errstr,
						    errstr_size)) < 0)
					return rc;
		}
	}

	char cgname[64];
	snprintf(cgname, sizeof(cgname), "run-%ld-%lu", (long)getpid(),
		 ++counter);
	rc = kb__sb_cgroup_create(&x->cg, cgname, o->memory_limit_mb, max_procs,
				  eb, sizeof(eb));
	if (rc < 0) {
		set_err(r, errstr, errstr_size, "%s", eb);
		return rc;
	}
	r->active |= x->cg.active;
	if (o->memory_limit_mb > 0 && !(x->cg.active & KB_SANDBOX_CG_MEMORY)) {
		static int warned;
		if (!warned++)
			kb_warn("sandbox: memory_limit_mb=%ld requested but no memory cgroup is "
				"available: memory is not limited",
				o->memory_limit_mb);
	}

	if ((rc = make_pipe(p_out, 1)) < 0 || (rc = make_pipe(p_err, 1)) < 0 ||
	    (p->want_report && (rc = make_pipe(p_rep, 1)) < 0) ||
	    (rc = make_pipe(p_ctl, 1)) < 0 ||
	    /* A socket, so that the "go" byte can be sent with MSG_NOSIGNAL:
	     * a child that died early must not SIGPIPE the worker. */
	    (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p_sync) < 0 &&
	     (rc = -errno))) {
		set_err(r, errstr, errstr_size, "sandbox: pipe: %s",
			strerror(-rc));
		for (int i = 0; i < 2; i++) {
			kb_close_fd(&p_out[i]);
			kb_close_fd(&p_err[i]);
			kb_close_fd(&p_rep[i]);
			kb_close_fd(&p_ctl[i]);
			kb_close_fd(&p_sync[i]);
		}
		return rc;
	}
	x->out.fd = p_out[0];
	x->err.fd = p_err[0];
	x->rep.fd = p_rep[0];
	x->ctl_r = p_ctl[0];
	x->sync_w = p_sync[1];
	x->child_fds[0] = p->fd_out = p_out[1];
	x->child_fds[1] = p->fd_err = p_err[1];
	x->child_fds[2] = p->fd_report = p_rep[1];
	x->child_fds[3] = p->fd_ctl = p_ctl[1];
	x->child_fds[4] = p->fd_sync = p_sync[0];
	return 0;
}

/* Clones the child, puts it into the run's cgroup, writes its id maps (user
 * namespace mode) and lets it go. Returns 0, or a negative errno with the
 * infra error set; x->pid > 0 then says a child must be killed. */
static int run_spawn(struct run *x, struct kb_sandbox_result *r, char *errstr,
		     size_t errstr_size)
{
	struct kb__sb_plan *p = &x->plan;
	char eb[256] = "";
	int rc;

	unsigned long flags = 0;
	if (p->isolate)
		flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET |
			CLONE_NEWIPC | CLONE_NEWUTS |
			(p->userns ? CLONE_NEWUSER : 0);
	x->t0 = mono_s();
	/* A raw clone rather than fork(): see sandbox_child.c. */
	x->pid =
		(pid_t)syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, 0);
	if (x->pid < 0) {
		rc = -errno;
		set_err(r, errstr, errstr_size, "sandbox: clone: %s",
			strerror(errno));
		return rc;
	}
	if (x->pid == 0)
		kb__sb_child_main(p);

	for (int i = 0; i < 5; i++)
		kb_close_fd(&x->child_fds[i]);
	x->pidfd = pidfd_open_(x->pid);

	/* Put the child where it belongs, then let it go. */
	if (x->cg.version && (rc = kb__sb_cgroup_attach(&x->cg, x->pid)) < 0) {
		set_err(r, errstr, errstr_size, "sandbox: cgroup attach: %s",
			strerror(-rc));
		return rc;
	}
	if (p->userns &&
	    (rc = kb__sb_isolate_write_idmaps(x->pid, p, eb, sizeof(eb))) < 0) {
		set_err(r, errstr, errstr_size, "%s", eb);
		return rc;
	}
	if (send(x->sync_w, "g", 1, MSG_NOSIGNAL) != 1) {
		rc = -errno;
		set_err(r, errstr, errstr_size, "sandbox: sync: %s",
			strerror(errno));
		return rc;
	}
	kb_close_fd(&x->sync_w);
	return 0;
}

/* Reads one record of the control pipe (readable): the child's setup error,
 * which becomes the infra error, or the program's wait status. Closes the
 * pipe at its end. */
static void run_read_ctl(struct run *x, struct kb_sandbox_result *r)
{
	struct kb__sb_msg msg;
	ssize_t k = read(x->ctl_r, &msg, sizeof(msg));

	if (k == (ssize_t)sizeof(msg)) {
		if (msg.kind == SB_MSG_ERR && !x->have_err_msg) {
			x->have_err_msg = 1;
			msg.text[sizeof(msg.text) - 1] = '\0';
			set_err(r, NULL, 0, "sandbox setup: %s", msg.text);
		} else if (msg.kind == SB_MSG_STATUS) {
			x->have_status = 1;
			x->prog_status = msg.value;
		}
	} else if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) {
		kb_close_fd(&x->ctl_r);
	}
}

/* Fills pf/ps with the open streams and, if open, the control pipe
 * (ps[i] NULL); returns how many. */
static int run_poll_set(struct run *x, struct pollfd *pf, struct stream **ps)
{
	struct stream *all[3] = {&x->out, &x->err, &x->rep};
	int n = 0;

	for (int i = 0; i < 3; i++)
		if (all[i]->fd >= 0) {
			pf[n] = (struct pollfd){all[i]->fd, POLLIN, 0};
			ps[n++] = all[i];
		}
	if (x->ctl_r >= 0) {
		pf[n] = (struct pollfd){x->ctl_r, POLLIN, 0};
		ps[n++] = NULL;
	}
	return n;
}

/* A held run's release (release_fd readable): the wall-clock limit, in
 * milliseconds, counts from now. */
static void run_release(const struct kb_sandbox_opts *o, struct run *x,
			struct kb_sandbox_result *r)
{
	uint64_t ms = 0;

	if (read(o->release_fd, &ms, sizeof(ms)) != (ssize_t)sizeof(ms) ||
	    ms == 0)
		return; /* not an eventfd's value: keep holding */
	x->released = r->released = 1;
	x->t0 = mono_s();
	x->limit_s = (double)ms / 1000.0;
}

/* The poll loop: keeps the child's output until the child exits or the
 * deadline passes (r->timed_out). Returns 0, or a negative errno with the
 * infra error set (the child must then be killed). */
static int run_supervise(const struct kb_sandbox_opts *o, struct run *x,
			 struct kb_sandbox_result *r, char *errstr,
			 size_t errstr_size)
{
	for (;;) {
		struct pollfd pf[6];
		struct stream *ps[6];
		int n = run_poll_set(x, pf, ps);
		int ctl_i = x->ctl_r >= 0 ? n - 1 : -1, pid_i = -1, rel_i = -1;
		if (x->pidfd >= 0) {
			pid_i = n;
			pf[n] = (struct pollfd){x->pidfd, POLLIN, 0};
			ps[n++] = NULL;
		}
		if (o->held && !x->released) {
			rel_i = n;
			pf[n] = (struct pollfd){o->release_fd, POLLIN, 0};
			ps[n++] = NULL;
		}
		double now = mono_s();
		double deadline = x->t0 + x->limit_s;
		if (now >= deadline) {
			/* One last look: a child that exited in time is no timeout. */
			siginfo_t si;
			memset(&si, 0, sizeof(si));
			if (!x->have_status &&
			    (waitid(P_PID, (id_t)x->pid, &si,
				    WEXITED | WNOHANG | WNOWAIT | __WALL) < 0 ||
			     si.si_pid != x->pid))
				r->timed_out = 1;
			return 0;
		}
		int ms = (int)ceil((deadline - now) * 1000.0);
		if (x->pidfd < 0 && ms > 10)
			ms = 10; /* no pidfd (kernel < 5.3): poll for the exit */
		int pr = poll(pf, (nfds_t)n, ms);
		if (pr < 0 && errno != EINTR) {
			int rc = -errno;
			set_err(r, errstr, errstr_size, "sandbox: poll: %s",
				strerror(errno));
			return rc;
		}
		for (int i = 0; pr > 0 && i < n; i++) {
			if (!pf[i].revents)
				continue;
			if (ps[i]) {
				if (stream_read(ps[i]) < 0) {
					set_err(r, errstr, errstr_size,
						"sandbox: out of memory");
					return -ENOMEM;
				}
			} else if (i == ctl_i) {
				run_read_ctl(x, r);
			} else if (i == rel_i) {
				run_release(o, x, r);
			}
		}
		if (pid_i >= 0 ? (pr > 0 && pf[pid_i].revents) : 1) {
			/* Exited (or, without a pidfd, maybe): kill the rest while
			 * the leader still holds its pid, then reap it. */
			siginfo_t si;
			memset(&si, 0, sizeof(si));
			if (waitid(P_PID, (id_t)x->pid, &si,
				   WEXITED | WNOHANG | WNOWAIT | __WALL) == 0 &&
			    si.si_pid == x->pid)
				return 0;
		}
	}
}

/* Kills whatever is left of the run, reaps the leader (x->wst) and drains
 * the pipes: everything that wrote to them is dead, unless a process
 * escaped the group without a cgroup or namespace to catch it; those get
 * DRAIN_GRACE_S, then we stop listening. Returns 0, or -ENOMEM with the
 * infra error set. */
static int run_reap(const struct kb_sandbox_opts *o, struct run *x,
		    struct kb_sandbox_result *r, char *errstr,
		    size_t errstr_size)
{
	struct rusage ru;
	/* Counted before the kill: killed together, the processes under the
	 * leader are never reaped into its usage. */
	double live_cpu_s = r->timed_out ? kb__sb_cgroup_cpu_s(&x->cg, x->pid)
					 : 0;

	memset(&ru, 0, sizeof(ru));
	kill_run(x->pid, &x->cg);
	while (wait4(x->pid, &x->wst, __WALL, &ru) < 0 && errno == EINTR)
		;
	r->wall_s = mono_s() - x->t0;
	if (r->timed_out && r->wall_s < x->limit_s)
		r->wall_s = x->limit_s;
	r->cpu_s =
		(double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
		(double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	if (live_cpu_s > r->cpu_s)
		r->cpu_s = live_cpu_s;
	r->max_rss_kb = ru.ru_maxrss;

	double drain_end = mono_s() + DRAIN_GRACE_S;
	for (;;) {
		struct pollfd pf[4];
		struct stream *ps[4];
		int n = run_poll_set(x, pf, ps);
		if (n == 0)
			return 0;
		double now = mono_s();
		if (now >= drain_end) {
			kb_warn("sandbox: pipes still open %.1fs after the run ended: "
				"a process escaped the kill",
				DRAIN_GRACE_S);
			return 0;
		}
		int pr = poll(pf, (nfds_t)n,
			      (int)ceil((drain_end - now) * 1000.0));
		for (int i = 0; pr > 0 && i < n; i++) {
			if (!pf[i].revents)
				continue;
			if (!ps[i]) {
				run_read_ctl(x, r);
			} else if (stream_read(ps[i]) < 0) {
				set_err(r, errstr, errstr_size,
					"sandbox: out of memory");
				return -ENOMEM;
			}
		}
	}
}

/* Fills r's status (the program's, not init's, with isolation) and hands it
 * the captured output. Returns 0, or a negative errno with the infra error
 * set. */
static int run_collect(const struct kb_sandbox_opts *o, struct run *x,
		       struct kb_sandbox_result *r, char *errstr,
		       size_t errstr_size)
{
	const struct kb__sb_plan *p = &x->plan;

	if (x->cg.version)
		r->oom_killed = kb__sb_cgroup_oom_kills(&x->cg) > 0;
	if (x->cg.version)
		r->mem_at_limit = kb__sb_cgroup_mem_at_limit(&x->cg);

	if (x->have_err_msg) {
		if (errstr && errstr_size)
			snprintf(errstr, errstr_size, "%s", r->infra_msg);
		return -ECHILD;
	}
	if (r->timed_out) {
		/* Our kill, not the program's signal. */
	} else if (p->isolate) {
		if (x->have_status)
			set_status(r, x->prog_status);
		else if (WIFSIGNALED(x->wst))
			set_status(
				r,
				x->wst); /* init killed (e.g. by the OOM killer) */
		else {
			set_err(r, errstr, errstr_size,
				"sandbox: init exited (status %d) without the program's status",
				x->wst);
			return -ECHILD;
		}
	} else {
		set_status(r, x->wst);
	}

	if (stream_take(&x->out, &r->out, &r->out_len, &r->out_dropped) < 0 ||
	    stream_take(&x->err, &r->err, &r->err_len, &r->err_dropped) < 0 ||
	    stream_take(&x->rep, &r->report, &r->report_len,
			&r->report_dropped) < 0) {
		set_err(r, errstr, errstr_size, "sandbox: out of memory");
		return -ENOMEM;
	}
	kb_debug(
		"sandbox: run argv0=%s isolate=%d uid=%u active=0x%x exit=%d signal=%d "
		"timeout=%d oom=%d wall=%.3f cpu=%.3f out=%zu+%zu err=%zu+%zu report=%zu+%zu",
		o->argv[0], p->isolate,
		p->isolate ? (unsigned)p->uid : (unsigned)getuid(), r->active,
		r->exit_code, r->signal, r->timed_out, r->oom_killed, r->wall_s,
		r->cpu_s, r->out_len, r->out_dropped, r->err_len,
		r->err_dropped, r->report_len, r->report_dropped);
	return 0;
}

/* An infra error after the run began: kills and reaps the child if there
 * is one (kill), keeps what was captured (it helps explain the failure)
 * and releases the run. Returns rc, or -EIO when rc is not an error. */
static int run_fail(struct run *x, struct kb_sandbox_result *r, int rc,
		    int kill)
{
	if (kill) {
		kill_run(x->pid, &x->cg);
		while (waitpid(x->pid, NULL, __WALL) < 0 && errno == EINTR)
			;
	}
	stream_take(&x->out, &r->out, &r->out_len, &r->out_dropped);
	stream_take(&x->err, &r->err, &r->err_len, &r->err_dropped);
	stream_take(&x->rep, &r->report, &r->report_len, &r->report_dropped);
	r->infra_error = 1;
	r->exited = r->signaled = r->timed_out = 0;
	run_cleanup(x);
	return rc < 0 ? rc : -EIO;
}

int kb_sandbox_run(const struct kb_sandbox_opts *o, struct kb_sandbox_result *r,
		   char *errstr, size_t errstr_size)
{
	struct kb_sandbox_caps caps;
	struct run x;
	int rc;

	if (!r)
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	memset(&x, 0, sizeof(x));
	memset(&caps, 0, sizeof(caps));
	x.out.fd = x.err.fd = x.rep.fd = x.ctl_r = x.sync_w = x.pidfd =
		x.slot_fd = -1;
	for (int i = 0; i < 5; i++)
		x.child_fds[i] = -1;
	x.pid = -1;

	if (!o || !o->workdir || !o->argv || !o->argv[0] || !o->argv[0][0] ||
	    !o->env ||
	    !(o->held ? o->hold_timeout_s > 0 && o->want_report &&
				o->go_fd >= 0 && o->release_fd >= 0
		      : o->wall_timeout_s > 0)) {
		set_err(r, errstr, errstr_size, "sandbox: bad options");
		return -EINVAL;
	}
	x.limit_s = o->held ? o->hold_timeout_s : o->wall_timeout_s;
	if ((rc = resolve_paths(o, &x, r, errstr, errstr_size)) < 0)
		return rc;
	if (o->isolate) {
		/* Outside the lock: the first probe makes a trial run. */
		probe_cached(&caps);
		if (!caps.isolate_ok) {
			set_err(r, errstr, errstr_size,
				"sandbox: isolation unavailable on this host: %s",
				caps.why);
			return -ENOTSUP;
		}
	}
	pthread_mutex_lock(&setup_lock);
	rc = run_prepare(o, &x, &caps, r, errstr, errstr_size);
	if (rc >= 0)
		rc = run_spawn(&x, r, errstr, errstr_size);
	pthread_mutex_unlock(&setup_lock);
	if (rc < 0)
		return run_fail(&x, r, rc, x.pid > 0);
	if ((rc = run_supervise(o, &x, r, errstr, errstr_size)) < 0)
		return run_fail(&x, r, rc, 1);
	if ((rc = run_reap(o, &x, r, errstr, errstr_size)) < 0 ||
	    (rc = run_collect(o, &x, r, errstr, errstr_size)) < 0)
		return run_fail(&x, r, rc, 0);
	run_cleanup(&x);
	return 0;
}

/* ---- the probe: sandbox_probe.c's findings and a trial run ---- */

static struct {
	enum { PROBE_NONE, PROBE_TRIAL, PROBE_DONE } state;
	struct kb_sandbox_caps caps;
} P;

static void trial_run(struct kb_sandbox_caps *c)
{
	char dir[] = "/tmp/kb-sandbox-probe-XXXXXX";
	char *argv[] = {"true", NULL};
	char *env[] = {"PATH=/usr/bin:/bin", NULL};
	struct kb_sandbox_result r;
	char err[200] = "";

	if (!mkdtemp(dir)) {
		snprintf(c->why, sizeof(c->why), "trial run: mkdtemp: %s",
			 strerror(errno));
		return;
	}
	struct kb_sandbox_opts o;
	memset(&o, 0, sizeof(o));
	o.workdir = dir;
	o.argv = argv;
	o.env = env;
	o.wall_timeout_s = 10;
	o.isolate = 1;
	/* Exercise the memory limit only where it exists (else the "not
	 * limited" warning would fire here instead of on a real run). */
	o.memory_limit_mb = (c->features & KB_SANDBOX_CG_MEMORY) ? 64 : 0;
	P.state = PROBE_TRIAL;
	int rc = kb_sandbox_run(&o, &r, err, sizeof(err));
	P.state = PROBE_NONE;
	if (rc < 0)
		snprintf(c->why, sizeof(c->why), "trial run failed: %s", err);
	else if (!r.exited || r.exit_code != 0)
		snprintf(c->why, sizeof(c->why),
			 "trial run of true: exit %d signal %d%s", r.exit_code,
			 r.signal, r.timed_out ? " (timeout)" : "");
	else
		c->isolate_ok = 1;
	kb_sandbox_result_clear(&r);
	rmdir(dir);
}

int kb_sandbox_probe(struct kb_sandbox_caps *caps, char *errstr,
		     size_t errstr_size)
{
	struct kb__sb_host h;

	if (!caps) {
		if (errstr && errstr_size)
			snprintf(errstr, errstr_size,
				 "kb_sandbox_probe: caps is NULL");
		return -EINVAL;
	}
	if (P.state == PROBE_DONE) {
		*caps = P.caps;
		return 0;
	}
	kb__sb_probe_host(&P.caps, &h);
	if (!P.caps.why[0])
		trial_run(&P.caps);
	kb__sb_probe_summary(&P.caps, &h);
	P.state = PROBE_DONE;
	*caps = P.caps;
	return 0;
}

/* For kb_sandbox_run(): the probe's answer, probing first if needed. During
 * the probe's own trial run isolation counts as available. */
static void probe_cached(struct kb_sandbox_caps *caps)
{
	if (P.state == PROBE_TRIAL) {
		*caps = P.caps;
		caps->isolate_ok = 1;
		return;
	}
	kb_sandbox_probe(caps, NULL, 0);
}
