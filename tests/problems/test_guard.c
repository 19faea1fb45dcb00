/* Unit tests of problems/harness/guard.c: the pure verification and
 * calibration functions, and the split itself -- a real child serving
 * requests from this file's operations: honest and lying stamps, crashes
 * and exits, closed fds, the seccomp confinement, the arena's guard pages,
 * and the stop between requests. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "guard.h"
#include "harness.h"
#include "kb_check_main.h"

/* Under AddressSanitizer a SIGSEGV is caught and ends as exit(1). */
#if defined(__SANITIZE_ADDRESS__)
#define SEGV_DEATH "exited with status 1"
#define EXIT3_DEATH "exited with status " /* LeakSanitizer may change it */
#else
#define SEGV_DEATH "killed by signal 11"
#define EXIT3_DEATH "exited with status 3"
#endif

/* ---- pure --------------------------------------------------------------- */

static struct kbh_guard_window win(uint64_t go, uint64_t t0, uint64_t t1,
				   uint64_t seen)
{
	struct kbh_guard_window w = {go, seen, t0, t1, 0, 0};
	return w;
}

START_TEST(verify_cases)
{
	static const struct {
		uint64_t go, t0, t1, seen, h;
		enum kbh_guard_verdict v;
		uint64_t sample;
	} c[] = {
		/* window 1000..101000 (100 us), handoff 10 us: the parent
		 * measures m = 90 us, and a claim may take off max(1 %, 2 us)
		 * = 2 us of it */
		{1000, 5000, 95000, 101000, 10000, KBH_GUARD_OK, 90000},
		/* exactly at the bound: claim == m - allowance */
		{1000, 5000, 93000, 101000, 10000, KBH_GUARD_OK, 88000},
		/* shorter: the sample is m - allowance, whatever the claim */
		{1000, 5000, 92999, 101000, 10000, KBH_GUARD_CLAMPED, 88000},
		{1000, 50000, 50001, 101000, 10000, KBH_GUARD_CLAMPED, 88000},
		/* longer than m (a handoff faster than calibrated): kept */
		{1000, 1500, 99500, 101000, 10000, KBH_GUARD_OK, 98000},
		/* 1 % above 200 us: 10 ms measured, 100 us may go */
		{0, 1000, 2000, 10000000, 0, KBH_GUARD_CLAMPED, 9900000},
		/* outside the window, either end, or backwards: m itself */
		{1000, 999, 50000, 101000, 10000, KBH_GUARD_FORGED, 90000},
		{1000, 5000, 101001, 101000, 10000, KBH_GUARD_FORGED, 90000},
		{1000, 6000, 5000, 101000, 10000, KBH_GUARD_FORGED, 90000},
		{1000, 0, 0, 101000, 10000, KBH_GUARD_FORGED, 90000},
		/* a handoff longer than the window: m = 0, any claim goes */
		{1000, 1020, 1021, 1050, 100, KBH_GUARD_OK, 1},
		/* UINT64_MAX (the CUDA driver's check, ablation 1): the claim
		 * is the sample unless forged */
		{1000, 50000, 50001, 101000, UINT64_MAX, KBH_GUARD_OK, 1},
		{1000, 999, 50000, 101000, UINT64_MAX, KBH_GUARD_FORGED, 0},
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		struct kbh_guard_window w =
			win(c[i].go, c[i].t0, c[i].t1, c[i].seen);
		uint64_t s = 12345;
		ck_assert_msg(kbh_guard_verify(&w, c[i].h, &s) == c[i].v &&
				      s == c[i].sample,
			      "case %zu: verdict %d, sample %" PRIu64
			      " (want %d, %" PRIu64 ")",
			      i, (int)kbh_guard_verify(&w, c[i].h, &s), s,
			      (int)c[i].v, c[i].sample);
	}
	struct kbh_guard_window w = win(1000, 5000, 95000, 101000);
	ck_assert_uint_eq(kbh_guard_gap(&w), 10000);
}
END_TEST

