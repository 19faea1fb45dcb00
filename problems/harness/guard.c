/* guard.c: the trusted-parent / untrusted-child split (see guard.h for the
 * theory of operation).
 *
 * Handoff. The control block is one shared page: the parent's half
 * (request sequence number, op, argument) and the child's half (done
 * sequence number, stamps, status) sit on different cache lines. The
 * child waits for a request by spinning a little and then sleeping on a
 * futex (shared, not FUTEX_PRIVATE: the two are different processes). The
 * parent never spins while a request runs: it sleeps, so every core is the
 * child's, in poll() on a pipe the child writes a byte to after "done".
 * Why a pipe: a pipe write wakes its reader synchronously (WF_SYNC), so the
 * scheduler runs the parent on the CPU the child is about to leave instead
 * of waking the one the parent slept on -- after a call of milliseconds
 * that CPU is deeply idle (on a VM, halted in the host), and waking it
 * added up to 400 us to the window, more than the slack calibrated on
 * short requests. The pipe's hang-up also tells the parent at once that
 * the child died; otherwise it checks with waitpid every 10 ms. A child
 * that closes its end only costs itself: the parent falls back to a futex
 * wait on done_seq.
 *
 * The watcher. Waking the parent still takes tens of microseconds (more on
 * a VM), all of it inside the window and so inside the slack a liar can
 * use. A second parent thread, at SCHED_IDLE (it runs only on a CPU that
 * nothing else wants, and any runnable thread of the child preempts it),
 * spins on done_seq while a request runs; the first of the two parent
 * threads to see "done" stamps t_seen and stops the child. When the child
 * keeps every CPU busy the watcher waits, and the main thread's wake-up
 * stamps as before. Its price: a CPU spinning beside the child's. Where
 * two CPUs share a core (hyperthreads) or, on a VM, a host CPU, that
 * slows the child down: on a 16-vCPU KVM guest a single-threaded
 * submission ran 26-51 % slower with the watcher than without, and the
 * slack came out no smaller (bench/RESULTS.md). So a driver whose child
 * computes on the CPU turns it off (kbh_guard_unwatch); one whose child
 * mostly waits for a device keeps it.
 *
 * Stop/continue. After every request the parent stops the child (SIGSTOP,
 * then waitpid WUNTRACED until the whole thread group is stopped); it
 * posts the next request while the child is still stopped and only then
 * continues it (SIGCONT). SIGSTOP cannot be
 * caught, blocked or ignored, and the child's seccomp filter keeps it from
 * creating processes that the stop would not reach. Spinning threads (the
 * child's own wait, OpenMP workers) resume where they were, so a stop
 * between two requests does not cool them down.
 *
 * Nothing in the control block is trusted by the parent: it copies the
 * child's stamps and status once, after "done", and validates them.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include "guard.h"

#include "harness.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#pragma GCC visibility push(hidden)

/* Spin iterations before sleeping on the futex: a few microseconds. Not
 * more: after "done" the parent must get a core at once to read its clock,
 * and on a machine whose cores are all busy with the child's spinning
 * threads (its main thread here, OpenMP workers after a parallel region)
 * the scheduler makes it wait for a time slice (milliseconds; measured:
 * p90 of the handoff 0.9-3.5 ms with a 1 ms spin, 14-50 us without). */
#define KBH__SPIN 256u

/* Parent's liveness poll while a request runs. */
#define KBH__POLL_NS 10000000L

#define KBH__MAX_RANGES ((KBH_GUARD_ARG_MAX - 16) / 16)

struct kbh__ctl {
	/* written by the parent */
	_Alignas(64) _Atomic uint32_t req_seq;
	_Atomic uint32_t child_waiting;
	uint32_t op;
	uint32_t arg_size;
	/* written by the child */
	_Alignas(64) _Atomic uint32_t done_seq;
	_Atomic uint32_t parent_waiting;
	int32_t status;
	uint64_t t0, t1;
	char msg[KBH_GUARD_MSG_MAX]; /* LOAD's error text */
	/* argument (parent -> child) */
	_Alignas(64) unsigned char arg[KBH_GUARD_ARG_MAX];
};

struct kbh__range {
	uint64_t off, len;
};

struct kbh_guard {
	pid_t pid;
	struct kbh__ctl *ctl;
	size_t ctl_len;
	unsigned char *arena;
	size_t arena_len;
	size_t used;
	size_t npend;
	struct kbh__range pend[KBH__MAX_RANGES];
	uint32_t seq;
	uint64_t rd0; /* run delays when the current request was posted */
	int stopped;
	int dead;
	int confined;
	int done_rd, done_wr; /* "done" pipe (parent reads, child writes) */
	int wake_rd, wake_wr; /* the watcher's wake-up for the main thread */
	pthread_t watcher;
	int have_watcher;
	_Atomic uint32_t watch; /* seq the watcher looks for; 0: idle */
	_Atomic uint32_t quit;
	_Atomic uint64_t seen; /* first t_seen stamp of the request, or 0 */
	int pipe_broken;       /* the child closed its end: futex fallback */
	int sched_self;        /* our schedstat fd, -1 if unavailable */
	int child_tasks;       /* the child's /proc/<pid>/task dir fd, or -1 */
	char death[128];
	/* child side */
	kbh_guard_fn fn;
	void *ctx;
};

