/* kbg_main.cu: the GPU timing driver (main of every CUDA problem's
 * eval.out): main(), the modes and the report's per-case results and
 * last lines.
 *
 *     POPCORN_FD=<fd> ./eval.out test|benchmark|profile|leaderboard cases.txt
 *
 * Theory of operation
 * -------------------
 * Two processes (../guard.h). main() resolves the trusted libc pointers
 * (harness.c), opens the report (exit 111 without POPCORN_FD) and then,
 * before any CUDA call, splits:
 *
 *   parent (trusted, kbg_run): owns the report, the mode (exit 2), the
 *     cases (exit 113), the run key, every device allocation, the data,
 *     the reference, the checks, the statistics and every verdict. It
 *     never maps or calls user code.
 *   child (untrusted, kbh_guard_start): confined; the only process that
 *     loads the submission and calls custom_kernel. It serves the
 *     parent's requests (kbg__child_op, kbg_child.cpp), and what it sends
 *     back (struct kbg_reply) is a claim the parent checks.
 *
 * A mode here is a loop over the cases: test makes one checked call per
 * case; benchmark, leaderboard and profile make warm-up calls, then timed
 * calls until the stopping rule says stop (kbh_stop_check), and report
 * the statistics, the cost and whether the case is suspect. Each call is
 * staged, run in the child, validated and checked by kbg_case.cpp; one
 * whose hold in the child timed out (no sentinel) is checked but not kept
 * as a sample: it counts as warm-up. The parent ends with _exit after
 * killing the child.
 *
 * README.md beside this file has the rest: the process split and what a
 * reply may claim, one call step by step, the hold and the sentinel,
 * how each measurement rule is met, what a case reports, whose fault
 * each error is and which file does what.
 */
#include "kbg_int.h"
#include "kbg_sys.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#pragma GCC visibility push(hidden)

using namespace kbg_drv;

