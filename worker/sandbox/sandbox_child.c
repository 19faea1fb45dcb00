/* sandbox_child: the child side of kb_sandbox_run().
 *
 * Runs in a process made by a raw clone(2) of a possibly multi-threaded
 * worker, so it only makes system calls and uses the kb__sb_ string helpers:
 * no malloc, no stdio, no locks. Everything it needs was prepared by the
 * parent in struct kb__sb_plan.
 *
 * Without isolation the clone child is the program itself. With isolation
 * it is the init (PID 1) of a new PID namespace: it builds the new root,
 * brings up loopback, then clones the program (PID 2), waits for it, sends
 * its wait status to the parent over the control pipe and exits — and the
 * kernel kills whatever else is left in the namespace (daemons included).
 */
#include "sandbox_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <signal.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SECCOMP_FILTER_FLAG_SPEC_ALLOW
#define SECCOMP_FILTER_FLAG_SPEC_ALLOW (1UL << 2)
#endif

static void send_msg(int fd, int kind, int value, const char *text)
{
	struct kb__sb_msg m;

	memset(&m, 0, sizeof(m));
	m.kind = kind;
	m.value = value;
	if (text)
		kb__sb_strlcpy(m.text, text, sizeof(m.text));
	while (write(fd, &m, sizeof(m)) < 0 && errno == EINTR)
		;
}

__attribute__((noreturn)) static void
fail(const struct kb__sb_plan *p, const char *what, const char *arg, int err)
{
	char msg[200];

	kb__sb_fmt_err(msg, sizeof(msg), what, arg, err);
	send_msg(p->fd_ctl, SB_MSG_ERR, err, msg);
	_exit(127);
}

static pid_t raw_fork(unsigned long flags)
{
	/* A raw clone: no atfork handlers, no malloc locks (see the top). */
	return (pid_t)syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, 0);
}

static void reset_signals(void)
{
	struct sigaction sa;
	sigset_t all;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (int s = 1; s < _NSIG; s++)
		sigaction(s, &sa,
			  NULL); /* SIGKILL/SIGSTOP and 32/33 fail: fine */
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
}

/* Puts the standard descriptors, the report pipe and a held run's go
 * socket in place, keeps the control pipe (close-on-exec) right after
 * them, and closes the rest. */
static void setup_fds(struct kb__sb_plan *p)
{
	int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int src[5] = {devnull, p->fd_out, p->fd_err,
		      p->want_report ? p->fd_report : -1,
		      p->want_report ? p->fd_go : -1};
	int hi[5], ctl;

	if (devnull < 0)
		fail(p, "open", "/dev/null", errno);
	/* Move everything above 4 first so that dup2 cannot clobber a source
	 * (the worker may have closed 0..2, making a pipe land there). */
	for (int i = 0; i < 5; i++) {
		hi[i] = -1;
		if (src[i] >= 0 &&
		    (hi[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 10)) < 0)
			fail(p, "fcntl", "F_DUPFD", errno);
	}
	if ((ctl = fcntl(p->fd_ctl, F_DUPFD_CLOEXEC, 10)) < 0)
		fail(p, "fcntl", "F_DUPFD", errno);
	p->fd_ctl = ctl;
	int n = !p->want_report ? 3 : hi[4] >= 0 ? 5 : 4;
	for (int i = 0; i < n; i++)
		if (dup2(hi[i], i) < 0) /* dup2 clears close-on-exec */
			fail(p, "dup2", NULL, errno);
	if (dup3(ctl, n, O_CLOEXEC) < 0)
		fail(p, "dup3", NULL, errno);
	p->fd_ctl = n;
	if (syscall(SYS_close_range, (unsigned)n + 1, ~0U, 0) < 0) {
		for (int fd = n + 1; fd < 65536; fd++)
			close(fd);
	}
}

static void set_rlimit(const struct kb__sb_plan *p, int res, const char *name,
		       rlim_t soft, rlim_t hard)
{
	struct rlimit rl = {soft, hard};

	if (setrlimit(res, &rl) < 0)
		fail(p, "setrlimit", name, errno);
}

static void set_rlimits(const struct kb__sb_plan *p)
{
	/* CPU: SIGXCPU at the soft limit, SIGKILL a second later. */
	set_rlimit(p, RLIMIT_CPU, "RLIMIT_CPU", p->cpu_s, p->cpu_s + 1);
	set_rlimit(p, RLIMIT_FSIZE, "RLIMIT_FSIZE", p->fsize, p->fsize);
	set_rlimit(p, RLIMIT_NOFILE, "RLIMIT_NOFILE", p->nofile, p->nofile);
	set_rlimit(p, RLIMIT_CORE, "RLIMIT_CORE", 0, 0);
	if (p->nproc)
		set_rlimit(p, RLIMIT_NPROC, "RLIMIT_NPROC", p->nproc, p->nproc);
}