static size_t kbh__gpage(void)
{
	long p = sysconf(_SC_PAGESIZE);
	return p > 0 ? (size_t)p : 4096;
}

static size_t kbh__gup(size_t x, size_t a)
{
	return (x + a - 1) / a * a;
}

static void kbh__gerr(char *err, size_t err_size, const char *what, int e)
{
	if (err && err_size)
		snprintf(err, err_size, "%s: %s", what, strerror(e));
}

static long kbh__futex(_Atomic uint32_t *addr, int op, uint32_t val,
		       const struct timespec *ts)
{
	return syscall(SYS_futex, (uint32_t *)(void *)addr, op, val, ts, NULL,
		       0);
}

static inline void kbh__relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#endif
}

/* ---- the child ---------------------------------------------------------- */

#if defined(__x86_64__)
#define KBH__AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define KBH__AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

#ifdef KBH__AUDIT_ARCH
/* Offsets of the low and high 32 bits of a 64-bit syscall argument
 * (little-endian: our architectures as Linux runs them). */
#define KBH__ARG_LO(i) (offsetof(struct seccomp_data, args) + 8 * (i))
#define KBH__ARG_HI(i) (offsetof(struct seccomp_data, args) + 8 * (i) + 4)
#define KBH__RET_ERRNO(e) (SECCOMP_RET_ERRNO | ((e)&SECCOMP_RET_DATA))
#ifdef SECCOMP_RET_KILL_PROCESS
#define KBH__RET_KILL SECCOMP_RET_KILL_PROCESS
#else
#define KBH__RET_KILL SECCOMP_RET_KILL
#endif

struct kbh__bpf {
	struct sock_filter f[128];
	unsigned short n;
};

static void kbh__emit(struct kbh__bpf *b, struct sock_filter s)
{
	if (b->n < sizeof b->f / sizeof b->f[0])
		b->f[b->n++] = s;
}

/* if (nr == sysno) return ret; (A holds nr before and after) */
static void kbh__deny(struct kbh__bpf *b, long sysno, uint32_t ret)
{
	kbh__emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						  (uint32_t)sysno, 0, 1));
	kbh__emit(b, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, ret));
}

/* if (nr == sysno) return args[arg] == self ? ALLOW : EPERM; */
static void kbh__only_self(struct kbh__bpf *b, long sysno, int arg, pid_t self)
{
	kbh__emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						  (uint32_t)sysno, 0, 6));
	kbh__emit(b, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						  KBH__ARG_HI(arg)));
	kbh__emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0,
						  0, 3));
	kbh__emit(b, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						  KBH__ARG_LO(arg)));
	kbh__emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						  (uint32_t)self, 0, 1));
	kbh__emit(b, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
						  SECCOMP_RET_ALLOW));
	kbh__emit(b, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
						  KBH__RET_ERRNO(EPERM)));
}

/* The child's own seccomp filter (see guard.h). It stacks on whatever
 * filter the worker's sandbox installed. Returns 0 or -errno. */
static int kbh__confine(void)
{
	struct kbh__bpf b = {.n = 0};
	pid_t self = getpid();
	const uint32_t eperm = KBH__RET_ERRNO(EPERM);

	kbh__emit(&b, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						   offsetof(struct seccomp_data,
							    arch)));
	kbh__emit(&b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						   KBH__AUDIT_ARCH, 1, 0));
	kbh__emit(&b,
		  (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, KBH__RET_KILL));
	kbh__emit(&b, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						   offsetof(struct seccomp_data,
							    nr)));
#if defined(__x86_64__)
	/* the x32 ABI's numbers alias ours with bit 30 set */
	kbh__emit(&b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K,
						   0x40000000u, 0, 1));
	kbh__emit(&b, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, eperm));
#endif
	/* threads yes, processes no: clone needs CLONE_THREAD */
	kbh__emit(&b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						   (uint32_t)SYS_clone, 0, 4));
	kbh__emit(&b, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						   KBH__ARG_LO(0)));
	kbh__emit(&b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K,
						   CLONE_THREAD, 0, 1));
	kbh__emit(&b, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
						   SECCOMP_RET_ALLOW));
	kbh__emit(&b, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, eperm));
#ifdef SYS_clone3
	/* its flags sit in memory a filter cannot read; libc falls back to
	 * clone(2) on ENOSYS */
	kbh__deny(&b, SYS_clone3, KBH__RET_ERRNO(ENOSYS));
#endif
#ifdef SYS_fork
	kbh__deny(&b, SYS_fork, eperm);
#endif
#ifdef SYS_vfork
	kbh__deny(&b, SYS_vfork, eperm);
#endif
	kbh__deny(&b, SYS_execve, eperm);
#ifdef SYS_execveat
	kbh__deny(&b, SYS_execveat, eperm);
#endif
	kbh__deny(&b, SYS_ptrace, eperm);
#ifdef SYS_process_vm_readv
	kbh__deny(&b, SYS_process_vm_readv, eperm);
	kbh__deny(&b, SYS_process_vm_writev, eperm);
#endif
#ifdef SYS_kcmp
	kbh__deny(&b, SYS_kcmp, eperm);