START_TEST(allowance_and_handoff)
{
	ck_assert_uint_eq(kbh_guard_allowance(0), 2000);
	ck_assert_uint_eq(kbh_guard_allowance(200000), 2000);
	ck_assert_uint_eq(kbh_guard_allowance(200100), 2001);
	ck_assert_uint_eq(kbh_guard_allowance(10000000), 100000);
	ck_assert_uint_eq(kbh_guard_allowance(UINT64_MAX), UINT64_MAX / 100);
	uint64_t g[5] = {40000, 17000, 90000, 17500, 3000000};
	ck_assert_uint_eq(kbh_guard_handoff(g, 5), 17000);
	ck_assert_uint_eq(kbh_guard_handoff(g, 1), 40000);
	ck_assert_uint_eq(kbh_guard_handoff(g, 0), 0);
	ck_assert_uint_eq(g[2], 90000); /* not modified */
}
END_TEST

/* Issue 29's bound as the rule's property: for any window whose honest
 * handoff (window - honest claim) is at least the calibrated handoff h,
 * no claim a child can make inside the window -- shorter by a factor, by
 * a constant, or anything else -- gets a sample more than
 * kbh_guard_allowance(m) below the honest claim's. The ablation: with a
 * handoff above the honest one (the slack of the rule before, 2 x p95 +
 * 10 us of a calibration, is 70 us where handoffs take 30 us), a lie
 * x0.6 or 50 us short gains more than that. */
START_TEST(bound_holds)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < 100000; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		uint64_t work = 1000 + x % 20000000; /* 1 us .. 20 ms */
		uint64_t h = (x >> 24) % 200000;     /* 0 .. 200 us */
		uint64_t extra = (x >> 40) % 300000; /* handoff - h */
		uint64_t lie = (x >> 50) % 4;
		uint64_t t_go = 1000000, t0 = t_go + (h + extra) / 2;
		struct kbh_guard_window hon =
			win(t_go, t0, t0 + work, t_go + work + h + extra);
		struct kbh_guard_window liar = hon;
		liar.t1 = lie == 0   ? t0 + work * 6 / 10
			  : lie == 1 ? (work > 50000 ? t0 + work - 50000 : t0)
			  : lie == 2 ? t0
				     : t0 + work / 2;
		uint64_t sh, sl;
		kbh_guard_verify(&hon, h, &sh);
		kbh_guard_verify(&liar, h, &sl);
		uint64_t m = work + extra;
		ck_assert_msg(sl + kbh_guard_allowance(m) >= sh,
			      "work %" PRIu64 " h %" PRIu64 " extra %" PRIu64
			      ": honest %" PRIu64 ", lie %" PRIu64,
			      work, h, extra, sh, sl);
	}
	/* ablated: a 300 us call, handoffs of 30 us, h = a 70 us slack */
	struct kbh_guard_window hon = win(0, 15000, 315000, 330000);
	struct kbh_guard_window liar = hon;
	uint64_t sh, sl;
	kbh_guard_verify(&hon, 70000, &sh);
	liar.t1 = 15000 + 180000; /* x0.6 */
	kbh_guard_verify(&liar, 70000, &sl);
	ck_assert_uint_gt(sh - sl, kbh_guard_allowance(sh));
	liar.t1 = 315000 - 50000; /* 50 us short */
	kbh_guard_verify(&liar, 70000, &sl);
	ck_assert_uint_gt(sh - sl, kbh_guard_allowance(sh));
	/* ... and with h = the honest handoff, neither gains beyond it */
	kbh_guard_verify(&hon, 30000, &sh);
	kbh_guard_verify(&liar, 30000, &sl);
	ck_assert_uint_le(sh - sl, kbh_guard_allowance(sh));
}
END_TEST

START_TEST(unexplained_cases)
{
	struct kbh_guard_window w = win(0, 10, 20, 1000);
	ck_assert_uint_eq(kbh_guard_gap(&w), 990);
	ck_assert(kbh_guard_unexplained(&w, 100));
	w.waited = 900; /* the kernel says both waited 900 ns for a CPU */
	ck_assert(!kbh_guard_unexplained(&w, 100));
	w.waited = 800;
	ck_assert(kbh_guard_unexplained(&w, 100));
	w.waited = 5000;
	ck_assert(!kbh_guard_unexplained(&w, 100));
}
END_TEST