/* Takes the run's identity: no supplementary groups, the run gid and uid
 * (which drops every capability), an empty bounding set. Raw system calls:
 * glibc's wrappers change the ids of every thread it knows of, and this
 * process is a raw clone of a worker with other threads, whose records
 * it still holds; a thread caught mid-creation or mid-exit in that copy
 * left the wrapper waiting for it forever (seen with a held run's thread
 * beside the run being set up). */
static void drop_identity(const struct kb__sb_plan *p)
{
	for (int c = 0; c <= CAP_LAST_CAP; c++)
		prctl(PR_CAPBSET_DROP, c, 0, 0,
		      0); /* best effort: needs CAP_SETPCAP */
	if (!p->userns && syscall(SYS_setgroups, 0, NULL) < 0)
		fail(p, "setgroups", NULL, errno);
	if (syscall(SYS_setresgid, p->gid, p->gid, p->gid) < 0)
		fail(p, "setresgid", NULL, errno);
	if (syscall(SYS_setresuid, p->uid, p->uid, p->uid) < 0)
		fail(p, "setresuid", NULL, errno);
	if (geteuid() != p->uid || getegid() != p->gid)
		fail(p, "identity check", NULL, EPERM);
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	/* Empty capability sets (setresuid from root already cleared them; in
	 * a user namespace it does not, exec would). */
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof(d));
	if (syscall(SYS_capset, &h, d) < 0)
		fail(p, "capset", NULL, errno);
}

static void load_seccomp(const struct kb__sb_plan *p)
{
	struct sock_fprog prog = {p->bpf_len, (struct sock_filter *)p->bpf};
	unsigned long flags = p->spec_allow ? SECCOMP_FILTER_FLAG_SPEC_ALLOW
					    : 0;

	/* SPEC_ALLOW keeps the kernel from forcing the speculative store bypass
	 * mitigation on a seccomp'd process, which would slow timed code. */
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog) < 0)
		fail(p, "seccomp", NULL, errno);
	if (p->bpf2) {
		struct sock_fprog prog2 = {p->bpf2_len,
					   (struct sock_filter *)p->bpf2};
		if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags,
			    &prog2) < 0)
			fail(p, "seccomp", "(personality filter)", errno);
	}
}

/* execve with PATH lookup in the child's view of the file system (like
 * execvpe, which may allocate). */
__attribute__((noreturn)) static void exec_program(const struct kb__sb_plan *p)
{
	const char *name = p->argv[0];
	const char *path = NULL;
	char buf[SB_PATH];
	int saw_eacces = 0;

	if (strchr(name, '/')) {
		execve(name, p->argv, p->env);
		fail(p, "execve", name, errno);
	}
	for (char *const *e = p->env; *e; e++)
		if (strncmp(*e, "PATH=", 5) == 0)
			path = *e + 5;
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (const char *s = path;; s++) {
		const char *c = strchr(s, ':');
		size_t len = c ? (size_t)(c - s) : strlen(s);
		if (len + strlen(name) + 2 <= sizeof(buf)) {
			memcpy(buf, s, len);
			buf[len] = '\0';
			if (len == 0)
				kb__sb_strlcpy(buf, ".", sizeof(buf));
			kb__sb_strlcat(buf, "/", sizeof(buf));
			kb__sb_strlcat(buf, name, sizeof(buf));
			execve(buf, p->argv, p->env);
			if (errno == EACCES)
				saw_eacces = 1;
			else if (errno != ENOENT && errno != ENOTDIR &&
				 errno != ENAMETOOLONG)
				fail(p, "execve", buf, errno);
		}
		if (!c)
			break;
		s = c;
	}
	fail(p, "execve (not found in PATH)", name,
	     saw_eacces ? EACCES : ENOENT);
}