#endif
#ifdef SYS_pidfd_open
	kbh__deny(&b, SYS_pidfd_open, eperm);
#endif
#ifdef SYS_pidfd_send_signal
	kbh__deny(&b, SYS_pidfd_send_signal, eperm);
#endif
#ifdef SYS_pidfd_getfd
	kbh__deny(&b, SYS_pidfd_getfd, eperm);
#endif
#ifdef SYS_io_uring_setup
	kbh__deny(&b, SYS_io_uring_setup, eperm);
#endif
	kbh__deny(&b, SYS_tkill, eperm);
	kbh__deny(&b, SYS_rt_sigqueueinfo, eperm);
	kbh__deny(&b, SYS_rt_tgsigqueueinfo, eperm);
	/* signals only to itself (raise, abort, pthread_kill use tgkill) */
	kbh__only_self(&b, SYS_kill, 0, self);
	kbh__only_self(&b, SYS_tgkill, 0, self);
	kbh__emit(&b, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
						   SECCOMP_RET_ALLOW));
	if (b.n >= sizeof b.f / sizeof b.f[0])
		return -E2BIG;

	struct sock_fprog prog = {.len = b.n, .filter = b.f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0))
		return -errno;
	return 0;
}
#else
static int kbh__confine(void)
{
	return -ENOSYS;
}
#endif

/* Drops every capability (bounding set, ambient, effective, permitted,
 * inheritable). Why: PR_SET_DUMPABLE 0 on the parent keeps /proc/<ppid>/
 * mem, fd/ and environ and ptrace away from processes that lack
 * CAP_SYS_PTRACE, which a harness run as root (outside the worker's
 * sandbox: tests, a developer's machine) would otherwise pass on to the
 * child. Dropping is always permitted; errors are ignored (there may be
 * nothing to drop). */
static void kbh__drop_caps(void)
{
	for (int cap = 0; cap < 64; cap++)
		prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
#ifdef PR_CAP_AMBIENT
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
#endif
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];
	kbh_fill(d, 0, sizeof d);
	syscall(SYS_capset, &h, d);
}

/* Closes every fd above 2 but keep (the "done" pipe's write end); a
 * report fd at 0..2 becomes /dev/null. */
static void kbh__child_fds(int keep)
{
	int done = 0;
#ifdef SYS_close_range
	done = syscall(SYS_close_range, 3u, (unsigned)keep - 1, 0u) == 0 &&
	       syscall(SYS_close_range, (unsigned)keep + 1, ~0u, 0u) == 0;
#endif
	if (!done) {
		struct rlimit rl;
		long max = 65536;
		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
		    rl.rlim_cur != RLIM_INFINITY && (long)rl.rlim_cur < max)
			max = (long)rl.rlim_cur;
		for (long fd = 3; fd < max; fd++)
			if (fd != keep)
				close((int)fd);
	}
	const char *s = getenv("POPCORN_FD");
	if (s && (s[0] >= '0' && s[0] <= '2') && s[1] == '\0') {
		int nul = open("/dev/null", O_RDWR);
		if (nul >= 0) {
			dup2(nul, s[0] - '0');
			if (nul > 2)
				close(nul);
		}
	}
	unsetenv("POPCORN_FD");
}

/* Waits until req_seq differs from last; returns the new value. Spins
 * KBH__SPIN iterations, then sleeps on the futex. (A stop that finds it
 * asleep restarts the futex wait on SIGCONT, which then sees the new
 * value at once.) */
static uint32_t kbh__child_wait(struct kbh__ctl *c, uint32_t last)
{
	for (unsigned i = 0; i < KBH__SPIN; i++) {
		uint32_t s =
			atomic_load_explicit(&c->req_seq, memory_order_acquire);
		if (s != last)
			return s;
		kbh__relax();
	}
	for (;;) {
		atomic_store(&c->child_waiting, 1);
		uint32_t s = atomic_load(&c->req_seq);
		if (s != last) {
			atomic_store(&c->child_waiting, 0);
			return s;
		}
		kbh__futex(&c->req_seq, FUTEX_WAIT, last, NULL);
	}
}

static int kbh__child_map(struct kbh_guard *g, const unsigned char *arg,
			  size_t size)
{
	uint64_t n;
	if (size < 8)
		return -EINVAL;
	memcpy(&n, arg, 8);
	if (n > KBH__MAX_RANGES || size < 8 + n * sizeof(struct kbh__range))
		return -EINVAL;
	for (uint64_t i = 0; i < n; i++) {
		struct kbh__range r;
		memcpy(&r, arg + 8 + i * sizeof r, sizeof r);
		if (r.off > g->arena_len || r.len > g->arena_len - r.off)
			return -EINVAL;
		if (mprotect(g->arena + r.off, r.len, PROT_READ | PROT_WRITE))
			return -errno;
	}
	return 0;
}

void *kbh_guard_entry;

/* The child's LOAD: dlopen the submission (its constructors run here, in
 * the confined child) and look up its entry point. arg: path, NUL,
 * symbol, NUL. */