namespace
{

/* The child's state: it must exist before the split (guard.h); the
 * parent never touches its copy. */
struct child g_child;

/* ---- modes ----------------------------------------------------------- */

int run_test(struct ctx *x, struct prepared *c)
{
	struct sample smp;

	KBG_STEP(kbg__alloc_case(x, c, 1, 1, 0));
	return kbg__one_call(x, 1, &smp);
}

struct bench_result {
	struct kbh_stats st;
	enum kbh_stop stop;
	double gap_med, gap_base, sample_wall_ns, win_med;
	uint32_t warmup;        /* untimed, checked calls */
	uint32_t hold_timeouts; /* calls whose hold ended by its timeout */
	uint32_t forged;        /* calls whose claims did not fit the window */
	uint32_t outside;       /* calls charged for GPU work outside a call */
	uint32_t host_calls;    /* timed on the host path (long or broken) */
	double claim_med;       /* the child's median claimed event time */
	double meas_med;        /* the parent's median measurement (sentinel) */
	uint32_t low_claims;    /* claims below the allowance (sentinel) */
	uint32_t early_probes;  /* probes launched again (sentinel) */
	double outside_ns;      /* charged to the samples, in all */
	uint64_t calls;         /* calls, warm-up included */
};

int run_bench(struct ctx *x, struct prepared *c, struct bench_result *r)
{
	const struct kbg_limits *lim = &c->lim;
	int nsets = c->lay.fresh ? 1 : c->lay.sets;
	struct sample smp;
	uint64_t t0, n_alloc;
	double *gaps, *wins, *claims, *meas;
	int rc = KBG_OK;

	memset(r, 0, sizeof *r);
	kbh_stats_init(&r->st);
	KBG_STEP(kbg__alloc_case(x, c, nsets, kSlots, !c->lay.fresh));
	if (!c->lay.fresh)
		for (int s = 0; s < nsets; s++)
			KBG_STEP(kbg__make_set(x, s));
	KBG_TRY(x, cudaDeviceSynchronize(), "preparing the benchmark");
	KBG_STEP(kbg__baseline_gap(x, &r->gap_base));
	x->outside_calls = x->host_calls = 0;
	x->last_long = 0;
	KBG_STEP(kbg__watch_start(x));

	/* Warm-up: staged and checked like the timed calls. */
	t0 = kbh_now_ns();
	for (uint32_t k = 0;
	     k < lim->warmup_min ||
	     (k < lim->warmup_max && kbh_now_ns() - t0 < lim->warmup_ns);
	     k++, r->warmup++)
		KBG_STEP(kbg__one_call(x, 1, &smp));

	/* What the warm-up saw outside its calls is not the samples'. */
	x->outside_calls = x->host_calls = x->early_probes = 0;
	n_alloc = lim->stop.max_runs ? lim->stop.max_runs : 100000;
	gaps = (double *)malloc(n_alloc * sizeof *gaps);
	wins = (double *)malloc(n_alloc * sizeof *wins);
	claims = (double *)malloc(n_alloc * sizeof *claims);
	meas = (double *)malloc(n_alloc * sizeof *meas);
	if (!gaps || !wins || !claims || !meas) {
		free(gaps);
		free(wins);
		free(claims);
		free(meas);
		kbg__msgf(x, "out of host memory");
		return KBG_INFRA;
	}
	if (x->mode == KBH_MODE_PROFILE)
		rc = kbg__child_profile(x, 1);
	t0 = kbh_now_ns();
	while (rc == KBG_OK) {
		int check = x->mode != KBH_MODE_PROFILE || r->st.n == 0 ||
			    r->st.n + 1 >= lim->stop.max_runs;
		rc = kbg__one_call(x, check, &smp);
		if (rc != KBG_OK)
			break;
		if (smp.unheld) {
			r->warmup++; /* checked, not timed (see the theory) */
			continue;
		}
		if (r->st.n < n_alloc) {
			gaps[r->st.n] = smp.gap_ns;
			wins[r->st.n] = smp.win_ns;
			claims[r->st.n] = smp.claim_ns;
			meas[r->st.n] = smp.meas_ns;
		}
		r->low_claims += (uint32_t)smp.low_claim;
		kbh_stats_add(&r->st, smp.ns);
		r->outside_ns += smp.outside_ns;
#ifdef KBG_SAMPLE_LOG
		fprintf(stderr, "S %d %.0f %.0f %.0f %.0f %d\n",
			(int)((x->ncalls - 1) % (uint64_t)x->nslots), smp.ns,
			smp.gap_ns, smp.win_ns, smp.claim_ns, (int)smp.path);
#endif
		r->stop = kbh_stop_check(&lim->stop, &r->st, kbh_now_ns() - t0);
		if (r->stop != KBH_STOP_CONTINUE)
			break;
	}
	if (x->mode == KBH_MODE_PROFILE && rc != KBG_CRASH) {
		int rc2 = kbg__child_profile(x, 0);
		if (rc == KBG_OK)
			rc = rc2;
	}
	r->hold_timeouts = x->hold_timeouts;
	r->forged = x->forged;
	r->calls = x->ncalls;
	if (rc == KBG_OK)
		rc = kbg__watch_stop(x);
	r->outside = x->outside_calls;
	r->host_calls = x->host_calls;
	r->early_probes = x->early_probes;
	if (rc == KBG_OK && r->st.n) {
		size_t n = r->st.n < n_alloc ? r->st.n : n_alloc;
		r->sample_wall_ns =
			(double)(kbh_now_ns() - t0) / (double)r->st.n;
		r->gap_med = kbg_median(gaps, n);
		r->win_med = kbg_median(wins, n);
		r->claim_med = kbg_median(claims, n);
		r->meas_med = kbg_median(meas, n);
	}
	free(gaps);
	free(wins);
	free(claims);
	free(meas);
	return rc;
}

int report_bench(struct ctx *x, size_t i, struct prepared *c,
		 const struct bench_result *r)
{
	struct kbh_peak peak;
	char why[256] = "";
	struct kbh_report *rep = x->rep;

	kbg_peak_derive(&x->dev, c->lay.ops, c->lay.min_work, &peak, NULL);
	kbh_report_stats(rep, i, &r->st);
	kbh_report_cost(rep, i, &c->lay.cost, &peak, r->st.mean);
	if (c->lay.cost.flops > 0 && r->st.mean > 0)
		kbh_report_bench(rep, i, "tflops", "%.3f",
				 c->lay.cost.flops / r->st.mean / 1e3);
	kbh_report_bench(rep, i, "stop", "%s", kbh_stop_name(r->stop));
	kbh_report_bench(rep, i, "warmup", "%u", (unsigned)r->warmup);
	kbh_report_bench(rep, i, "gap_ns", "%.0f (baseline %.0f)", r->gap_med,
			 r->gap_base);
	kbh_report_bench(rep, i, "sample_wall_ns", "%.0f", r->sample_wall_ns);
	kbh_report_bench(rep, i, "window_ns", "%.0f", r->win_med);
	if (x->sent) {
		kbh_report_bench(rep, i, "timing", "sentinel");
		kbh_report_bench(rep, i, "claim_ns", "%.0f", r->claim_med);
		kbh_report_bench(rep, i, "measured_ns", "%.0f", r->meas_med);
		kbh_report_bench(rep, i, "low_claims", "%u",
				 (unsigned)r->low_claims);
		kbh_report_bench(rep, i, "host_path", "%u (probes again %u)",
				 (unsigned)r->host_calls,
				 (unsigned)r->early_probes);
		kbh_report_bench(rep, i, "outside", "%u (%.0f ns charged)",
				 (unsigned)r->outside, r->outside_ns);
	}
	kbh_report_bench(rep, i, "hold", "%s",
			 x->sent   ? "sentinel"
			 : x->hold ? "on"
				   : "off");
	kbh_report_bench(rep, i, "hold_timeouts", "%u",
			 (unsigned)r->hold_timeouts);

	if (r->forged)
		snprintf(why, sizeof why,
			 "forged-timing: %u of %" PRIu64 " calls claimed times "
			 "that do not fit the harness's own clock window of "
			 "the call (the driver's code in the submission's "
			 "process was tampered with)",
			 (unsigned)r->forged, r->calls);
	else if (kbh_guard_too_many_clamped(r->outside, r->st.n))
		snprintf(why, sizeof why,
			 "outside-timing: in %u of %" PRIu64 " calls the "
			 "submission's process ran work on the GPU outside "
			 "its call (charged to the next call's time)",
			 (unsigned)r->outside, (uint64_t)r->st.n);
	else if (kbh_cost_suspect(&c->lay.cost, &peak, r->st.best))
		snprintf(why, sizeof why,
			 "below-floor: the best sample is faster than the "
			 "device's physical floor");
	else if (!x->sent && kbg_outlives(r->gap_med, r->gap_base, r->st.mean))
		snprintf(
			why, sizeof why,
			"outlives-timing: work was still running after the "
			"end event (a non-blocking stream or another thread?)");
	kbh_report_bench(rep, i, "status", "%s", why[0] ? "suspect" : "pass");
	if (why[0])
		kbh_report_bench(rep, i, "error", "%s", why);
	return KBG_OK;
}

int usage(const char *argv0)
{
	fprintf(stderr,
		"usage: POPCORN_FD=<fd> %s test|benchmark|profile|leaderboard "
		"<cases-file>\n",
		argv0);
	return KBH_EXIT_USAGE;
}

/* The last lines: system.*_end, the crash's reason (exit 115: the
 * worker shows it), check. */
int finish(struct ctx *x, int code)
{
	if (x->rep) {
		kbg__report_system_end(x);
		if (code == KBH_EXIT_CRASHED)
			kbh_report_kv(x->rep, "crash", "%s", x->msg);
		kbh_report_kv(x->rep, "check", "%s",
			      code == KBH_EXIT_OK ? "pass" : "fail");
	}
	return code;
}

int infra_exit(struct ctx *x)
{
	fprintf(stderr, "eval.out: %s\n", x->msg);
	return KBH_EXIT_DEVICE;
}

/* The child died after user code ran: the case fails with how (the
 * CPU harness does the same), nothing more runs (no process left to run
 * it in). */
int crash_exit(struct ctx *x, size_t i)
{
	fprintf(stderr, "eval.out: %s\n", x->msg);
	if (x->mode == KBH_MODE_TEST) {
		kbh_report_test(x->rep, i, "status", "fail");
		kbh_report_test(x->rep, i, "error", "%s", x->msg);
	} else {
		kbh_report_bench(x->rep, i, "status", "fail");
		kbh_report_bench(x->rep, i, "error", "%s", x->msg);
	}
	return KBH_EXIT_CRASHED;
}

/* Everything after the split: in the parent. */
int kbg_run(struct ctx &x, int argc, char **argv);

/* Ends the parent without exit handlers (none of ours need to run; no
 * user code ever registered one here). The child is killed and reaped
 * first, so that it (and its CUDA context) is gone when our status is
 * seen. Not through kbh_guard_stop: nothing it frees matters at _exit,
 * and its join of the guard's watcher thread can miss that thread's
 * wake-up and wait forever (seen under load in tests/cuda/
 * test_kbg_guard.cu). While the child lives (kbh_guard_death empty) it
 * is unreaped, so its pid is still its own. */
[[noreturn]] void kbg_exit(struct ctx &x, int code)
{
	kbh_watchdog_arm(0);
	if (x.g && !kbh_guard_death(x.g)[0]) {
		pid_t pid = (pid_t)kbh_guard_pid(x.g);
		if (pid > 0 && kill(pid, SIGKILL) == 0)
			while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
				;
	}
	kbh_report_close(x.rep);
	x.rep = NULL;
	fflush(NULL);
	_exit(code);
}

} // namespace