START_TEST(slack_rule)
{
	uint64_t g[200];
	struct kbh_guard_cal c;
	ck_assert_int_eq(kbh_guard_slack(g, 0, &c), -EINVAL);
	for (int i = 0; i < 200; i++)
		g[i] = (uint64_t)(199 - i) * 100; /* 0 .. 19900, shuffled */
	ck_assert_int_eq(kbh_guard_slack(g, 200, &c), 0);
	ck_assert_uint_eq(c.n, 200);
	ck_assert_uint_eq(c.p50, 10000);
	ck_assert_uint_eq(c.p90, 17900);
	ck_assert_uint_eq(c.p95, 18900);
	ck_assert_uint_eq(c.p99, 19700);
	ck_assert_uint_eq(c.max, 19900);
	ck_assert_uint_eq(c.slack, 2 * 18900 + 10000);
	ck_assert(g[0] <= g[199]); /* sorted in place */
	/* the bounds */
	for (int i = 0; i < 200; i++)
		g[i] = 0;
	kbh_guard_slack(g, 200, &c);
	ck_assert_uint_eq(c.slack, KBH_GUARD_SLACK_MIN_NS);
	for (int i = 0; i < 200; i++)
		g[i] = 10000000;
	kbh_guard_slack(g, 200, &c);
	ck_assert_uint_eq(c.slack, KBH_GUARD_SLACK_MAX_NS);
	/* clamp rule */
	ck_assert(!kbh_guard_too_many_clamped(2, 10));
	ck_assert(kbh_guard_too_many_clamped(3, 10));
	ck_assert(!kbh_guard_too_many_clamped(22, 1000));
	ck_assert(kbh_guard_too_many_clamped(23, 1000));
}
END_TEST

/* A neighbour loading the CPUs during calibration: every handoff 300 us
 * longer, all of it run-queue wait. The slack made from kbh_guard_cal_gap
 * is what a quiet host gives; from the raw gaps (the ablation) it would
 * hand every later lie 600 us more. */
START_TEST(cal_gap_takes_off_load)
{
	uint64_t quiet[100], loaded[100], raw[100];
	struct kbh_guard_cal cq, cl, cr;
	for (int i = 0; i < 100; i++) {
		struct kbh_guard_window w = {1000000, 1000000 + 60000 + 5000,
					     1010000, 1015000,
					     0,       0};
		quiet[i] = kbh_guard_cal_gap(&w);
		w.t_seen += 300000;
		w.waited = 300000;
		loaded[i] = kbh_guard_cal_gap(&w);
		raw[i] = kbh_guard_gap(&w);
	}
	kbh_guard_slack(quiet, 100, &cq);
	kbh_guard_slack(loaded, 100, &cl);
	kbh_guard_slack(raw, 100, &cr);
	ck_assert_uint_eq(cl.slack, cq.slack);
	ck_assert_uint_ge(cr.slack, cq.slack + 600000);
	/* never below 0 */
	struct kbh_guard_window w = {0, 100, 10, 20, 5000, 0};
	ck_assert_uint_eq(kbh_guard_cal_gap(&w), 0);
}
END_TEST

START_TEST(gainful_rule)
{
	/* 40 samples around 100 us; three late handoffs clamped to more than
	 * the claim (upper half), as on an honest run on a VM: none count. */
	uint64_t s[40], tmp[40];
	unsigned char f[40] = {0};
	for (int i = 0; i < 40; i++)
		s[i] = 100000 + (uint64_t)((i * 37) % 40) * 500;
	s[3] = 900000, f[3] = 1;
	s[17] = 1300000, f[17] = 1;
	s[29] = 120000, f[29] = 1;
	ck_assert_uint_eq(kbh_guard_gainful(s, f, 40, tmp), 0);
	ck_assert(!kbh_guard_too_many_clamped(0, 40));
	/* the same three, clamped below the median: they count */
	s[3] = 60000, s[17] = 70000, s[29] = 100000;
	ck_assert_uint_eq(kbh_guard_gainful(s, f, 40, tmp), 3);
	ck_assert(kbh_guard_too_many_clamped(3, 40));
	/* a liar clamped on every call: half its samples are below the
	 * median of them all, whatever the values */
	for (int i = 0; i < 40; i++)
		s[i] = 5000 + (uint64_t)((i * 7) % 40) * 10, f[i] = 1;
	ck_assert_uint_eq(kbh_guard_gainful(s, f, 40, tmp), 20);
	ck_assert(kbh_guard_too_many_clamped(20, 40));
	/* unflagged samples below the median never count */
	for (int i = 0; i < 40; i++)
		f[i] = 0;
	ck_assert_uint_eq(kbh_guard_gainful(s, f, 40, tmp), 0);
	ck_assert_uint_eq(kbh_guard_gainful(s, f, 0, tmp), 0);
}
END_TEST