static int kbh__child_load(struct kbh__ctl *c, const unsigned char *arg,
			   size_t size)
{
	const char *path = (const char *)arg, *sym;
	size_t plen = strnlen(path, size);
	if (plen + 1 >= size)
		return -EINVAL;
	sym = path + plen + 1;
	if (strnlen(sym, size - plen - 1) == size - plen - 1)
		return -EINVAL;
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		snprintf(c->msg, sizeof c->msg, "%s", e ? e : "dlopen failed");
		return -ENOENT;
	}
	dlerror();
	kbh_guard_entry = dlsym(h, sym);
	if (!kbh_guard_entry) {
		snprintf(c->msg, sizeof c->msg, "%s does not define %s", path,
			 sym);
		return -ENOENT;
	}
	return 0;
}

static _Noreturn void kbh__child_main(struct kbh_guard *g, pid_t parent)
{
	/* Die with the parent; if it is already gone, go now. */
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() != parent)
		_exit(1);
	kbh__child_fds(g->done_wr);
	kbh__drop_caps();
	int confined = kbh__confine();

	struct kbh__ctl *c = g->ctl;
	static unsigned char arg[KBH_GUARD_ARG_MAX];
	uint32_t last = 0;
	for (;;) {
		uint32_t seq = kbh__child_wait(c, last);
		last = seq;
		uint32_t op = c->op;
		size_t size = c->arg_size <= KBH_GUARD_ARG_MAX ? c->arg_size
							       : 0;
		kbh_copy(arg, c->arg, size);
		uint64_t t0 = 0, t1 = 0;
		int status;
		switch (op) {
		case KBH_GUARD_OP_HELLO:
			status = confined;
			break;
		case KBH_GUARD_OP_MAP:
			status = kbh__child_map(g, arg, size);
			break;
		case KBH_GUARD_OP_RESET:
			status = mprotect(g->arena, g->arena_len, PROT_NONE)
					 ? -errno
					 : 0;
			break;
		case KBH_GUARD_OP_LOAD:
			status = kbh__child_load(c, arg, size);
			break;
		default:
			status =
				op >= KBH_GUARD_OP_USER
					? g->fn(g->ctx, op, arg, size, &t0, &t1)
					: -EINVAL;
			break;
		}
		c->t0 = t0;
		c->t1 = t1;
		c->status = status;
		atomic_store(&c->done_seq, seq);
		ssize_t w = write(g->done_wr, "d", 1);
		(void)w; /* a full pipe already has a wake-up in it */
		if (atomic_load(&c->parent_waiting))
			kbh__futex(&c->done_seq, FUTEX_WAKE, INT_MAX, NULL);
	}
}

/* ---- the parent --------------------------------------------------------- */

static void kbh__describe(struct kbh_guard *g, int st)
{
	g->dead = 1;
	if (WIFSIGNALED(st))
		snprintf(g->death, sizeof g->death, "killed by signal %d (%s)",
			 WTERMSIG(st), strsignal(WTERMSIG(st)));
	else if (WIFEXITED(st))
		snprintf(g->death, sizeof g->death, "exited with status %d",
			 WEXITSTATUS(st));
	else
		snprintf(g->death, sizeof g->death, "ended (wait status %#x)",
			 (unsigned)st);
}

/* Non-blocking: 1 if the child has died (and is now reaped). */
static int kbh__reap(struct kbh_guard *g)
{
	if (g->dead)
		return 1;
	int st;
	pid_t r = waitpid(g->pid, &st, WNOHANG);
	if (r == g->pid && (WIFEXITED(st) || WIFSIGNALED(st))) {
		kbh__describe(g, st);
		return 1;
	}
	if (r < 0 && errno == ECHILD) {
		g->dead = 1;
		snprintf(g->death, sizeof g->death, "vanished");
		return 1;
	}
	return 0;
}

/* Stops the child and waits until it is stopped. 0 or -ECHILD. */
static int kbh__stop_child(struct kbh_guard *g)
{
	if (kill(g->pid, SIGSTOP) && errno == ESRCH)
		return kbh__reap(g), -ECHILD;
	for (;;) {
		int st;
		pid_t r = waitpid(g->pid, &st, WUNTRACED);
		if (r < 0 && errno == EINTR)
			continue;
		if (r == g->pid && WIFSTOPPED(st)) {
			g->stopped = 1;
			return 0;
		}
		if (r == g->pid && (WIFEXITED(st) || WIFSIGNALED(st))) {
			kbh__describe(g, st);
			return -ECHILD;
		}
		if (r < 0) {
			g->dead = 1;
			snprintf(g->death, sizeof g->death, "vanished");
			return -ECHILD;
		}
	}
}

/* Time (ns) the thread behind fd has spent waiting on a run queue, from
 * schedstat's second field; 0 when unavailable. */
static uint64_t kbh__run_delay(int fd)
{
	char buf[96];
	if (fd < 0)
		return 0;
	ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	const char *p = strchr(buf, ' ');
	return p ? strtoull(p + 1, NULL, 10) : 0;
}

/* Stamps t_seen for the current request unless the other parent thread
 * did; the winner also stops the child. Returns the stamp in effect. */
static uint64_t kbh__stamp_seen(struct kbh_guard *g)
{
	uint64_t now = kbh_now_ns(), z = 0;
	if (atomic_compare_exchange_strong(&g->seen, &z, now)) {
		kill(g->pid, SIGSTOP);
		return now;
	}
	return z;
}