int main(int argc, char **argv)
{
	static struct ctx x;
	char err[512], fdnum[32];
	const char *fdv;

	if (kbh_trusted_init(err, sizeof err)) {
		fprintf(stderr, "eval.out: %s\n", err);
		return KBH_EXIT_DEVICE;
	}
	fdv = getenv("POPCORN_FD");
	snprintf(fdnum, sizeof fdnum, "%s", fdv ? fdv : "");
	if (kbh_report_open_env(&x.rep, err, sizeof err)) {
		fprintf(stderr, "eval.out: %s\n", err);
		return KBH_EXIT_NO_FD;
	}
	/* The split, before any CUDA call (each process makes its own
	 * context). The guard points a report fd of 0..2 at /dev/null in the
	 * child by POPCORN_FD, which opening the report removed. */
	if (fdnum[0])
		setenv("POPCORN_FD", fdnum, 1);
	/* Modules load when registered, not at a kernel's first launch,
	 * which would block inside a timed call (see the hold). */
	setenv("CUDA_MODULE_LOADING", "EAGER", 1);
	setenv("HIP_ENABLE_DEFERRED_LOADING", "0", 1); /* the same on ROCm */
	g_child.p = &kbg_problem_def;
	int rc = kbh_guard_start(&x.g, kArenaMax, kbg__child_op, &g_child, err,
				 sizeof err);
	unsetenv("POPCORN_FD");
	if (rc) {
		fprintf(stderr, "eval.out: starting the timing process: %s\n",
			err);
		kbg_exit(x, KBH_EXIT_DEVICE);
	}
	/* A reader that went away must give EPIPE, not kill us silently. */
	signal(SIGPIPE, SIG_IGN);
#ifdef KBG_SAMPLE_LOG
	/* The per-call log goes to memory (written at exit), so that
	 * logging does not change the timing it logs. */
	static char log_buf[64 << 20];
	setvbuf(stderr, log_buf, _IOFBF, sizeof log_buf);
#endif
	kbg_exit(x, kbg_run(x, argc, argv));
}