/* ---- live --------------------------------------------------------------- */

enum {
	OP_HONEST = KBH_GUARD_OP_USER, /* busy arg ns, true stamps */
	OP_SHORT,                      /* busy arg ns, claims 1 us */
	OP_PAST,                       /* claims a start before the window */
	OP_SEGV,                       /* crashes */
	OP_EXIT,                       /* exit(3) */
	OP_FD,                         /* is fd arg open? */
	OP_ESCAPE,                     /* fork, signal the parent, ptrace */
	OP_SUM,                        /* sums arg bytes at ptr, writes out */
	OP_PASTEND,                    /* reads one page past ptr's end */
	OP_PEEK,                       /* reads the parent's /proc files */
};

struct targ {
	uint64_t a, b, c;
};

static int child_op(void *ctx, uint32_t op, const void *arg, size_t size,
		    uint64_t *t0, uint64_t *t1)
{
	(void)ctx;
	const struct targ *a = arg;
	if (size != sizeof *a)
		return -EINVAL;
	switch (op) {
	case OP_HONEST:
	case OP_SHORT: {
		uint64_t s = kbh_now_ns(), e;
		do
			e = kbh_now_ns();
		while (e - s < a->a);
		*t0 = op == OP_HONEST ? s : e - 1000;
		*t1 = e;
		return 0;
	}
	case OP_PAST:
		*t0 = 1;
		*t1 = kbh_now_ns();
		return 0;
	case OP_SEGV:
		raise(SIGSEGV);
		return 0;
	case OP_EXIT:
		exit(3);
	case OP_FD:
		return fcntl((int)a->a, F_GETFD) >= 0;
	case OP_ESCAPE: {
		int found = 0;
		pid_t p = fork();
		if (p == 0)
			_exit(0);
		if (p > 0)
			found |= 1;
		if (kill(getppid(), 0) == 0)
			found |= 2;
		if (kill(0, 0) == 0)
			found |= 4;
		if (kill(getpid(), 0) != 0)
			found |= 8; /* must still reach itself */
		return found;
	}
	case OP_SUM: {
		const unsigned char *p = (const void *)(uintptr_t)a->a;
		uint64_t s = 0;
		for (uint64_t i = 0; i < a->b; i++)
			s += p[i];
		*(uint64_t *)(uintptr_t)a->c = s;
		return 0;
	}
	case OP_PASTEND: {
		const volatile unsigned char *p = (const void *)(uintptr_t)a->a;
		return p[a->b + 4096];
	}
	case OP_PEEK: {
		char path[64];
		int found = 0;
		snprintf(path, sizeof path, "/proc/%d/mem", (int)getppid());
		if (open(path, O_RDONLY) >= 0)
			found |= 1;
		snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)getppid(),
			 (int)a->a);
		if (open(path, O_WRONLY) >= 0)
			found |= 2;
		return found;
	}
	}
	return -EINVAL;
}

static struct kbh_guard *start(void)
{
	char err[256] = "";
	struct kbh_guard *g = NULL;
	kbh_trusted_init(err, sizeof err);
	int rc = kbh_guard_start(&g, (size_t)1 << 28, child_op, NULL, err,
				 sizeof err);
	ck_assert_msg(rc == 0, "kbh_guard_start: %d %s", rc, err);
	return g;
}