static void *kbh__watcher(void *arg)
{
	struct kbh_guard *g = arg;
	struct sched_param sp = {0};
	if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp) != 0)
		return NULL; /* spinning at normal priority would steal CPU */
	while (!atomic_load(&g->quit)) {
		uint32_t want = atomic_load(&g->watch);
		if (!want) {
			syscall(SYS_futex, (uint32_t *)(void *)&g->watch,
				FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
			continue;
		}
		if (atomic_load_explicit(&g->ctl->done_seq,
					 memory_order_acquire) == want) {
			kbh__stamp_seen(g);
			uint32_t w = want;
			atomic_compare_exchange_strong(&g->watch, &w, 0);
			ssize_t n = write(g->wake_wr, "w", 1);
			(void)n;
			continue;
		}
		kbh__relax();
	}
	return NULL;
}

/* Sleeps until done_seq == seq, with liveness checks. 0 or -ECHILD. */
static int kbh__wait_done(struct kbh_guard *g, uint32_t seq)
{
	struct kbh__ctl *c = g->ctl;
	while (!g->pipe_broken) {
		if (atomic_load(&c->done_seq) == seq)
			return 0;
		struct pollfd pfd[2] = {{g->done_rd, POLLIN, 0},
					{g->wake_rd, POLLIN, 0}};
		int n = poll(pfd, 2, (int)(KBH__POLL_NS / 1000000));
		char buf[64];
		if (n > 0 && (pfd[1].revents & POLLIN))
			while (read(g->wake_rd, buf, sizeof buf) > 0)
				;
		if (n > 0 && (pfd[0].revents & POLLIN)) {
			while (read(g->done_rd, buf, sizeof buf) > 0)
				;
		} else if (n > 0 && (pfd[0].revents & (POLLHUP | POLLERR))) {
			/* dead, or it closed its end of the pipe */
			for (int i = 0; i < 100 && !kbh__reap(g); i++) {
				struct timespec ts = {0, 1000000};
				nanosleep(&ts, NULL);
			}
			if (g->dead)
				return -ECHILD;
			g->pipe_broken = 1;
		} else if (n == 0 && kbh__reap(g)) {
			return -ECHILD;
		}
	}
	for (;;) {
		uint32_t d = atomic_load(&c->done_seq);
		if (d == seq)
			break;
		atomic_store(&c->parent_waiting, 1);
		d = atomic_load(&c->done_seq);
		if (d == seq)
			break;
		struct timespec ts = {0, KBH__POLL_NS};
		long rc = kbh__futex(&c->done_seq, FUTEX_WAIT, d, &ts);
		if (rc && errno == ETIMEDOUT && kbh__reap(g)) {
			atomic_store(&c->parent_waiting, 0);
			return -ECHILD;
		}
	}
	atomic_store(&c->parent_waiting, 0);
	return 0;
}

/* One request: post it while the child is still stopped, continue the
 * child, sleep until "done", stop it again. Posting before SIGCONT means
 * that no thread of the child runs while the request (with its inputs
 * staged in the arena) is visible and the window is not yet open: a thread
 * of the child that watches the arena to start early gets no head start
 * beyond the scheduling of the child's own main thread, which the window
 * covers. */
/* Sum of the run delays of every thread of the child (OpenMP workers
 * included: a worker waiting for a CPU holds up the whole region). The
 * directory is re-read each time, since threads come and go. */
static uint64_t kbh__child_delay(struct kbh_guard *g)
{
	if (g->child_tasks < 0)
		return 0;
	int dfd = dup(g->child_tasks);
	if (dfd < 0)
		return 0;
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return 0;
	}
	rewinddir(d);
	uint64_t sum = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		char path[sizeof e->d_name + 16];
		snprintf(path, sizeof path, "%s/schedstat", e->d_name);
		int fd = openat(g->child_tasks, path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		sum += kbh__run_delay(fd);
		close(fd);
	}
	closedir(d);
	return sum;
}

/* Posts a request and continues the child; the first half of
 * kbh__post_wait. */
