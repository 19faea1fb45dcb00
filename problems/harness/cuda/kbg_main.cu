/* kbg_main.cu: the GPU timing driver (main of every CUDA problem's
 * eval.out).
 *
 *     POPCORN_FD=<fd> ./eval.out test|benchmark|profile|leaderboard cases.txt
 *
 * Theory of operation
 * -------------------
 * Two processes (../guard.h). main() resolves the trusted libc pointers
 * (harness.c), opens the report (exit 111 without POPCORN_FD) and then,
 * before any CUDA call, splits:
 *
 *   parent (trusted): everything that decides a result. It owns the
 *     report, parses the mode (exit 2) and every case, running the
 *     problem's host-side setup on each (exit 113 on any bad case),
 *     removes the cases file when the worker asks (KBH_CASES_UNLINK=1)
 *     and draws the run key (getrandom); creates its own CUDA context,
 *     reads the device's attributes, opens NVML (dlopen; optional),
 *     writes the system.* keys; makes every device allocation, generates
 *     and stages the data, flushes L2, runs the reference, checks every
 *     output and input, keeps the statistics and writes every verdict.
 *     It never maps or calls user code.
 *   child (untrusted, kbh_guard_start): the only process that loads the
 *     submission and calls custom_kernel. Confined by the guard (no fds
 *     above 2 but its "done" pipe, its own seccomp filter: no new
 *     processes, no exec, no ptrace, no signals to others; the parent is
 *     not dumpable), it creates its own CUDA context and serves the
 *     parent's requests (kbg__child_op): INIT, LOAD (the guard's: the
 *     submission), OPEN (maps the work slots the parent exported with
 *     CUDA IPC), CALL (the timed region), BASELINE, PROFILE, CLOSE. It has
 *     no report channel and no key; the parent's memory, its device
 *     allocations and its context are out of its reach. What it sends back is a reply
 *     record in the guard's shared arena (struct kbg_reply: its event
 *     times, hold flags and a CUDA error code), read by the parent once
 *     the child is stopped again, and treated as a claim.
 * So nothing the submission does (write to any fd, exit(0), exit(110),
 * exit handlers, its own clock_gettime, patching the driver's code in its
 * process) can write, end or alter the report: the worst it can do is
 * crash (status fail, check: fail, exit 115) or lie about its own time
 * (below).
 *
 * Buffers of one case, all in the parent's context, separate cudaMallocs:
 * `sets` data sets, each its inputs as generated (pristine) and, for data
 * sets made once per case, the expected result in host memory; one device
 * buffer for the expected result of the call being checked; a scratch
 * buffer for reference and check; two work slots (inputs and outputs the
 * submission gets), used alternately so consecutive calls see different
 * addresses. Only the slots are exported (cudaIpcGetMemHandle of each
 * allocation's base): at case start an OPEN request hands the child their
 * handles, at case end CLOSE has it unmap them before the parent frees
 * them. Every slot buffer is a multiple of 2 MiB (zeroed when made): the
 * driver may sub-allocate small cudaMallocs from one 2 MiB block and
 * shares the whole block through IPC, so a small output must not share
 * a block with, say, the expected result. The child never gets a handle
 * or pointer to anything else.
 *
 * Seeds: a case's first call (test mode's only one) uses data from the
 * case seed alone, so failures replay; every later call's data (and the
 * choice among data sets, and every set but the first) also depends on
 * the run key, 64 bits from getrandom() drawn after the split, in the
 * parent: no file, argument or call count predicts the inputs of a timed
 * call.
 *
 * Expected results: never on the device while the submission runs. With
 * fresh data the reference runs only after the call (and its work) ended,
 * on inputs regenerated from the seed; a set's result is copied in from
 * host memory after the call. The device buffer and the reference's
 * scratch are zeroed after every check. (They are in the parent's context
 * as well, which the child cannot map.)
 *
 * One call (every call is staged the same way, warm-up included); the
 * child is stopped (SIGSTOP) throughout 1-3 and 6:
 *   1. data (parent): fresh data (layout.fresh, and test mode) is
 *      generated into set 0 from the call's seed; otherwise a set is
 *      drawn at random among sets made once per case;
 *   2. the set's inputs are copied into the slot's inputs (device to
 *      device) and the slot's outputs are poisoned with 0xFF bytes (NaN for
 *      floats, 0xFFFFFFFF for integers), so unwritten output fails;
 *   3. L2 is flushed: persisting lines (a submission's access-policy
 *      window) are made normal (cudaCtxResetPersistingL2Cache), then
 *      kbg_flush_bytes(L2) = 4x L2 (>= 64 MiB) is streamed through it with
 *      L2-allocating loads (kbg_dev.cu), and the parent synchronises its
 *      context (L2 is physical: the flush holds for the child's context
 *      too);
 *   4. CALL request (child): stamp t0; (benchmark, leaderboard, profile)
 *      the hold on the legacy stream (kbg_dev_hold: a kernel taking every
 *      thread slot of every SM that waits until the host releases it, at
 *      most kHoldTimeoutNs); start event on the legacy default stream;
 *      problem->call (the submission's custom_kernel) on the slot's
 *      buffers as mapped in the child; end event; release the hold;
 *      cudaDeviceSynchronize(); stamp t1; a tail event, synchronised; the
 *      event times go into the reply. The parent reads its own clock
 *      around the request (t_go, t_seen: guard.c);
 *   5. the reply is validated (parent): well-formed (every number finite
 *      and >= 0, flags 0 or 1, its sequence number); [t0, t1] inside
 *      [t_go, t_seen] and the event time start->end no longer than
 *      t_seen - t_go (else the call's timing is forged: the case is
 *      suspect and the sample becomes the window). Benchmark and
 *      leaderboard modes on NVIDIA GPUs score the parent's own
 *      measurement of the call (README.md, "The sentinel"), which the
 *      claim may refine by at most max(1 %, 2 us) (kbg_time_score).
 *      Elsewhere (test and profile modes, HIP, and the test-only
 *      -DKBG_NO_SENTINEL) the sample is the child's event time, so a
 *      child that tampers with the driver's code in its process can
 *      claim a shorter time than it
 *      took -- never longer than the parent's window, and never below
 *      the physical floor without the case being suspect;
 *   6. the expected result is made (fresh: regenerate, reference; sets:
 *      copied from host memory), the output is checked against it, and the
 *      slot's inputs are compared bytewise with the pristine set (a
 *      submission that modifies its inputs fails). In benchmark and
 *      leaderboard modes every call is checked; in profile mode the first
 *      and the last.
 *
 * Why the legacy stream and the tail event: work the submission launches
 * on the legacy stream, or on any blocking stream it created, is ordered
 * before the end event (the legacy stream waits for all blocking streams),
 * so the event pair covers it. Work on a non-blocking stream or from
 * another thread is not; cudaDeviceSynchronize() waits for it, and the gap
 * elapsed(end, tail) then grows by however long it outlived the end event.
 * The median gap is compared with the same gap measured with no
 * submission work (BASELINE; kbg_outlives); a larger one marks the case
 * suspect. Both gaps are the child's claims: the check catches honest
 * driver code timing a submission that leaves work behind, not a child
 * that rewrites the driver (that one is bounded as in 5).
 *
 * Why the hold: without it the device is idle when the host records the
 * start event, so the event runs at once and the clock then waits for
 * the host to launch the submission's first kernel. That host latency
 * (several microseconds, drifting with the CPU's state over hundreds of
 * milliseconds) was in every sample and made ranked scores of one
 * submission differ by over 1% between processes (bench/gpu/run.sh (b);
 * bench/results/h100-bench-gpu-hold-2026-11-22.txt). Held, the start
 * event and the whole call are enqueued before the device reaches them.
 * The hold occupies every SM, so work on a non-blocking stream cannot run
 * unseen meanwhile: it starts when the timed call starts, and the gap
 * check above still sees it. A call that blocks on the device inside
 * custom_kernel (a synchronize, a synchronous copy, its own stream
 * synchronised before it returns, as the task text allows) waits for the
 * hold's timeout; its start event then ran when the hold ended, which may
 * be after the submission's own work started, so such a call's sample is
 * not kept (it counts as warm-up; hold_timeouts) and, from the second
 * such call of a run, timed calls are not held any more: the start event
 * runs as the call starts and the sample keeps the host's launch latency,
 * never less than the work took. Modules load eagerly
 * (CUDA_MODULE_LOADING=EAGER), so a first launch does not block. Not held: copy
 * engine work (cudaMemcpyAsync) on a non-blocking stream can run during
 * the hold, for as long as the host spends inside custom_kernel. The
 * hold, its mapped release word and the events all live in the child's
 * context; the parent's context is idle (synchronised) during a request.
 * With the sentinel (ranked modes on NVIDIA GPUs) the hold is the
 * parent's watch instead (README.md, "The sentinel"), released when the
 * child says it launched, or kbg_time_release_ns after "go" (an empty
 * call's launch + 20 us: a call that blocks inside custom_kernel, or
 * spends host time before its GPU work), counted in hold_timeouts; such
 * a call is timed from the release, on the host path, and kept.
 *
 * Timing modes: before any user code, a few CALL requests that skip
 * custom_kernel measure the guard's own overhead (system.guard). Per
 * case, warm-up calls (kbg_limits: at least warmup_min, until warmup_ns
 * has passed, at most warmup_max) are staged and checked like timed ones
 * but not recorded. Then samples are taken until the stopping rule
 * (harness.h kbh_stop_check: relative standard error < 0.1% after
 * min_runs, or max_runs, or the wall-time cap) says stop. Reported:
 * benchmark.<i>.{spec,runs,mean,std,err,best,worst} (ns), bytes, gbps,
 * flops, gflops, tflops, floor_ns, stop, warmup, gap_ns, sample_wall_ns,
 * window_ns (the parent's median request window t_seen - t_go of the
 * timed calls: an upper bound of every sample), hold (on/off: off only
 * where the hold could not be set up), hold_timeouts (calls, warm-up
 * included, whose hold timed out), status. status is "suspect"
 * (benchmark.<i>.error says why) when a call's timing was forged (5),
 * when the best sample is below the physical floor (kbg_peak_derive), or
 * when work outlived the timed region.
 *
 * Faults: an error before the submission first ran is the platform's
 * (exit 110). After it ran, CUDA errors are the submission's (the failing
 * test or benchmark gets status fail with the CUDA error, exit 112),
 * except those that only a broken device or driver produces
 * (kbg_is_infra_error: ECC, lost device, driver mismatch), which stay
 * 110; the child reports a code (never a message: the parent formats it
 * with cudaGetErrorString), and the same rules apply to it. A sticky
 * error in the child's context (one a later synchronize still returns)
 * leaves it unable to run anything: the remaining tests are reported as
 * not run. When the child dies or exits during a request after user code
 * ran (a crash, exit() in custom_kernel), the case gets status fail with
 * an error naming how it ended (kbh_guard_death), `crash: <why>`,
 * check: fail, and the run exits 115. Bad cases exit 113, a missing
 * POPCORN_FD 111, bad usage 2; the parent's watchdog exits 114 (the
 * child dies with it: PR_SET_PDEATHSIG). Right before the first request
 * that runs custom_kernel the report gets "user-code: started" (the
 * worker reads it: harnesses that share their process with the
 * submission cannot tell their own 110 from the submission's).
 *
 * The submission: not part of this executable. The worker builds it
 * alone into a shared object (KBH_SUBMISSION names it); after INIT and
 * the calibration, the child loads it (kbh_guard_load: dlopen after its
 * confinement, so whatever runs on load runs there) and reference.cu calls
 * KBH_ENTRY(custom_kernel). The parent never maps it. Both this
 * executable and the object use the shared CUDA runtime: one runtime and
 * one context in the child.
 *
 * Files: kbg_int.h, the driver's internal header (constants, the request
 * protocol, the child's and the parent's state, what the files call in
 * each other: kbg__*); kbg_child.cpp, the child's side (kbg__child_op);
 * kbg_parent.cpp, the parent's helpers (messages, error classes), device
 * and system information and its requests to the child; kbg_case.cpp,
 * cases, their buffers and one call; this file, the modes, the report's
 * last lines and main(). Device kernels (the flush, the hold,
 * comparisons) are kbg_dev.cu's, pure host decisions kbg_model.c's, NVML
 * kbg_sys.c's. The driver's files hold no device code, so all but this one
 * are .cpp: nvcc hands them to the host compiler alone (about 1 s each
 * instead of the 3-4 s its CUDA pipeline spends on any .cu file, which
 * every cold harness build pays per file; hipcc compiles .cpp as HIP
 * either way). This file, host code too, keeps the name the records and
 * documents use.
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

namespace {

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
	uint32_t warmup;  /* untimed, checked calls */
	uint32_t hold_timeouts; /* calls whose hold ended by its timeout */
	uint32_t forged;  /* calls whose claims did not fit the window */
	uint32_t outside; /* calls charged for GPU work outside a call */
	uint32_t host_calls; /* timed on the host path (long or broken) */
	double claim_med; /* the child's median claimed event time */
	double meas_med;  /* the parent's median measurement (sentinel) */
	uint32_t low_claims; /* claims below the allowance (sentinel) */
	uint32_t early_probes; /* probes launched again (sentinel) */
	double outside_ns; /* charged to the samples, in all */
	uint64_t calls;	  /* calls, warm-up included */
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
		r->stop = kbh_stop_check(&lim->stop, &r->st,
					 kbh_now_ns() - t0);
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
		r->sample_wall_ns = (double)(kbh_now_ns() - t0) / (double)r->st.n;
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
			 x->sent ? "sentinel" : x->hold ? "on" : "off");
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
	else if (!x->sent &&
		 kbg_outlives(r->gap_med, r->gap_base, r->st.mean))
		snprintf(why, sizeof why,
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
	int rc = kbh_guard_start(&x.g, kArenaMax, kbg__child_op, &g_child,
				 err, sizeof err);
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

namespace {

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
		fprintf(stderr, "eval.out: warning: removing %s: %s\n",
			argv[2], strerror(-src));
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
					for (size_t j = i + 1; j < cases.n; j++) {
						kbh_report_test(x.rep, j, "spec", "%s",
								prep[j].c.spec);
						kbh_report_test(x.rep, j, "status",
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
			kbh_report_bench(x.rep, i, "spec", "%s", prep[i].c.spec);
			rc = kbg__end_case(&x, run_bench(&x, &prep[i], &r));
			if (rc == KBG_INFRA)
				return infra_exit(&x);
			if (rc == KBG_CRASH) {
				code = crash_exit(&x, i);
				break;
			}
			if (rc == KBG_FAIL) {
				kbh_report_bench(x.rep, i, "status", "fail");
				kbh_report_bench(x.rep, i, "error", "%s", x.msg);
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