/* The program's side: descriptors, limits, identity, filter, exec. */
__attribute__((noreturn)) static void program_main(struct kb__sb_plan *p)
{
	reset_signals();
	setup_fds(p);
	umask(022);
	if (chdir(p->cwd) < 0)
		fail(p, "chdir", p->cwd, errno);
	set_rlimits(p);
	if (p->isolate) {
		drop_identity(p);
		if (chdir(p->cwd) < 0) /* again, now as the run uid */
			fail(p, "chdir", p->cwd, errno);
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		fail(p, "prctl", "PR_SET_NO_NEW_PRIVS", errno);
	if (p->isolate && p->bpf)
		load_seccomp(
			p); /* last: from here on mount/ptrace/... are refused */
	exec_program(p);
}

static void loopback_up(const struct kb__sb_plan *p)
{
	struct ifreq ifr;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (s < 0)
		fail(p, "socket", "loopback", errno);
	memset(&ifr, 0, sizeof(ifr));
	kb__sb_strlcpy(ifr.ifr_name, "lo", sizeof(ifr.ifr_name));
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		fail(p, "ioctl", "SIOCGIFFLAGS lo", errno);
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		fail(p, "ioctl", "SIOCSIFFLAGS lo", errno);
	close(s);
}

/* The init is a copy of the worker, so its /proc/1/cmdline (readable by
 * anyone who can see the process) would show the worker's command line,
 * and /proc/1/comm its name. Overwrites the argument and environment areas
 * (addresses from /proc/self/stat, fields 48-51) with zeros and a neutral
 * name; strings the program needs must be copied (forked) first. Best effort: on failure the worker's argv stays visible, which
 * holds no secret (credentials come from the environment or files). */
static void scrub_cmdline(void)
{
	static const char name[] = "kb-sandbox-init";
	unsigned long f[52] = {0};
	char buf[1024];
	ssize_t n = 0, r;
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);

	prctl(PR_SET_NAME, "kb-init", 0, 0, 0);
	if (fd < 0)
		return;
	while (n < (ssize_t)sizeof(buf) - 1 &&
	       (r = read(fd, buf + n, sizeof(buf) - 1 - (size_t)n)) > 0)
		n += r;
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	char *c = strrchr(buf, ')'); /* the name in field 2 may hold spaces */
	if (!c || c[1] != ' ')
		return;
	int k = 3;
	for (c += 2; *c && k < 52; c++) {
		if (*c == ' ') {
			k++;
			continue;
		}
		if (*c >= '0' && *c <= '9')
			f[k] = f[k] * 10 + (unsigned long)(*c - '0');
	}
	if (k < 51)
		return; /* kernel older than 3.5: no addresses */
	for (int i = 48; i <= 50; i += 2) {
		unsigned long a = f[i], b = f[i + 1];
		if (a && b > a && b - a < (64UL << 20))
			memset((void *)a, 0, b - a);
	}
	if (f[48] && f[49] > f[48] && f[49] - f[48] > sizeof(name))
		memcpy((void *)f[48], name, sizeof(name));
}

/* PID 1 of the run: reaps everything, reports the program's status. */
__attribute__((noreturn)) static void init_main(struct kb__sb_plan *p)
{
	char msg[200];
	int rc;

	if ((rc = kb__sb_mount_setup(p, msg, sizeof(msg))) < 0) {
		send_msg(p->fd_ctl, SB_MSG_ERR, -rc, msg);
		_exit(127);
	}
	/* Nothing in the run may read our memory through /proc (in user
	 * namespace mode the program shares our uid); the flag is inherited
	 * by the program until its execve resets it. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (sethostname("kb-sandbox", 10) < 0)
		fail(p, "sethostname", NULL, errno);
	loopback_up(p);

	/* The program waits at the gate until our command line is scrubbed:
	 * its argv and environment may point into the area we zero, so it
	 * takes its copy of our memory first. */
	int gate[2];
	if (pipe2(gate, O_CLOEXEC) < 0)
		fail(p, "pipe2", "gate", errno);
	pid_t prog = raw_fork(0);
	if (prog < 0)
		fail(p, "clone", "program", errno);
	if (prog == 0) {
		char c;
		ssize_t n;
		close(gate[1]);
		while ((n = read(gate[0], &c, 1)) < 0 && errno == EINTR)
			;
		if (n != 1)
			_exit(127);
		close(gate[0]);
		program_main(p);
	}
	close(gate[0]);
	scrub_cmdline();
	if (write(gate[1], "g", 1) != 1)
		fail(p, "write", "gate", errno);
	close(gate[1]);

	/* Keep only the control pipe: the parent sees EOF on the output pipes
	 * once the program and its descendants are gone. */
	int ctl = fcntl(p->fd_ctl, F_DUPFD_CLOEXEC, 3);
	if (ctl < 0)
		fail(p, "fcntl", "F_DUPFD", errno);
	for (int fd = 0; fd < 3; fd++)
		close(fd);
	if (syscall(SYS_close_range, (unsigned)ctl + 1, ~0U, 0) < 0)
		for (int fd = ctl + 1; fd < 65536; fd++)
			close(fd);
	for (int fd = 3; fd < ctl; fd++)
		close(fd);
	p->fd_ctl = ctl;

	for (;;) {
		int st;
		pid_t w = waitpid(-1, &st, __WALL);
		if (w == prog) {
			send_msg(ctl, SB_MSG_STATUS, st, NULL);
			_exit(0); /* the kernel now kills the rest of the namespace */
		}
		if (w < 0 && errno != EINTR)
			_exit(126); /* cannot happen while prog is alive */
	}
}

void kb__sb_child_main(const struct kb__sb_plan *cp)
{
	struct kb__sb_plan plan =
		*cp; /* our own copy: the fds get renumbered */
	struct kb__sb_plan *p = &plan;
	char go;

	/* Own session and process group, killed with the worker. */
	setsid();
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	/* Wait until the parent has put us in the cgroup (and written the id
	 * maps); EOF means the parent gave up or died. */
	for (;;) {
		ssize_t n = read(p->fd_sync, &go, 1);
		if (n == 1)
			break;
		if (n < 0 && errno == EINTR)
			continue;
		_exit(127);
	}
	close(p->fd_sync);
	if (p->isolate)
		init_main(p);
	program_main(p);
}