static int req(struct kbh_guard *g, uint32_t op, uint64_t a, uint64_t b,
	       uint64_t c, struct kbh_guard_window *w)
{
	struct targ t = {a, b, c};
	return kbh_guard_request(g, op, &t, sizeof t, w);
}

/* State letter of a process from /proc/<pid>/stat ('T' when stopped). */
static char proc_state(int pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return '?';
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

START_TEST(live_timing)
{
	struct kbh_guard *g = start();
	struct kbh_guard_window w;
	uint64_t s;
	ck_assert(kbh_guard_confined(g));
	ck_assert_int_eq(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 0);

	ck_assert_int_eq(req(g, OP_HONEST, 2000000, 0, 0, &w), 0);
	ck_assert_int_eq(w.status, 0);
	ck_assert(w.t_go <= w.t0 && w.t0 <= w.t1 && w.t1 <= w.t_seen);
	ck_assert_uint_ge(w.t1 - w.t0, 2000000);
	/* an honest 2 ms fits its window */
	ck_assert_int_ne(kbh_guard_verify(&w, 0, &s), KBH_GUARD_FORGED);
	/* the child is stopped between requests */
	ck_assert_int_eq(proc_state(kbh_guard_pid(g)), 'T');

	/* 2 ms of work claimed as 1 us: the parent's own measurement, less
	 * at most 1 % */
	ck_assert_int_eq(req(g, OP_SHORT, 2000000, 0, 0, &w), 0);
	ck_assert_int_eq(kbh_guard_verify(&w, 0, &s), KBH_GUARD_CLAMPED);
	ck_assert_uint_ge(s, 1980000);

	ck_assert_int_eq(req(g, OP_PAST, 0, 0, 0, &w), 0);
	ck_assert_int_eq(kbh_guard_verify(&w, 0, &s), KBH_GUARD_FORGED);
	ck_assert_str_eq(kbh_guard_death(g), "");
	kbh_guard_stop(g);
}
END_TEST

/* Threads of this process. */
static int own_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	ck_assert_ptr_nonnull(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static uint64_t own_cpu_ns(void)
{
	struct timespec ts;
	ck_assert_int_eq(clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts), 0);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The CPU driver turns the spinning watcher off: afterwards the parent has
 * one thread fewer, burns no CPU while a request runs, and still times
 * requests (t_seen from its own wake-up). */
START_TEST(live_unwatch)
{
	struct kbh_guard *g = start();
	struct kbh_guard_window w;
	uint64_t s;
	int before = own_threads();
	kbh_guard_unwatch(g);
	ck_assert_int_eq(own_threads(), before - 1);
	kbh_guard_unwatch(g); /* twice is harmless */
	ck_assert_int_eq(own_threads(), before - 1);

	uint64_t c0 = own_cpu_ns();
	ck_assert_int_eq(req(g, OP_HONEST, 100000000, 0, 0, &w), 0);
	uint64_t spent = own_cpu_ns() - c0;
	/* a watcher would have spun for most of the 100 ms on a free CPU */
	ck_assert_msg(spent < 20000000, "the parent used %.1f ms of CPU",
		      (double)spent / 1e6);
	ck_assert_int_eq(w.status, 0);
	ck_assert(w.t_go <= w.t0 && w.t0 <= w.t1 && w.t1 <= w.t_seen);
	ck_assert_int_ne(kbh_guard_verify(&w, 0, &s), KBH_GUARD_FORGED);
	kbh_guard_stop(g);
}
END_TEST

START_TEST(live_crash)
{
	struct kbh_guard *g = start();
	struct kbh_guard_window w;
	ck_assert_int_eq(req(g, OP_SEGV, 0, 0, 0, &w), -ECHILD);
	ck_assert_msg(strstr(kbh_guard_death(g), SEGV_DEATH), "%s",
		      kbh_guard_death(g));
	/* dead for good */
	ck_assert_int_eq(req(g, OP_HONEST, 0, 0, 0, &w), -ECHILD);
	kbh_guard_stop(g);

	g = start();
	ck_assert_int_eq(req(g, OP_EXIT, 0, 0, 0, &w), -ECHILD);
	ck_assert_msg(strstr(kbh_guard_death(g), EXIT3_DEATH), "%s",
		      kbh_guard_death(g));
	kbh_guard_stop(g);
}
END_TEST

START_TEST(live_confinement)
{
	/* an fd opened before the split (the report fd, say) */
	int fd = open("/dev/null", O_WRONLY);
	ck_assert_int_ge(fd, 3);
	struct kbh_guard *g = start();
	struct kbh_guard_window w;
	ck_assert_int_eq(req(g, OP_FD, (uint64_t)fd, 0, 0, &w), 0);
	ck_assert_int_eq(w.status, 0); /* closed in the child */
	ck_assert_int_eq(req(g, OP_FD, 2, 0, 0, &w), 0);
	ck_assert_int_eq(w.status, 1); /* stderr stays */
	ck_assert_int_eq(req(g, OP_ESCAPE, 0, 0, 0, &w), 0);
	ck_assert_msg(w.status == 0, "escape bits %#x", w.status);
	ck_assert_int_eq(req(g, OP_PEEK, (uint64_t)fd, 0, 0, &w), 0);
	ck_assert_msg(w.status == 0, "peek bits %#x", w.status);
	kbh_guard_stop(g);
	close(fd);
}
END_TEST

START_TEST(live_arena)
{
	struct kbh_guard *g = start();
	struct kbh_guard_window w;
	char err[256];
	size_t n = 10000;
	unsigned char *in = kbh_guard_alloc(g, n);
	uint64_t *out = kbh_guard_alloc(g, sizeof *out);
	ck_assert_ptr_nonnull(in);
	ck_assert_ptr_nonnull(out);
	ck_assert_uint_eq((uintptr_t)in % 64, 0);
	ck_assert_uint_eq((uintptr_t)out % 64, 0);
	uint64_t want = 0;
	for (size_t i = 0; i < n; i++) {
		in[i] = (unsigned char)(i * 7);
		want += in[i];
	}
	ck_assert_int_eq(kbh_guard_publish(g, err, sizeof err), 0);
	ck_assert_int_eq(req(g, OP_SUM, (uintptr_t)in, n, (uintptr_t)out, &w),
			 0);
	ck_assert_int_eq(w.status, 0);
	ck_assert_uint_eq(*out, want); /* the child wrote into shared memory */
	ck_assert_uint_gt(kbh_guard_arena_used(g), n);
	kbh_guard_reset(g);
	ck_assert_uint_eq(kbh_guard_arena_used(g), 0);
	/* the next array starts at the same place, and the child cannot
	 * reach it before it is published */
	unsigned char *again = kbh_guard_alloc(g, n);
	ck_assert_ptr_eq(again, in);
	ck_assert_int_eq(req(g, OP_SUM, (uintptr_t)again, n, (uintptr_t)again,
			     &w),
			 -ECHILD);
	ck_assert_msg(strstr(kbh_guard_death(g), SEGV_DEATH), "%s",
		      kbh_guard_death(g));
	kbh_guard_stop(g);

	/* reading a page past an array's end faults in the child */
	g = start();
	in = kbh_guard_alloc(g, 4096 * 3);
	ck_assert_ptr_nonnull(kbh_guard_alloc(g, 64));
	ck_assert_int_eq(kbh_guard_publish(g, err, sizeof err), 0);
	ck_assert_int_eq(req(g, OP_PASTEND, (uintptr_t)in, 4096 * 3 - 4096, 0,
			     &w),
			 -ECHILD);
	kbh_guard_stop(g);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("guard");
	TCase *t = tcase_create("guard");
	tcase_set_timeout(t, 60);
	tcase_add_test(t, verify_cases);
	tcase_add_test(t, allowance_and_handoff);
	tcase_add_test(t, bound_holds);
	tcase_add_test(t, unexplained_cases);
	tcase_add_test(t, slack_rule);
	tcase_add_test(t, cal_gap_takes_off_load);
	tcase_add_test(t, gainful_rule);
	tcase_add_test(t, live_timing);
	tcase_add_test(t, live_unwatch);
	tcase_add_test(t, live_crash);
	tcase_add_test(t, live_confinement);
	tcase_add_test(t, live_arena);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return kb_check_run(suite());
}