namespace
{

/* Everything after the split: in the parent. */
int kbg_run(struct ctx &x, int argc, char **argv)
{
	struct kbh_cases cases = {NULL, 0};
	struct prepared *prep;
	char err[512];
	int code = KBH_EXIT_OK;

	if (argc != 3 || kbh_mode_parse(argv[1], &x.mode))
		return usage(argv[0]);
	x.p = &kbg_problem_def;
	if (kbh_cases_load(argv[2], &cases, err, sizeof err)) {
		fprintf(stderr, "eval.out: %s\n", err);
		return KBH_EXIT_BAD_SPEC;
	}
	/* The seeds should not stay readable for the submission (when the
	 * worker asks). Not fatal: the run key below is what makes timed
	 * inputs unpredictable; the file only gives away each case's first
	 * call. */
	int src = kbh_cases_consume(argv[2]);
	if (src < 0)
		fprintf(stderr, "eval.out: warning: removing %s: %s\n", argv[2],
			strerror(-src));
	src = kbh_seed_random(&x.run_key);
	if (src < 0) {
		fprintf(stderr, "eval.out: getrandom: %s\n", strerror(-src));
		return KBH_EXIT_DEVICE;
	}
	prep = (struct prepared *)calloc(cases.n, sizeof *prep);
	if (!prep) {
		fprintf(stderr, "eval.out: out of memory\n");
		return KBH_EXIT_DEVICE;
	}
	for (size_t i = 0; i < cases.n; i++)
		if (kbg__prepare(x.p, x.mode, &cases.v[i], &prep[i], err,
				 sizeof err)) {
			fprintf(stderr, "eval.out: case %zu (%s): %s\n", i,
				cases.v[i].spec, err);
			return KBH_EXIT_BAD_SPEC;
		}
	kbh_watchdog_arm(kWatchdogS);

	if (kbg__init_device(&x) != KBG_OK)
		return infra_exit(&x);
	kbg__report_system_start(&x);
	if (kbg__init_child(&x) != KBG_OK || kbg__calibrate(&x) != KBG_OK)
		return infra_exit(&x);
	switch (kbg__load_submission(&x)) {
	case KBG_OK:
		break;
	case KBG_CRASH:
		kbg__fail_all(&x, prep, cases.n);
		return finish(&x, KBH_EXIT_CRASHED);
	case KBG_FAIL:
		kbg__fail_all(&x, prep, cases.n);
		return finish(&x, KBH_EXIT_FAILED);
	default:
		return infra_exit(&x);
	}

	if (x.mode == KBH_MODE_TEST) {
		size_t failed = 0;
		kbh_report_test_count(x.rep, cases.n);
		for (size_t i = 0; i < cases.n; i++) {
			int rc;
			kbh_report_test(x.rep, i, "spec", "%s", prep[i].c.spec);
			rc = kbg__end_case(&x, run_test(&x, &prep[i]));
			if (rc == KBG_INFRA)
				return infra_exit(&x);
			if (rc == KBG_CRASH) {
				code = crash_exit(&x, i);
				break;
			}
			if (rc == KBG_FAIL) {
				failed++;
				kbh_report_test(x.rep, i, "status", "fail");
				kbh_report_test(x.rep, i, "error", "%s", x.msg);
				/* A sticky error leaves a context unusable
				 * (the child's, or ours): the remaining tests
				 * cannot run. */
				if (x.child_sticky ||
				    cudaDeviceSynchronize() != cudaSuccess) {
					for (size_t j = i + 1; j < cases.n;
					     j++) {
						kbh_report_test(x.rep, j,
								"spec", "%s",
								prep[j].c.spec);
						kbh_report_test(x.rep, j,
								"status",
								"fail");
						kbh_report_test(
							x.rep, j, "error",
							"not run: an earlier test "
							"left the device unusable");
					}
					failed += cases.n - i - 1;
					break;
				}
				(void)cudaGetLastError();
			} else {
				kbh_report_test(x.rep, i, "status", "pass");
			}
		}
		if (code != KBH_EXIT_CRASHED)
			code = failed ? KBH_EXIT_FAILED : KBH_EXIT_OK;
	} else {
		kbh_report_bench_count(x.rep, cases.n);
		for (size_t i = 0; i < cases.n; i++) {
			struct bench_result r;
			int rc;
			kbh_report_bench(x.rep, i, "spec", "%s",
					 prep[i].c.spec);
			rc = kbg__end_case(&x, run_bench(&x, &prep[i], &r));
			if (rc == KBG_INFRA)
				return infra_exit(&x);
			if (rc == KBG_CRASH) {
				code = crash_exit(&x, i);
				break;
			}
			if (rc == KBG_FAIL) {
				kbh_report_bench(x.rep, i, "status", "fail");
				kbh_report_bench(x.rep, i, "error", "%s",
						 x.msg);
				code = KBH_EXIT_FAILED;
				break;
			}
			report_bench(&x, i, &prep[i], &r);
		}
	}
	code = finish(&x, code);
	kbg_sys_close(x.sys);
	if (!kbh_report_ok(x.rep)) {
		fprintf(stderr, "eval.out: writing the report failed\n");
		code = KBH_EXIT_NO_FD;
	}
	kbh_cases_free(&cases);
	free(prep);
	return code;
}

} // namespace

#pragma GCC visibility pop