static int kbh__post(struct kbh_guard *g, uint32_t op, const void *arg,
		     size_t arg_size, struct kbh_guard_window *w)
{
	struct kbh__ctl *c = g->ctl;
	if (g->dead)
		return -ECHILD;
	if (arg_size > KBH_GUARD_ARG_MAX)
		return -EINVAL;
	c->op = op;
	c->arg_size = (uint32_t)arg_size;
	kbh_copy(c->arg, arg, arg_size);
	uint32_t seq = ++g->seq;
	g->rd0 = kbh__run_delay(g->sched_self) + kbh__child_delay(g);
	atomic_store(&g->seen, 0);
	if (g->have_watcher) {
		atomic_store(&g->watch, seq);
		syscall(SYS_futex, (uint32_t *)(void *)&g->watch,
			FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
	uint64_t t_go = kbh_now_ns();
	atomic_store(&c->req_seq, seq);
	if (g->stopped) {
		kill(g->pid, SIGCONT);
		g->stopped = 0;
	}
	if (atomic_load(&c->child_waiting))
		kbh__futex(&c->req_seq, FUTEX_WAKE, INT_MAX, NULL);
	w->t_go = t_go;
	return 0;
}

/* Waits for "done", stamps t_seen, copies the claims and stops the child
 * again; the second half of kbh__post_wait. */
static int kbh__finish(struct kbh_guard *g, struct kbh_guard_window *w)
{
	struct kbh__ctl *c = g->ctl;
	if (kbh__wait_done(g, g->seq)) {
		atomic_store(&g->watch, 0);
		return -ECHILD;
	}
	uint64_t t_seen = kbh__stamp_seen(g);
	atomic_store(&g->watch, 0);
	/* copy the claims once; the child may scribble on them later */
	w->t_seen = t_seen;
	w->t0 = c->t0;
	w->t1 = c->t1;
	w->status = c->status;
	int rc = kbh__stop_child(g);
	uint64_t rd1 = kbh__run_delay(g->sched_self) + kbh__child_delay(g);
	w->waited = rd1 > g->rd0 ? rd1 - g->rd0 : 0;
	return rc;
}

static int kbh__post_wait(struct kbh_guard *g, uint32_t op, const void *arg,
			  size_t arg_size, struct kbh_guard_window *w)
{
	int rc = kbh__post(g, op, arg, arg_size, w);
	return rc ? rc : kbh__finish(g, w);
}

int kbh_guard_start(struct kbh_guard **out, size_t arena_max, kbh_guard_fn fn,
		    void *ctx, char *err, size_t err_size)
{
	*out = NULL;
	struct kbh_guard *g = calloc(1, sizeof *g);
	if (!g) {
		kbh__gerr(err, err_size, "guard", ENOMEM);
		return -ENOMEM;
	}
	g->fn = fn;
	g->ctx = ctx;
	g->sched_self = g->child_tasks = -1;
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC | O_NONBLOCK)) {
		kbh__gerr(err, err_size, "pipe", errno);
		free(g);
		return -EMFILE;
	}
	g->done_rd = pfd[0];
	g->done_wr = pfd[1];
	if (pipe2(pfd, O_CLOEXEC | O_NONBLOCK)) {
		kbh__gerr(err, err_size, "pipe", errno);
		close(g->done_rd);
		close(g->done_wr);
		free(g);
		return -EMFILE;
	}
	g->wake_rd = pfd[0];
	g->wake_wr = pfd[1];
	g->ctl_len = kbh__gup(sizeof(struct kbh__ctl), kbh__gpage());
	void *c = mmap(NULL, g->ctl_len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (c == MAP_FAILED) {
		kbh__gerr(err, err_size, "mmap (control block)", errno);
		close(g->done_rd);
		close(g->done_wr);
		close(g->wake_rd);
		close(g->wake_wr);
		free(g);
		return -ENOMEM;
	}
	g->ctl = c;
	/* Address space only: pages exist once touched. Smaller sizes when
	 * the kernel refuses (strict overcommit ignores NORESERVE). */
	size_t len = kbh__gup(arena_max ? arena_max : ((size_t)1 << 30),
			      kbh__gpage());
	void *a = MAP_FAILED;
	for (; len >= ((size_t)64 << 20); len /= 2) {
		a = mmap(NULL, len, PROT_NONE,
			 MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (a != MAP_FAILED)
			break;
	}
	if (a == MAP_FAILED) {
		kbh__gerr(err, err_size, "mmap (arena)", errno);
		munmap(g->ctl, g->ctl_len);
		close(g->done_rd);
		close(g->done_wr);
		close(g->wake_rd);
		close(g->wake_wr);
		free(g);
		return -ENOMEM;
	}
	g->arena = a;
	g->arena_len = len;

	/* Before the fork, so the child inherits nothing it can use to reach
	 * us: no /proc/<ppid>/mem, fds or ptrace for a non-dumpable process. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)) {
		kbh__gerr(err, err_size, "prctl(PR_SET_DUMPABLE)", errno);
		kbh_guard_stop(g);
		return -EPERM;
	}
	fflush(NULL);
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		kbh__gerr(err, err_size, "fork", errno);
		kbh_guard_stop(g);
		return -EAGAIN;
	}
	if (pid == 0)
		kbh__child_main(g, parent);
	g->pid = pid;
	close(g->done_wr);
	g->done_wr = -1;
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	g->child_tasks = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	g->sched_self =
		open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);

	struct kbh_guard_window w;
	int rc = kbh__post_wait(g, KBH_GUARD_OP_HELLO, NULL, 0, &w);
	if (rc) {
		snprintf(err, err_size, "the submission's process %s at start",
			 g->death);
		kbh_guard_stop(g);
		return rc;
	}
	g->confined = w.status == 0;
	g->have_watcher = pthread_create(&g->watcher, NULL, kbh__watcher, g) ==
			  0;
	*out = g;
	return 0;
}

void kbh_guard_unwatch(struct kbh_guard *g)
{
	if (!g->have_watcher)
		return;
	/* watch != 0 so that a watcher between its quit check and its
	 * FUTEX_WAIT(watch, 0) does not go to sleep after the wake below
	 * (it then spins once and sees quit). Storing 0 here hung
	 * pthread_join under load. */
	atomic_store(&g->quit, 1);
	atomic_store(&g->watch, UINT32_MAX);
	syscall(SYS_futex, (uint32_t *)(void *)&g->watch, FUTEX_WAKE_PRIVATE, 1,
		NULL, NULL, 0);
	pthread_join(g->watcher, NULL);
	g->have_watcher = 0;
	atomic_store(&g->watch, 0);
}

void kbh_guard_stop(struct kbh_guard *g)
{
	if (!g)
		return;
	if (g->pid > 0 && !g->dead) {
		kill(g->pid, SIGKILL);
		int st;
		while (waitpid(g->pid, &st, 0) < 0 && errno == EINTR)
			;
		g->dead = 1;
	}
	kbh_guard_unwatch(g);
	if (g->wake_rd >= 0)
		close(g->wake_rd);
	if (g->wake_wr >= 0)
		close(g->wake_wr);
	if (g->done_rd >= 0)
		close(g->done_rd);
	if (g->done_wr >= 0)
		close(g->done_wr);
	if (g->sched_self >= 0)
		close(g->sched_self);
	if (g->child_tasks >= 0)
		close(g->child_tasks);
	if (g->arena)
		munmap(g->arena, g->arena_len);
	if (g->ctl)
		munmap(g->ctl, g->ctl_len);
	free(g);
}

int kbh_guard_pid(const struct kbh_guard *g)
{
	return g ? (int)g->pid : -1;
}

int kbh_guard_confined(const struct kbh_guard *g)
{
	return g && g->confined;
}

const char *kbh_guard_death(const struct kbh_guard *g)
{
	return g && g->dead ? g->death : "";
}

void *kbh_guard_alloc(struct kbh_guard *g, size_t bytes)
{
	size_t page = kbh__gpage();
	if (!bytes || bytes > g->arena_len)
		return NULL;
	size_t data = kbh__gup(bytes, 64);
	size_t data_pages = kbh__gup(data, page);
	size_t need = data_pages + page; /* + the guard page */
	if (need > g->arena_len - g->used)
		return NULL;
	if (g->npend == KBH__MAX_RANGES && kbh_guard_publish(g, NULL, 0))
		return NULL;
	unsigned char *base = g->arena + g->used;
	if (mprotect(base, data_pages, PROT_READ | PROT_WRITE))
		return NULL;
	g->pend[g->npend].off = g->used;
	g->pend[g->npend].len = data_pages;
	g->npend++;
	g->used += need;
	return base + data_pages - data;
}

int kbh_guard_publish(struct kbh_guard *g, char *err, size_t err_size)
{
	if (!g->npend)
		return 0;
	unsigned char arg[KBH_GUARD_ARG_MAX];
	uint64_t n = g->npend;
	kbh_copy(arg, &n, 8);
	kbh_copy(arg + 8, g->pend, g->npend * sizeof g->pend[0]);
	struct kbh_guard_window w;
	int rc = kbh__post_wait(g, KBH_GUARD_OP_MAP, arg,
				8 + g->npend * sizeof g->pend[0], &w);
	if (rc) {
		if (err && err_size)
			snprintf(err, err_size, "the submission's process %s",
				 g->death);
		return rc;
	}
	if (w.status) {
		/* Before any user code this is our failure; after, a child
		 * that refuses to map its slots only fails itself. */
		if (err && err_size)
			snprintf(err, err_size,
				 "the submission's process could not map the "
				 "work buffers (%d)",
				 w.status);
		return -EPROTO;
	}
	g->npend = 0;
	return 0;
}

void kbh_guard_reset(struct kbh_guard *g)
{
	if (!g || !g->used)
		return;
	struct kbh_guard_window w;
	if (!g->dead)
		kbh__post_wait(g, KBH_GUARD_OP_RESET, NULL, 0, &w);
	/* Release the pages (MADV_REMOVE frees shared memory for both
	 * processes; it needs a writable mapping). */
	if (mprotect(g->arena, g->used, PROT_READ | PROT_WRITE) == 0)
		madvise(g->arena, g->used, MADV_REMOVE);
	mprotect(g->arena, g->used, PROT_NONE);
	g->used = 0;
	g->npend = 0;
}

size_t kbh_guard_arena_used(const struct kbh_guard *g)
{
	return g->used;
}

size_t kbh_guard_arena_size(const struct kbh_guard *g)
{
	return g->arena_len;
}

int kbh_guard_request(struct kbh_guard *g, uint32_t op, const void *arg,
		      size_t arg_size, struct kbh_guard_window *w)
{
	if (op < KBH_GUARD_OP_USER || arg_size > KBH_GUARD_ARG_MAX)
		return -EINVAL;
	return kbh__post_wait(g, op, arg, arg_size, w);
}

int kbh_guard_post(struct kbh_guard *g, uint32_t op, const void *arg,
		   size_t arg_size, struct kbh_guard_window *w)
{
	if (op < KBH_GUARD_OP_USER || arg_size > KBH_GUARD_ARG_MAX)
		return -EINVAL;
	return kbh__post(g, op, arg, arg_size, w);
}

int kbh_guard_finish(struct kbh_guard *g, struct kbh_guard_window *w)
{
	return kbh__finish(g, w);
}

int kbh_guard_poll(struct kbh_guard *g)
{
	if (atomic_load(&g->ctl->done_seq) == g->seq)
		return 1;
	return kbh__reap(g) ? -ECHILD : 0;
}

/* ---- verification ------------------------------------------------------- */

int kbh_guard_load(struct kbh_guard *g, const char *path, const char *symbol,
		   char *err, size_t err_size)
{
	unsigned char arg[KBH_GUARD_ARG_MAX];
	size_t pl = strlen(path), sl = strlen(symbol);
	struct kbh_guard_window w;

	if (pl + sl + 2 > sizeof arg) {
		snprintf(err, err_size, "path too long: %s", path);
		return -ENAMETOOLONG;
	}
	kbh_copy(arg, path, pl + 1);
	kbh_copy(arg + pl + 1, symbol, sl + 1);
	g->ctl->msg[0] = '\0';
	int rc = kbh__post_wait(g, KBH_GUARD_OP_LOAD, arg, pl + sl + 2, &w);
	if (rc) {
		snprintf(err, err_size,
			 "the submission's process %s while "
			 "loading it",
			 g->death);
		return rc;
	}
	if (w.status) {
		/* The child's words, once, now that it is stopped; only
		 * printable bytes. */
		char m[KBH_GUARD_MSG_MAX];
		kbh_copy(m, g->ctl->msg, sizeof m);
		m[sizeof m - 1] = '\0';
		for (char *q = m; *q; q++)
			if ((unsigned char)*q < 0x20 || *q == 0x7f)
				*q = ' ';
		snprintf(err, err_size, "cannot load the submission: %s",
			 m[0] ? m : "unknown error");
		return w.status < 0 ? w.status : -EPROTO;
	}
	return 0;
}

uint64_t kbh_guard_gap(const struct kbh_guard_window *w)
{
	uint64_t win = w->t_seen > w->t_go ? w->t_seen - w->t_go : 0;
	uint64_t claim = w->t1 > w->t0 ? w->t1 - w->t0 : 0;
	return win > claim ? win - claim : 0;
}

uint64_t kbh_guard_cal_gap(const struct kbh_guard_window *w)
{
	uint64_t g = kbh_guard_gap(w);
	return g > w->waited ? g - w->waited : 0;
}

uint64_t kbh_guard_allowance(uint64_t m_ns)
{
	uint64_t pct = m_ns / 100;
	return pct > KBH_GUARD_ALLOW_NS ? pct : KBH_GUARD_ALLOW_NS;
}

enum kbh_guard_verdict kbh_guard_verify(const struct kbh_guard_window *w,
					uint64_t handoff_ns,
					uint64_t *sample_ns)
{
	uint64_t win = w->t_seen > w->t_go ? w->t_seen - w->t_go : 0;
	uint64_t m = win > handoff_ns ? win - handoff_ns : 0;
	uint64_t allow = kbh_guard_allowance(m);
	uint64_t floor = m > allow ? m - allow : 0;
	if (w->t0 < w->t_go || w->t1 < w->t0 || w->t1 > w->t_seen) {
		*sample_ns = m;
		return KBH_GUARD_FORGED;
	}
	uint64_t claim = w->t1 - w->t0;
	if (claim < floor) {
		*sample_ns = floor;
		return KBH_GUARD_CLAMPED;
	}
	*sample_ns = claim;
	return KBH_GUARD_OK;
}

uint64_t kbh_guard_handoff(const uint64_t *gaps, size_t n)
{
	if (n == 0)
		return 0;
	uint64_t h = gaps[0];
	for (size_t i = 1; i < n; i++)
		if (gaps[i] < h)
			h = gaps[i];
	return h;
}

static int kbh__cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int kbh_guard_slack(uint64_t *gaps, size_t n, struct kbh_guard_cal *out)
{
	if (!n)
		return -EINVAL;
	qsort(gaps, n, sizeof gaps[0], kbh__cmp_u64);
	out->n = n;
	out->p50 = gaps[n / 2];
	out->p90 = gaps[((n - 1) * 9) / 10];
	out->p95 = gaps[((n - 1) * 95) / 100];
	out->p99 = gaps[((n - 1) * 99) / 100];
	out->max = gaps[n - 1];
	uint64_t s = 2 * out->p95 + 10000;
	if (s < KBH_GUARD_SLACK_MIN_NS)
		s = KBH_GUARD_SLACK_MIN_NS;
	if (s > KBH_GUARD_SLACK_MAX_NS)
		s = KBH_GUARD_SLACK_MAX_NS;
	out->slack = s;
	return 0;
}

int kbh_guard_unexplained(const struct kbh_guard_window *w, uint64_t slack_ns)
{
	uint64_t gap = kbh_guard_gap(w);
	return gap > w->waited && gap - w->waited > slack_ns;
}

uint64_t kbh_guard_gainful(const uint64_t *sample, const unsigned char *flag,
			   size_t n, uint64_t *scratch)
{
	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		scratch[i] = sample[i];
	qsort(scratch, n, sizeof *scratch, kbh__cmp_u64);
	uint64_t median = scratch[n / 2], k = 0;
	for (size_t i = 0; i < n; i++)
		k += flag[i] && sample[i] < median;
	return k;
}

int kbh_guard_too_many_clamped(uint64_t clamped, uint64_t n)
{
	return clamped > 2 + n / 50;
}

#pragma GCC visibility pop
