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
 *     parent's requests (child_op): INIT, LOAD (the guard's: the
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
 *      suspect and the sample becomes the window). The sample is the
 *      child's event time. It cannot come from anywhere else (only the
 *      device knows when the submission's first kernel started), so a
 *      child that tampers with the driver's code in its process can claim
 *      a shorter time than it took -- never longer than the parent's
 *      window, and never below the physical floor without the case being
 *      suspect. The CPU harness's clamp rule (claim within a calibrated
 *      slack of the window) is not applied: the host time spent enqueuing
 *      inside custom_kernel is in the window but legitimately not in the
 *      device time (the hold hides it), so an honest submission that
 *      launches many kernels would be clamped;
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
 */
#include "guard.h"
#include "kbg.h"
#include "kbg_api.h"
#include "kbg_dev.h"
#include "kbg_sys.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#pragma GCC visibility push(hidden)

namespace {

const int kSlots = 2;
const int kMaxSets = 8;
const unsigned kWatchdogS = 1200;
const int kBaselineGaps = 7;
/* The longest the hold waits for the host to enqueue a timed call (a
 * call that blocks on the device inside custom_kernel waits this long,
 * then runs as if there were no hold). */
const uint64_t kHoldTimeoutNs = 1000000;
/* Address space reserved for the guard's arena (it holds one reply
 * record; the guard wants at least 64 MiB of address space). */
const size_t kArenaMax = (size_t)64 << 20;
/* Size granule of every buffer exported to the child (see the theory). */
const size_t kIpcGranule = (size_t)2 << 20;
/* Empty requests timed before any user code (system.guard). */
const int kCalCalls = 24;
/* Device time may exceed the parent's window by this much before the
 * claim counts as forged: the event timer and CLOCK_MONOTONIC are
 * different clocks. Generous on purpose: a claim longer than the window
 * only ever costs the submission, so the tolerance gives nothing away. */
const double kClockTolRel = 1e-3;
const double kClockTolNs = 1000.0;

/* Step results: 0 ok; KBG_FAIL the submission failed (ctx.msg says why);
 * KBG_CRASH the child died or exited after user code ran (ctx.msg says
 * how); KBG_INFRA a platform error (ctx.msg says which). */
enum { KBG_OK = 0, KBG_FAIL = 1, KBG_CRASH = 2, KBG_INFRA = -1 };

/* ---- the request protocol (parent <-> child) -------------------------- *
 *
 * Every argument starts with the request's sequence number; the child
 * copies it into its reply, so a reply left over from an earlier request
 * (or none at all: the parent fills the record with 0xFF bytes before
 * each request) is told apart. */
enum : uint32_t {
	OP_INIT = KBH_GUARD_OP_USER, /* context, events, hold; before user code */
	OP_OPEN,		     /* map the case's work slots */
	OP_CALL,		     /* the timed region */
	OP_BASELINE,		     /* end->tail gap with no work */
	OP_PROFILE,		     /* cudaProfilerStart (flag 1) / Stop (0) */
	OP_CLOSE,		     /* unmap the work slots */
};

/* Where in the child a CUDA error happened (reply.where); the parent
 * names it. 0: no error. */
enum : uint32_t {
	W_NONE = 0,
	W_INIT,
	W_OPEN,
	W_ARGS,
	W_START,
	W_END,
	W_RUN,
	W_TAIL,
	W_LEFT,
	W_EVENTS,
	W_BASELINE,
	W_CLOSE,
	W_COUNT
};

const char *const kWhere[W_COUNT] = {
	"",
	"initialising the submission's process",
	"mapping the work buffers in the submission's process",
	"in the request's arguments",
	"recording the start event",
	"recording the end event",
	"running custom_kernel",
	"recording the tail event",
	"", /* W_LEFT has its own wording */
	"reading events",
	"calibrating",
	"unmapping the work buffers in the submission's process",
};

/* The child's answer, in the guard's arena (the parent allocates it,
 * the child writes it before posting "done", the parent copies it once
 * while the child is stopped). Every field is a claim. */
struct kbg_reply {
	uint64_t seq;
	double dev_ns;		 /* CALL: event time start -> end */
	double gap_ns;		 /* CALL: end -> tail; BASELINE: its median */
	int32_t err;		 /* cudaError_t of the first failure, or 0 */
	uint32_t where;		 /* W_* of it */
	uint32_t hold;		 /* INIT: hold set up; CALL: this call held */
	uint32_t hold_timed_out; /* CALL: the hold ended by its timeout */
	uint32_t sticky;	 /* after an error: the context stays broken */
	uint32_t pad;
};

struct op_init {
	uint64_t seq;
	uint64_t reply; /* address of the reply record (same in both) */
	uint32_t hold;	/* set up the hold */
	uint32_t pad;
};

struct op_open {
	uint64_t seq;
	uint32_t n_in, n_out, nslots, pad;
	cudaIpcMemHandle_t in[kSlots][KBG_MAX_BUFS];
	cudaIpcMemHandle_t out[kSlots][KBG_MAX_BUFS];
};

struct op_call {
	uint64_t seq;
	uint32_t slot;
	uint32_t hold;	/* hold this call */
	uint32_t empty; /* skip problem->call (calibration) */
	uint32_t params_size;
	alignas(16) unsigned char params[KBG_PARAMS_MAX];
};

struct op_flag {
	uint64_t seq;
	uint32_t flag;
	uint32_t pad;
};

static_assert(sizeof(struct op_open) <= KBH_GUARD_ARG_MAX, "OPEN too big");
static_assert(sizeof(struct op_call) <= KBH_GUARD_ARG_MAX, "CALL too big");

/* ---- the child's side -------------------------------------------------- *
 *
 * Runs in the untrusted process, interleaved with user code: nothing here
 * decides anything; it only does what a request says and reports. */

struct child {
	const struct kbg_problem *p;
	struct kbg_reply *reply;
	cudaEvent_t ev_start, ev_end, ev_tail;
	int hold;
	unsigned hold_gen;
	int open;
	uint32_t nslots, n_in, n_out;
	void *in[kSlots][KBG_MAX_BUFS];
	void *out[kSlots][KBG_MAX_BUFS];
	alignas(16) unsigned char params[KBG_PARAMS_MAX];
};

/* Records the first failure, and whether the context is left broken: a
 * sticky error is returned again by a synchronize after the last error
 * has been taken. */
void child_fail(struct kbg_reply *r, cudaError_t e, uint32_t where)
{
	if (r->err)
		return;
	r->err = (int32_t)e;
	r->where = where;
	(void)cudaGetLastError();
	r->sticky = cudaDeviceSynchronize() != cudaSuccess;
	(void)cudaGetLastError();
}

void child_init(struct child *c, const struct op_init *a,
		struct kbg_reply *r)
{
	cudaError_t e;

	c->reply = (struct kbg_reply *)(uintptr_t)a->reply;
	if ((e = cudaSetDevice(0)) != cudaSuccess ||
	    (e = cudaFree(0)) != cudaSuccess) {
		child_fail(r, e, W_INIT);
		return;
	}
	/* The stream-ordered allocator keeps what is freed (as PyTorch's
	 * caching allocator does): otherwise the synchronize after each call
	 * hands the memory back to the driver, which took 0.6 ms for 512 MiB
	 * on an H100 and read as work outliving the call. */
	cudaMemPool_t pool;
	if (cudaDeviceGetDefaultMemPool(&pool, 0) == cudaSuccess) {
		uint64_t keep = UINT64_MAX;
		(void)cudaMemPoolSetAttribute(pool,
					      cudaMemPoolAttrReleaseThreshold,
					      &keep);
	}
	(void)cudaGetLastError();
	if (a->hold) {
		c->hold = kbg_dev_hold_init() == 0;
		(void)cudaGetLastError();
	}
	if ((e = cudaEventCreate(&c->ev_start)) != cudaSuccess ||
	    (e = cudaEventCreate(&c->ev_end)) != cudaSuccess ||
	    (e = cudaEventCreate(&c->ev_tail)) != cudaSuccess ||
	    (e = cudaDeviceSynchronize()) != cudaSuccess) {
		child_fail(r, e, W_INIT);
		return;
	}
	r->hold = (uint32_t)c->hold;
}

/* Unmaps every slot buffer; the first error goes into r (may be NULL). */
void child_close(struct child *c, struct kbg_reply *r)
{
	for (int w = 0; w < kSlots; w++)
		for (int j = 0; j < KBG_MAX_BUFS; j++) {
			void **p[2] = {&c->in[w][j], &c->out[w][j]};
			for (int k = 0; k < 2; k++) {
				if (!*p[k])
					continue;
				cudaError_t e = cudaIpcCloseMemHandle(*p[k]);
				if (e != cudaSuccess && r)
					child_fail(r, e, W_CLOSE);
				*p[k] = NULL;
			}
		}
	c->open = 0;
}

/* Maps n handles into ptr[] (NULL where not mapped). 0, or the error. */
cudaError_t child_map(void **ptr, const cudaIpcMemHandle_t *h, uint32_t n)
{
	for (uint32_t j = 0; j < n; j++) {
		cudaError_t e = cudaIpcOpenMemHandle(
			&ptr[j], h[j], cudaIpcMemLazyEnablePeerAccess);
		if (e != cudaSuccess) {
			ptr[j] = NULL;
			return e;
		}
	}
	return cudaSuccess;
}

void child_open(struct child *c, const struct op_open *a, struct kbg_reply *r)
{
	cudaError_t e = cudaSuccess;

	child_close(c, NULL);
	if (a->n_in < 1 || a->n_in > KBG_MAX_BUFS || a->n_out < 1 ||
	    a->n_out > KBG_MAX_BUFS || a->nslots < 1 ||
	    a->nslots > (uint32_t)kSlots) {
		child_fail(r, cudaErrorInvalidValue, W_ARGS);
		return;
	}
	c->n_in = a->n_in;
	c->n_out = a->n_out;
	c->nslots = a->nslots;
	for (uint32_t w = 0; w < a->nslots && e == cudaSuccess; w++) {
		e = child_map(c->in[w], a->in[w], a->n_in);
		if (e == cudaSuccess)
			e = child_map(c->out[w], a->out[w], a->n_out);
	}
	if (e != cudaSuccess) {
		child_fail(r, e, W_OPEN);
		child_close(c, NULL);
		return;
	}
	c->open = 1;
}

/* The timed region (the theory's step 4). t0 right before the hold is
 * launched, t1 right after the synchronize: as guard.h asks, the claim
 * covers everything the device did for the call. */
void child_call(struct child *c, const struct op_call *a,
		struct kbg_reply *r, uint64_t *t0, uint64_t *t1)
{
	void *in[KBG_MAX_BUFS] = {}, *out[KBG_MAX_BUFS] = {};
	cudaError_t e;
	float ms = 0;

	if (!a->empty) {
		if (!c->open || a->slot >= c->nslots ||
		    a->params_size > KBG_PARAMS_MAX) {
			child_fail(r, cudaErrorInvalidValue, W_ARGS);
			return;
		}
		for (uint32_t j = 0; j < c->n_in; j++)
			in[j] = c->in[a->slot][j];
		for (uint32_t j = 0; j < c->n_out; j++)
			out[j] = c->out[a->slot][j];
		memcpy(c->params, a->params, a->params_size);
	}
	int hold = a->hold && c->hold;
	unsigned gen = 0;
	*t0 = kbh_now_ns();
	if (hold) {
		gen = ++c->hold_gen;
		if (kbg_dev_hold(gen, kHoldTimeoutNs)) {
			/* not launched: time without it from now on */
			(void)cudaGetLastError();
			c->hold = hold = 0;
		}
	}
	e = cudaEventRecord(c->ev_start, cudaStreamLegacy);
	if (e != cudaSuccess) {
		if (hold)
			kbg_dev_release(gen);
		*t1 = kbh_now_ns();
		child_fail(r, e, W_START);
		return;
	}
	if (!a->empty)
		c->p->call(c->params, in, out);
	e = cudaEventRecord(c->ev_end, cudaStreamLegacy);
	if (hold)
		kbg_dev_release(gen);
	if (e != cudaSuccess) {
		*t1 = kbh_now_ns();
		child_fail(r, e, W_END);
		return;
	}
	e = cudaDeviceSynchronize();
	*t1 = kbh_now_ns();
	if (e != cudaSuccess) {
		child_fail(r, e, W_RUN);
		return;
	}
	if ((e = cudaEventRecord(c->ev_tail, cudaStreamLegacy)) !=
		    cudaSuccess ||
	    (e = cudaEventSynchronize(c->ev_tail)) != cudaSuccess) {
		child_fail(r, e, W_TAIL);
		return;
	}
	if ((e = cudaGetLastError()) != cudaSuccess) {
		child_fail(r, e, W_LEFT);
		return;
	}
	if ((e = cudaEventElapsedTime(&ms, c->ev_start, c->ev_end)) !=
	    cudaSuccess) {
		child_fail(r, e, W_EVENTS);
		return;
	}
	r->dev_ns = (double)ms * 1e6;
	if ((e = cudaEventElapsedTime(&ms, c->ev_end, c->ev_tail)) !=
	    cudaSuccess) {
		child_fail(r, e, W_EVENTS);
		return;
	}
	r->gap_ns = (double)ms * 1e6;
	r->hold = (uint32_t)hold;
	r->hold_timed_out = hold && kbg_dev_hold_timed_out(gen);
}

/* The end->tail gap with no submission work (median of a few). */
void child_baseline(struct child *c, struct kbg_reply *r)
{
	double g[kBaselineGaps];
	cudaError_t e;
	float ms = 0;

	for (int i = 0; i < kBaselineGaps; i++) {
		if ((e = cudaEventRecord(c->ev_end, cudaStreamLegacy)) !=
			    cudaSuccess ||
		    (e = cudaDeviceSynchronize()) != cudaSuccess ||
		    (e = cudaEventRecord(c->ev_tail, cudaStreamLegacy)) !=
			    cudaSuccess ||
		    (e = cudaEventSynchronize(c->ev_tail)) != cudaSuccess ||
		    (e = cudaEventElapsedTime(&ms, c->ev_end, c->ev_tail)) !=
			    cudaSuccess) {
			child_fail(r, e, W_BASELINE);
			return;
		}
		g[i] = (double)ms * 1e6;
	}
	r->gap_ns = kbg_median(g, kBaselineGaps);
}

/* kbh_guard_fn: one request. Returns -EINVAL for an unknown operation or
 * a short argument (a bug of the parent's), else 0: the outcome is in
 * the reply. */
int child_op(void *ctx, uint32_t op, const void *arg, size_t size,
	     uint64_t *t0, uint64_t *t1)
{
	struct child *c = (struct child *)ctx;
	struct kbg_reply r;
	union {
		struct op_init init;
		struct op_open open;
		struct op_call call;
		struct op_flag flag;
	} a;
	size_t want;

	switch (op) {
	case OP_INIT:
		want = sizeof a.init;
		break;
	case OP_OPEN:
		want = sizeof a.open;
		break;
	case OP_CALL:
		want = sizeof a.call;
		break;
	case OP_BASELINE:
	case OP_PROFILE:
	case OP_CLOSE:
		want = sizeof a.flag;
		break;
	default:
		return -EINVAL;
	}
	if (size != want)
		return -EINVAL;
	memcpy(&a, arg, size);
	memset(&r, 0, sizeof r);
	memcpy(&r.seq, &a, sizeof r.seq);
	switch (op) {
	case OP_INIT:
		child_init(c, &a.init, &r);
		break;
	case OP_OPEN:
		child_open(c, &a.open, &r);
		break;
	case OP_CALL:
		child_call(c, &a.call, &r, t0, t1);
		break;
	case OP_BASELINE:
		*t0 = kbh_now_ns();
		child_baseline(c, &r);
		*t1 = kbh_now_ns();
		break;
	case OP_PROFILE:
		/* A no-op without a profiler; its error is never kept. */
		(void)(a.flag.flag ? cudaProfilerStart() : cudaProfilerStop());
		(void)cudaGetLastError();
		break;
	case OP_CLOSE: {
		/* nothing of ours may still use the mappings */
		cudaError_t e = cudaDeviceSynchronize();
		if (e != cudaSuccess)
			child_fail(&r, e, W_CLOSE);
		child_close(c, &r);
		break;
	}
	}
	if (c->reply)
		memcpy(c->reply, &r, sizeof r);
	return 0;
}

/* ---- the parent's side -------------------------------------------------- */

/* Pristine inputs on the device; for problems with data sets made once
 * per case (layout.fresh == 0) also the set's expected result, kept in
 * host memory: never on the device while the submission runs. */
struct data_set {
	void *in[KBG_MAX_BUFS];
	void *exp_host; /* cudaMallocHost, exp_bytes; NULL for fresh data */
	uint64_t seed;
};

/* What the submission gets: exported to the child (the handles). */
struct work_slot {
	void *in[KBG_MAX_BUFS];
	void *out[KBG_MAX_BUFS];
	cudaIpcMemHandle_t in_h[KBG_MAX_BUFS];
	cudaIpcMemHandle_t out_h[KBG_MAX_BUFS];
};

struct prepared {
	struct kbh_case c;
	struct kbg_layout lay;
	struct kbg_limits lim;
	uint64_t seed;
	alignas(16) unsigned char params[KBG_PARAMS_MAX];
};

struct sample {
	double ns;     /* the child's event time start -> end (or the
			* window, when forged) */
	double gap_ns; /* the child's event time end -> tail */
	double win_ns; /* the parent's window t_seen - t_go */
	int forged;    /* the claim does not fit the window */
	int unheld;    /* held, but the hold timed out: the start event is
			* not to be trusted, the sample not kept */
};

struct ctx {
	enum kbh_mode mode;
	struct kbh_report *rep;
	const struct kbg_problem *p;
	struct kbg_devinfo dev;
	struct kbg_sys *sys;
	void *flush_buf;
	size_t flush_bytes;
	unsigned *sink;
	int called; /* a request that runs custom_kernel has been made */
	int hold;   /* timed calls are held (the child's INIT said so) */
	uint32_t hold_timeouts; /* of the current case */
	uint32_t run_hold_timeouts; /* of the run: from the second, unheld */
	uint32_t forged;	/* calls of the current case, warm-up included */
	char msg[1024];

	/* the child */
	struct kbh_guard *g;
	struct kbg_reply *reply; /* in the arena */
	uint64_t seq;
	int crashed;	  /* it died after user code ran (msg says how) */
	int child_sticky; /* it reported a sticky error */
	int opened;	  /* it has the current case's slots mapped */

	/* the case being run */
	struct prepared *cur;
	struct data_set sets[kMaxSets];
	int nsets;
	struct work_slot slots[kSlots];
	int nslots;
	void *scratch;
	/* The expected result of the current call, on the device only from
	 * after the call until its check: computed (fresh data) or copied
	 * from the set's host copy into it after the submission returned,
	 * zeroed again after the check. */
	void *exp;
	uint64_t ncalls;
	struct kbh_rng pick;
	/* Per-run randomness (getrandom in the parent after the split,
	 * before any user code): mixed into the seeds of every call but each
	 * case's first, so that no file, argument or call count tells a
	 * submission its future inputs. */
	uint64_t run_key;
};

/* The child's state: it must exist before the split (guard.h); the
 * parent never touches its copy. */
struct child g_child;

void msgf(struct ctx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void msgf(struct ctx *x, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(x->msg, sizeof x->msg, fmt, ap);
	va_end(ap);
}

} // namespace

/* Errors only a broken device, driver or node produces: never the
 * submission's fault, whatever ran before. */
extern "C" int kbg_is_infra_error(int code)
{
#define KBG_INFRA_CASE(c) case c:
	switch ((cudaError_t)code) {
	KBG_INFRA_ERRORS(KBG_INFRA_CASE)
		return 1;
	default:
		return 0;
	}
}

namespace {

/* Classifies a CUDA error met while doing `what`. */
int blame(struct ctx *x, cudaError_t e, const char *what)
{
	msgf(x, KBG_API " error %s: %s (%s)", what, cudaGetErrorString(e),
	     cudaGetErrorName(e));
	return x->called && !kbg_is_infra_error((int)e) ? KBG_FAIL : KBG_INFRA;
}

/* A problem hook returned rc (0 or a negative cudaError_t or errno). */
int hook(struct ctx *x, int rc, const char *what)
{
	cudaError_t e;

	if (rc == 0 && (e = cudaGetLastError()) != cudaSuccess)
		return blame(x, e, what);
	if (rc == 0)
		return KBG_OK;
	if (rc < 0 && -rc < 10000)
		return blame(x, (cudaError_t)-rc, what);
	msgf(x, "%s failed (%d)", what, rc);
	return x->called ? KBG_FAIL : KBG_INFRA;
}

#define KBG_TRY(x, expr, what)                                            \
	do {                                                               \
		cudaError_t e_ = (expr);                                   \
		if (e_ != cudaSuccess)                                     \
			return blame((x), e_, (what));                     \
	} while (0)

#define KBG_STEP(expr)                                                     \
	do {                                                               \
		int r_ = (expr);                                           \
		if (r_ != KBG_OK)                                          \
			return r_;                                         \
	} while (0)

/* ---- device and system information ----------------------------------- */

int read_device(struct ctx *x)
{
	int d = 0, v = 0;
	cudaDeviceProp prop;

	KBG_TRY(x, cudaGetDevice(&d), "getting the device");
	KBG_TRY(x, cudaGetDeviceProperties(&prop, d), "reading the device");
	memset(&x->dev, 0, sizeof x->dev);
	snprintf(x->dev.name, sizeof x->dev.name, "%s", prop.name);
	kbg_dev_arch(&prop, x->dev.arch, sizeof x->dev.arch);
	x->dev.cc_major = prop.major;
	x->dev.cc_minor = prop.minor;
	x->dev.sms = prop.multiProcessorCount;
	x->dev.mem_bytes = prop.totalGlobalMem;
	if (cudaDeviceGetAttribute(&v, cudaDevAttrClockRate, d) == cudaSuccess)
		x->dev.clock_khz = v;
	if (cudaDeviceGetAttribute(&v, cudaDevAttrMemoryClockRate, d) ==
	    cudaSuccess)
		x->dev.mem_clock_khz = v;
	if (cudaDeviceGetAttribute(&v, cudaDevAttrGlobalMemoryBusWidth, d) ==
	    cudaSuccess)
		x->dev.bus_bits = v;
	if (cudaDeviceGetAttribute(&v, cudaDevAttrL2CacheSize, d) ==
	    cudaSuccess)
		x->dev.l2_bytes = (size_t)v;
	(void)cudaGetLastError(); /* an unsupported attribute is not fatal */
	return KBG_OK;
}

void report_system_start(struct ctx *x)
{
	char pci[32] = "";
	int drv = 0, rt = 0;
	struct kbg_sys_sample s;
	struct kbh_peak peak;
	const char *src;
	int d = 0;

	(void)cudaGetDevice(&d);
	if (cudaDeviceGetPCIBusId(pci, sizeof pci, d) != cudaSuccess)
		pci[0] = '\0';
	(void)cudaGetLastError();
	x->sys = kbg_sys_open(pci);
	(void)cudaDriverGetVersion(&drv);
	(void)cudaRuntimeGetVersion(&rt);
	kbg_peak_derive(&x->dev, KBG_OPS_NONE, 0, &peak, &src);

	kbh_report_kv(x->rep, "system.device", "%s", x->dev.name);
	kbh_report_kv(x->rep, "system.cc", "%d.%d", x->dev.cc_major,
		      x->dev.cc_minor);
	kbh_report_kv(x->rep, "system.arch", "%s", x->dev.arch);
	if (kbg_sys_driver(x->sys)[0])
		kbh_report_kv(x->rep, "system.driver", "%s (" KBG_API " %d.%d)",
			      kbg_sys_driver(x->sys), KBG_VERSION_MAJOR(drv),
			      KBG_VERSION_MINOR(drv));
	else
		kbh_report_kv(x->rep, "system.driver", KBG_API " %d.%d",
			      KBG_VERSION_MAJOR(drv), KBG_VERSION_MINOR(drv));
	kbh_report_kv(x->rep, "system.runtime", KBG_API " %d.%d",
		      KBG_VERSION_MAJOR(rt), KBG_VERSION_MINOR(rt));
	kbh_report_kv(x->rep, "system.peak_gbps",
		      "%.0f (%s, %d SMs, L2 %zu, LLC %zu)",
		      peak.bytes_per_s / KBG_PEAK_MARGIN / 1e9, src,
		      x->dev.sms, x->dev.l2_bytes, kbg_llc_bytes(&x->dev));
	kbg_sys_sample(x->sys, &s);
	if (s.sm_mhz >= 0)
		kbh_report_kv(x->rep, "system.sm_clock_start", "%d", s.sm_mhz);
	if (s.mem_mhz >= 0)
		kbh_report_kv(x->rep, "system.mem_clock_start", "%d",
			      s.mem_mhz);
	if (s.temp_c >= 0)
		kbh_report_kv(x->rep, "system.temp_start", "%d", s.temp_c);
	if (s.power_w >= 0)
		kbh_report_kv(x->rep, "system.power_start", "%.1f", s.power_w);
}

void report_system_end(struct ctx *x)
{
	struct kbg_sys_sample s;

	kbg_sys_sample(x->sys, &s);
	if (s.sm_mhz >= 0)
		kbh_report_kv(x->rep, "system.sm_clock_end", "%d", s.sm_mhz);
	if (s.temp_c >= 0)
		kbh_report_kv(x->rep, "system.temp_end", "%d", s.temp_c);
	if (s.power_w >= 0)
		kbh_report_kv(x->rep, "system.power_end", "%.1f", s.power_w);
	if (s.throttle >= 0)
		kbh_report_kv(x->rep, "system.throttle_end", "0x%llx",
			      (unsigned long long)s.throttle);
}

int init_device(struct ctx *x)
{
	KBG_TRY(x, cudaSetDevice(0), "selecting device 0");
	KBG_TRY(x, cudaFree(0), "creating the context");
	KBG_STEP(read_device(x));
	int rc = kbg_dev_init();
	if (rc)
		return blame(x, (cudaError_t)-rc, "initialising the driver");
	x->flush_bytes = kbg_flush_bytes(kbg_llc_bytes(&x->dev));
	KBG_TRY(x, cudaMalloc(&x->flush_buf, x->flush_bytes),
		"allocating the L2 flush buffer");
	KBG_TRY(x, cudaMemset(x->flush_buf, 0x5a, x->flush_bytes),
		"filling the L2 flush buffer");
	KBG_TRY(x, cudaMalloc(&x->sink, sizeof *x->sink),
		"allocating the flush sink");
	KBG_TRY(x, cudaDeviceSynchronize(), "initialising the device");
	return KBG_OK;
}

/* ---- requests to the child --------------------------------------------- */

/* A reply the driver's own child code could have written: the request's
 * sequence number, a known step, flags 0 or 1, an error code iff a step,
 * times finite and >= 0. Pure. */
int reply_ok(const struct kbg_reply *r, uint64_t seq)
{
	return r->seq == seq && r->where < W_COUNT &&
	       (r->err == 0) == (r->where == W_NONE) && r->err >= 0 &&
	       r->err < 10000 && r->hold <= 1 && r->hold_timed_out <= 1 &&
	       r->sticky <= 1 && isfinite(r->dev_ns) && r->dev_ns >= 0 &&
	       isfinite(r->gap_ns) && r->gap_ns >= 0;
}

/* Classifies a CUDA error the child reported, by the same rules as the
 * parent's own (blame): the submission's once it has run, unless only a
 * broken device or driver raises it. The message is made here from the
 * code; nothing the child wrote is printed. */
int child_error(struct ctx *x, const struct kbg_reply *r)
{
	cudaError_t e = (cudaError_t)r->err;

	x->child_sticky |= (int)r->sticky;
	if (r->where == W_LEFT)
		msgf(x, "custom_kernel left a " KBG_API " error: %s (%s)",
		     cudaGetErrorString(e), cudaGetErrorName(e));
	else
		msgf(x, KBG_API " error %s: %s (%s)", kWhere[r->where],
		     cudaGetErrorString(e), cudaGetErrorName(e));
	return x->called && !kbg_is_infra_error((int)e) ? KBG_FAIL : KBG_INFRA;
}

/* Runs one request in the child: arg (size bytes, starting with a
 * uint64_t the sequence number is written to) -> *w (the parent's clock
 * and the guard's stamps) and *r (the reply, copied once). `what` names
 * the request in messages. Returns KBG_OK; KBG_CRASH when the child died
 * or exited after user code ran (x->crashed set); KBG_FAIL for a
 * malformed reply or a CUDA error after user code ran; KBG_INFRA
 * otherwise (anything before user code ran is the platform's). */
int child_request(struct ctx *x, uint32_t op, void *arg, size_t size,
		  const char *what, struct kbh_guard_window *w,
		  struct kbg_reply *r)
{
	const uint64_t seq = ++x->seq;
	int rc;

	memcpy(arg, &seq, sizeof seq);
	kbh_fill(x->reply, 0xff, sizeof *x->reply);
	rc = kbh_guard_request(x->g, op, arg, size, w);
	if (rc == -ECHILD) {
		if (!x->called) {
			msgf(x, "the submission's process %s before any submission "
				"code ran (%s)",
			     kbh_guard_death(x->g), what);
			return KBG_INFRA;
		}
		msgf(x, "custom_kernel crashed: the submission's process %s "
			"during %s (a crash, or exit() called from the "
			"submission)",
		     kbh_guard_death(x->g), what);
		x->crashed = 1;
		return KBG_CRASH;
	}
	if (rc) {
		msgf(x, "guard request (%s): %s", what, strerror(-rc));
		return KBG_INFRA;
	}
	kbh_copy(r, x->reply, sizeof *r);
	if (w->status != 0 || !reply_ok(r, seq)) {
		msgf(x, "the submission's process sent a malformed reply to "
			"the harness (%s): its copy of the driver was tampered "
			"with",
		     what);
		return x->called ? KBG_FAIL : KBG_INFRA;
	}
	if (r->err)
		return child_error(x, r);
	return KBG_OK;
}

/* 1 when a CALL's claims do not fit the parent's window: [t0, t1] must
 * lie inside [t_go, t_seen] (kbh_guard_verify; no slack: nothing is
 * clamped) and the device time must not exceed t_seen - t_go (within the
 * clocks' tolerance). Pure. */
int claim_forged(const struct kbh_guard_window *w, double dev_ns)
{
	uint64_t ignored;
	double win = (double)(w->t_seen - w->t_go);

	if (kbh_guard_verify(w, UINT64_MAX, &ignored) == KBH_GUARD_FORGED)
		return 1;
	return dev_ns > win * (1.0 + kClockTolRel) + kClockTolNs;
}

/* Hands the child the current case's slot handles (OPEN). */
int open_slots(struct ctx *x)
{
	const struct kbg_layout *l = &x->cur->lay;
	struct kbh_guard_window w;
	struct kbg_reply r;
	struct op_open a;

	memset(&a, 0, sizeof a);
	a.n_in = (uint32_t)l->n_in;
	a.n_out = (uint32_t)l->n_out;
	a.nslots = (uint32_t)x->nslots;
	for (int s = 0; s < x->nslots && s < kSlots; s++) {
		for (int j = 0; j < l->n_in && j < KBG_MAX_BUFS; j++)
			a.in[s][j] = x->slots[s].in_h[j];
		for (int j = 0; j < l->n_out && j < KBG_MAX_BUFS; j++)
			a.out[s][j] = x->slots[s].out_h[j];
	}
	x->opened = 1; /* a failed OPEN may still have mapped some */
	return child_request(x, OP_OPEN, &a, sizeof a, "mapping the work "
			     "buffers", &w, &r);
}

/* Has the child unmap the slots (CLOSE). A child already broken by a
 * sticky error cannot: that is reported already, so only its death
 * counts then. */
int close_slots(struct ctx *x)
{
	struct kbh_guard_window w;
	struct kbg_reply r;
	struct op_flag a;
	const int broken = x->child_sticky;

	if (!x->opened)
		return KBG_OK;
	x->opened = 0;
	memset(&a, 0, sizeof a);
	int rc = child_request(x, OP_CLOSE, &a, sizeof a,
			       "unmapping the work buffers", &w, &r);
	if (rc != KBG_CRASH && broken)
		return KBG_OK;
	return rc;
}

/* Starts or stops the profiler's capture range in the child, where the
 * submission's kernels run. Only its death matters. */
int child_profile(struct ctx *x, int on)
{
	struct kbh_guard_window w;
	struct kbg_reply r;
	struct op_flag a;

	memset(&a, 0, sizeof a);
	a.flag = (uint32_t)on;
	int rc = child_request(x, OP_PROFILE, &a, sizeof a, "the profiler "
			       "range", &w, &r);
	return rc == KBG_CRASH ? rc : KBG_OK;
}

/* The reply record, the child's context and its overhead (system.guard):
 * before any user code, so every failure here is the platform's. */
int init_child(struct ctx *x)
{
	struct kbh_guard_window w;
	struct kbg_reply r;
	struct op_init a;
	char err[256];

	x->reply = (struct kbg_reply *)kbh_guard_alloc(x->g, sizeof *x->reply);
	if (!x->reply) {
		msgf(x, "the guard's arena has no room for the reply");
		return KBG_INFRA;
	}
	if (kbh_guard_publish(x->g, err, sizeof err)) {
		msgf(x, "%s", err);
		return KBG_INFRA;
	}
	memset(&a, 0, sizeof a);
	a.reply = (uint64_t)(uintptr_t)x->reply;
#ifndef KBG_NO_HOLD
	a.hold = 1; /* without it, timing still works (host latency in) */
#endif
	/* Under Nsight Compute (the worker's profile mode sets upstream's
	 * POPCORN_NCU=1) every launch in the capture range is profiled and
	 * serialised: the hold kernel would be profiled, and would wait out
	 * its timeout in every replay pass since the host cannot release it
	 * until the launch returns. Profiled calls are not timed for a
	 * score, so they go unheld. */
	if (x->mode == KBH_MODE_PROFILE && getenv("POPCORN_NCU") &&
	    strcmp(getenv("POPCORN_NCU"), "1") == 0)
		a.hold = 0;
	KBG_STEP(child_request(x, OP_INIT, &a, sizeof a, "initialising", &w,
			       &r));
	x->hold = (int)r.hold;
	return KBG_OK;
}

/* Empty CALLs (no custom_kernel), held as the mode's timed calls are:
 * the guard's overhead per request, reported so a reader can compare
 * window_ns with the samples. Also the child's first holds and events,
 * outside any case. */
int calibrate(struct ctx *x)
{
	double win[kCalCalls], dev[kCalCalls];
	int forged = 0;

	for (int i = 0; i < kCalCalls; i++) {
		struct kbh_guard_window w;
		struct kbg_reply r;
		struct op_call a;

		memset(&a, 0, sizeof a);
		a.empty = 1;
		a.hold = x->hold && x->mode != KBH_MODE_TEST;
		KBG_STEP(child_request(x, OP_CALL, &a, sizeof a, "calibrating",
				       &w, &r));
		forged += claim_forged(&w, r.dev_ns);
		win[i] = (double)(w.t_seen - w.t_go);
		dev[i] = r.dev_ns;
	}
	double dev_p50 = kbg_median(dev, kCalCalls);
	double win_p50 = kbg_median(win, kCalCalls); /* sorted now */
	double win_p95 = win[(kCalCalls - 1) * 95 / 100];
	if (forged)
		fprintf(stderr,
			"eval.out: %d of %d calibration calls did not fit the "
			"window (clock mismatch?)\n",
			forged, kCalCalls);
	kbh_report_kv(x->rep, "system.guard",
		      "child %d%s; empty call: window p50 %.1f us, p95 %.1f us, "
		      "event time p50 %.1f us%s",
		      kbh_guard_pid(x->g),
		      kbh_guard_confined(x->g) ? " confined" : " NOT confined",
		      win_p50 / 1e3, win_p95 / 1e3, dev_p50 / 1e3,
		      forged ? " (MISFIT)" : "");
	return KBG_OK;
}

/* Loads the submission in the child (guard.h): its constructors and
 * everything else that runs on load run there, after its confinement,
 * never here. Writes "user-code: started" first. KBG_OK; KBG_CRASH when
 * the child died loading it; KBG_FAIL when it does not load (x->msg says
 * why: the loader's words); KBG_INFRA for our own errors. */
int load_submission(struct ctx *x)
{
	const char *path = getenv(KBH_SUBMISSION_ENV);
	char err[sizeof x->msg];

	if (!path || !path[0]) {
		msgf(x, "%s is not set", KBH_SUBMISSION_ENV);
		return KBG_INFRA;
	}
	if (kbh_report_user_started(x->rep) != 0) {
		msgf(x, "writing the report failed");
		return KBG_INFRA;
	}
	x->called = 1;
	int rc = kbh_guard_load(x->g, path, KBH_SUBMISSION_SYMBOL, err,
				sizeof err);
	if (rc == 0)
		return KBG_OK;
	msgf(x, "%s", err);
	if (rc == -ECHILD) {
		x->crashed = 1;
		return KBG_CRASH;
	}
	return KBG_FAIL;
}

/* Every case failed with x->msg (the submission did not load). */
void fail_all(struct ctx *x, const struct prepared *prep, size_t n)
{
	const int test = x->mode == KBH_MODE_TEST;

	fprintf(stderr, "eval.out: %s\n", x->msg);
	if (test)
		kbh_report_test_count(x->rep, n);
	else
		kbh_report_bench_count(x->rep, n);
	for (size_t i = 0; i < n; i++) {
		if (test) {
			kbh_report_test(x->rep, i, "spec", "%s", prep[i].c.spec);
			kbh_report_test(x->rep, i, "status", "fail");
			kbh_report_test(x->rep, i, "error", "%s", x->msg);
		} else {
			kbh_report_bench(x->rep, i, "spec", "%s", prep[i].c.spec);
			kbh_report_bench(x->rep, i, "status", "fail");
			kbh_report_bench(x->rep, i, "error", "%s", x->msg);
		}
	}
}

/* ---- cases ----------------------------------------------------------- */

/* Host-side validation and setup of one case (no GPU). 0 or -EINVAL. */
int prepare(const struct kbg_problem *p, enum kbh_mode mode,
	    const struct kbh_case *c, struct prepared *out, char *err,
	    size_t err_size)
{
	const char *allowed[64];
	size_t n = 0;

	memset(out, 0, sizeof *out);
	out->c = *c;
	for (size_t i = 0; kbg_driver_keys[i] && n < 32; i++)
		allowed[n++] = kbg_driver_keys[i];
	for (size_t i = 0; p->keys && p->keys[i] && n < 63; i++)
		allowed[n++] = p->keys[i];
	allowed[n] = NULL;
	if (kbh_case_keys_only(c, allowed, err, err_size))
		return -EINVAL;
	if (kbh_case_u64(c, "seed", 0, UINT64_MAX, &out->seed, err,
			 err_size))
		return -EINVAL;
	if (kbg_limits_from_case(mode, c, &out->lim, err, err_size))
		return -EINVAL;
	if (p->params_size > KBG_PARAMS_MAX) {
		snprintf(err, err_size, "problem params too large");
		return -EINVAL;
	}
	if (p->setup(c, out->params, &out->lay, err, err_size))
		return -EINVAL;

	struct kbg_layout *l = &out->lay;
	if (l->n_in < 1 || l->n_in > KBG_MAX_BUFS || l->n_out < 1 ||
	    l->n_out > KBG_MAX_BUFS || l->exp_bytes == 0) {
		snprintf(err, err_size, "problem layout out of range");
		return -EINVAL;
	}
	for (int i = 0; i < l->n_in; i++)
		if (l->in_bytes[i] == 0) {
			snprintf(err, err_size, "input %d has no bytes", i);
			return -EINVAL;
		}
	for (int i = 0; i < l->n_out; i++)
		if (l->out_bytes[i] == 0) {
			snprintf(err, err_size, "output %d has no bytes", i);
			return -EINVAL;
		}
	if (l->sets <= 0)
		l->sets = 4;
	if (l->sets > kMaxSets)
		l->sets = kMaxSets;
	return 0;
}

/* Has the child unmap the slots, then frees everything of the case.
 * Returns KBG_CRASH when the child died meanwhile, else the first error
 * (or KBG_OK). */
int free_case(struct ctx *x)
{
	cudaError_t first = cudaSuccess, e;
	int rc = close_slots(x);

#define KBG_FREE(ptr)                                                      \
	do {                                                               \
		if (ptr) {                                                 \
			e = cudaFree(ptr);                                 \
			if (e != cudaSuccess && first == cudaSuccess)      \
				first = e;                                 \
			ptr = NULL;                                        \
		}                                                          \
	} while (0)
	for (int s = 0; s < kMaxSets; s++) {
		for (int j = 0; j < KBG_MAX_BUFS; j++)
			KBG_FREE(x->sets[s].in[j]);
		if (x->sets[s].exp_host) {
			e = cudaFreeHost(x->sets[s].exp_host);
			if (e != cudaSuccess && first == cudaSuccess)
				first = e;
			x->sets[s].exp_host = NULL;
		}
	}
	KBG_FREE(x->exp);
	for (int w = 0; w < kSlots; w++)
		for (int j = 0; j < KBG_MAX_BUFS; j++) {
			KBG_FREE(x->slots[w].in[j]);
			KBG_FREE(x->slots[w].out[j]);
		}
	KBG_FREE(x->scratch);
#undef KBG_FREE
	x->cur = NULL;
	if (rc != KBG_OK)
		return rc;
	if (first != cudaSuccess)
		return blame(x, first, "freeing case buffers");
	return KBG_OK;
}

/* Ends a case whose steps returned rc: frees it (free_case) and returns
 * what the case ended as. The case's own failure and its message win,
 * unless the child died while it was being closed. */
int end_case(struct ctx *x, int rc)
{
	char saved[sizeof x->msg];

	memcpy(saved, x->msg, sizeof saved);
	int rc2 = free_case(x);
	if (rc == KBG_OK || (rc2 == KBG_CRASH && rc != KBG_CRASH))
		return rc2;
	memcpy(x->msg, saved, sizeof saved);
	return rc;
}

/* The data seed of call k of the current case (fresh data) or of set k
 * (data sets): the first is the case's own, reproducible (the same data
 * as test mode's call, so a failure there replays in test mode); every
 * other one also depends on the run's random key. */
uint64_t data_seed(const struct ctx *x, uint64_t k)
{
	const uint64_t seed = x->cur->seed;

	if (k == 0)
		return kbh_seed_derive(seed, 1, 0);
	return kbh_seed_derive(seed ^ x->run_key, 3, k);
}

/* Fills set s's pristine inputs from its seed. */
int generate_set(struct ctx *x, int s)
{
	struct data_set *d = &x->sets[s];

	return hook(x, x->p->generate(x->cur->params, d->seed, d->in),
		    "generating inputs");
}

/* Runs the reference on set s's pristine inputs into x->exp. */
int reference_set(struct ctx *x, int s)
{
	return hook(x,
		    x->p->reference(x->cur->params,
				    (const void *const *)x->sets[s].in, x->exp,
				    x->scratch),
		    "running the reference");
}

/* A data set made once per case (layout.fresh == 0): inputs on the
 * device, the expected result moved to host memory. */
int make_set(struct ctx *x, int s)
{
	const size_t n = x->cur->lay.exp_bytes;

	x->sets[s].seed = data_seed(x, (uint64_t)s);
	KBG_STEP(generate_set(x, s));
	KBG_STEP(reference_set(x, s));
	KBG_TRY(x, cudaMemcpy(x->sets[s].exp_host, x->exp, n,
			      cudaMemcpyDeviceToHost),
		"keeping the expected result");
	KBG_TRY(x, cudaMemset(x->exp, 0, n), "clearing the expected result");
	if (x->scratch)
		KBG_TRY(x, cudaMemset(x->scratch, 0, x->cur->lay.scratch_bytes),
			"clearing scratch");
	return KBG_OK;
}

/* One buffer the child will map: its own whole 2 MiB blocks (see the
 * theory), zeroed (it must show nothing of earlier allocations), and its
 * IPC handle. */
int alloc_exported(struct ctx *x, size_t bytes, void **p,
		   cudaIpcMemHandle_t *h, const char *what)
{
	const size_t n = (bytes + kIpcGranule - 1) / kIpcGranule * kIpcGranule;

	KBG_TRY(x, cudaMalloc(p, n), what);
	KBG_TRY(x, cudaMemset(*p, 0, n), what);
	KBG_TRY(x, cudaIpcGetMemHandle(h, *p), "exporting the work buffers");
	return KBG_OK;
}

/* with_sets: the case uses data sets made once (expected results kept
 * on the host); else one set regenerated before every call. Ends with
 * the slots mapped in the child. */
int alloc_case(struct ctx *x, struct prepared *c, int nsets, int nslots,
	       int with_sets)
{
	const struct kbg_layout *l = &c->lay;

	x->cur = c;
	x->nsets = nsets;
	x->nslots = nslots;
	x->ncalls = 0;
	x->hold_timeouts = 0;
	x->forged = 0;
	kbh_rng_seed(&x->pick, kbh_seed_derive(c->seed ^ x->run_key, 2, 0));
	for (int s = 0; s < nsets; s++) {
		for (int j = 0; j < l->n_in; j++)
			KBG_TRY(x, cudaMalloc(&x->sets[s].in[j], l->in_bytes[j]),
				"allocating inputs");
		if (with_sets)
			KBG_TRY(x, cudaMallocHost(&x->sets[s].exp_host,
						  l->exp_bytes),
				"allocating the expected result (host)");
	}
	KBG_TRY(x, cudaMalloc(&x->exp, l->exp_bytes),
		"allocating the expected result");
	KBG_TRY(x, cudaMemset(x->exp, 0, l->exp_bytes),
		"clearing the expected result");
	for (int w = 0; w < nslots; w++) {
		struct work_slot *ws = &x->slots[w];
		for (int j = 0; j < l->n_in; j++)
			KBG_STEP(alloc_exported(x, l->in_bytes[j], &ws->in[j],
						&ws->in_h[j],
						"allocating inputs"));
		for (int j = 0; j < l->n_out; j++)
			KBG_STEP(alloc_exported(x, l->out_bytes[j], &ws->out[j],
						&ws->out_h[j],
						"allocating outputs"));
	}
	if (l->scratch_bytes)
		KBG_TRY(x, cudaMalloc(&x->scratch, l->scratch_bytes),
			"allocating scratch");
	KBG_TRY(x, cudaDeviceSynchronize(), "preparing the case");
	return open_slots(x);
}

/* ---- one call -------------------------------------------------------- */

/* The case draws among data sets made once (costly references) rather
 * than regenerating its data before every call. */
int has_sets(const struct ctx *x)
{
	return !x->cur->lay.fresh && x->mode != KBH_MODE_TEST;
}

/* Zeroes the expected result and the reference's scratch (enqueued). */
int clear_truth(struct ctx *x)
{
	const struct kbg_layout *l = &x->cur->lay;

	KBG_TRY(x, cudaMemsetAsync(x->exp, 0, l->exp_bytes, cudaStreamLegacy),
		"clearing the expected result");
	if (x->scratch)
		KBG_TRY(x, cudaMemsetAsync(x->scratch, 0, l->scratch_bytes,
					   cudaStreamLegacy),
			"clearing scratch");
	return KBG_OK;
}

/* Step 4 and 5 of the theory: the CALL request on slot w, its reply
 * validated, the sample made. Writes "user-code: started" before the
 * first. Returns as child_request. */
int run_call(struct ctx *x, int w, struct sample *out)
{
	struct op_call a;
	struct kbh_guard_window win;
	struct kbg_reply r;

	/* The hold keeps the device busy until the whole call is enqueued:
	 * the start event then runs right before the submission's first
	 * kernel instead of waiting for the host to launch it. */
	memset(&a, 0, sizeof a);
	a.slot = (uint32_t)w;
	a.hold = x->hold && x->mode != KBH_MODE_TEST;
	a.params_size = (uint32_t)x->p->params_size;
	memcpy(a.params, x->cur->params, x->p->params_size);
	KBG_STEP(child_request(x, OP_CALL, &a, sizeof a, "custom_kernel", &win,
			       &r));
	if (a.hold && !r.hold)
		x->hold = 0; /* the child could not launch it */
	out->win_ns = (double)(win.t_seen - win.t_go);
	out->forged = x->mode != KBH_MODE_TEST && claim_forged(&win, r.dev_ns);
	out->ns = out->forged ? out->win_ns : r.dev_ns;
	out->gap_ns = r.gap_ns;
	x->forged += (uint32_t)out->forged;
	x->ncalls++;
	out->unheld = a.hold && r.hold_timed_out;
	if (out->unheld) {
		x->hold_timeouts++;
		if (++x->run_hold_timeouts >= 2)
			x->hold = 0; /* it blocks on the device: time unheld */
	}
	return KBG_OK;
}

/* Stages, runs (in the child), validates and (when `check`) checks one
 * call. */
int one_call(struct ctx *x, int check, struct sample *out)
{
	const struct kbg_problem *p = x->p;
	struct prepared *c = x->cur;
	const struct kbg_layout *l = &c->lay;
	int s, w = (int)(x->ncalls % (uint64_t)x->nslots);

	/* Fresh data (and test mode): the inputs now, the reference only
	 * after the call. Data sets: one drawn at random. */
	const int fresh = !has_sets(x);
	if (fresh) {
		s = 0;
		x->sets[0].seed = data_seed(x, x->ncalls);
		KBG_STEP(generate_set(x, 0));
	} else {
		s = (int)kbh_rng_below(&x->pick, (uint64_t)x->nsets);
	}
	struct data_set *d = &x->sets[s];
	struct work_slot *ws = &x->slots[w];

	for (int j = 0; j < l->n_in; j++)
		KBG_TRY(x, cudaMemcpyAsync(ws->in[j], d->in[j], l->in_bytes[j],
					   cudaMemcpyDeviceToDevice,
					   cudaStreamLegacy),
			"staging inputs");
	for (int j = 0; j < l->n_out; j++)
		KBG_TRY(x, cudaMemsetAsync(ws->out[j], 0xff, l->out_bytes[j],
					   cudaStreamLegacy),
			"poisoning outputs");
	/* Lines a submission marked persisting (an access-policy window)
	 * would survive the streaming flush in L2's set-aside part: made
	 * normal again first, they are flushed like the rest. */
#ifndef KBG_NO_PERSIST_RESET
	KBG_TRY(x, cudaCtxResetPersistingL2Cache(), "resetting persisting L2 lines");
#endif
	int rc = kbg_dev_flush(x->flush_buf, x->flush_bytes, x->sink);
	if (rc)
		return blame(x, (cudaError_t)-rc, "flushing L2");
	/* Staging must be complete (the child reads the slots from its own
	 * context, which our stream does not order) and error-free before
	 * the clock starts. */
	KBG_TRY(x, cudaDeviceSynchronize(), "staging the call");

	KBG_STEP(run_call(x, w, out));

	if (!check)
		return KBG_OK;
	/* The expected result comes into existence only now, after the
	 * submission returned and its work finished: fresh data is
	 * regenerated from the seed (the truth does not depend on device
	 * memory the submission could have written) and the reference runs
	 * on it; a set's result is copied from host memory. */
	if (fresh) {
		KBG_STEP(generate_set(x, 0));
		KBG_STEP(reference_set(x, 0));
	} else {
		KBG_TRY(x, cudaMemcpyAsync(x->exp, d->exp_host, l->exp_bytes,
					   cudaMemcpyHostToDevice,
					   cudaStreamLegacy),
			"restoring the expected result");
	}
	x->msg[0] = '\0';
	rc = p->check(c->params, (const void *const *)d->in,
		      (const void *const *)ws->out, x->exp, x->scratch, x->msg,
		      sizeof x->msg);
	{
		/* Nothing of this call's truth stays behind for the next. */
		int rc2 = clear_truth(x);
		if (rc == 0 && rc2 != KBG_OK)
			return rc2;
	}
	if (rc > 0) {
		if (!x->msg[0])
			msgf(x, "output does not match the reference");
		return KBG_FAIL;
	}
	KBG_STEP(hook(x, rc, "checking the output"));
	for (int j = 0; j < l->n_in; j++) {
		size_t first;
		rc = kbg_equal_bytes(ws->in[j], d->in[j], l->in_bytes[j], &first);
		if (rc)
			return blame(x, (cudaError_t)-rc, "checking inputs");
		if (first < l->in_bytes[j]) {
			msgf(x, "custom_kernel modified input %d (first changed "
				"byte %zu); inputs are read-only", j, first);
			return KBG_FAIL;
		}
	}
	return KBG_OK;
}

/* The end->tail gap with no submission work, in the child (a claim, as
 * every gap). */
int baseline_gap(struct ctx *x, double *base)
{
	struct kbh_guard_window w;
	struct kbg_reply r;
	struct op_flag a;

	memset(&a, 0, sizeof a);
	KBG_STEP(child_request(x, OP_BASELINE, &a, sizeof a, "calibrating",
			       &w, &r));
	*base = r.gap_ns;
	return KBG_OK;
}

/* ---- modes ----------------------------------------------------------- */

int run_test(struct ctx *x, struct prepared *c)
{
	struct sample smp;

	KBG_STEP(alloc_case(x, c, 1, 1, 0));
	return one_call(x, 1, &smp);
}

struct bench_result {
	struct kbh_stats st;
	enum kbh_stop stop;
	double gap_med, gap_base, sample_wall_ns, win_med;
	uint32_t warmup;  /* untimed, checked calls */
	uint32_t hold_timeouts; /* calls whose hold ended by its timeout */
	uint32_t forged;  /* calls whose claims did not fit the window */
	uint64_t calls;	  /* calls, warm-up included */
};

int run_bench(struct ctx *x, struct prepared *c, struct bench_result *r)
{
	const struct kbg_limits *lim = &c->lim;
	int nsets = c->lay.fresh ? 1 : c->lay.sets;
	struct sample smp;
	uint64_t t0, n_alloc;
	double *gaps, *wins;
	int rc = KBG_OK;

	memset(r, 0, sizeof *r);
	kbh_stats_init(&r->st);
	KBG_STEP(alloc_case(x, c, nsets, kSlots, !c->lay.fresh));
	if (!c->lay.fresh)
		for (int s = 0; s < nsets; s++)
			KBG_STEP(make_set(x, s));
	KBG_TRY(x, cudaDeviceSynchronize(), "preparing the benchmark");
	KBG_STEP(baseline_gap(x, &r->gap_base));

	/* Warm-up: staged and checked like the timed calls. */
	t0 = kbh_now_ns();
	for (uint32_t k = 0;
	     k < lim->warmup_min ||
	     (k < lim->warmup_max && kbh_now_ns() - t0 < lim->warmup_ns);
	     k++, r->warmup++)
		KBG_STEP(one_call(x, 1, &smp));

	n_alloc = lim->stop.max_runs ? lim->stop.max_runs : 100000;
	gaps = (double *)malloc(n_alloc * sizeof *gaps);
	wins = (double *)malloc(n_alloc * sizeof *wins);
	if (!gaps || !wins) {
		free(gaps);
		free(wins);
		msgf(x, "out of host memory");
		return KBG_INFRA;
	}
	if (x->mode == KBH_MODE_PROFILE)
		rc = child_profile(x, 1);
	t0 = kbh_now_ns();
	while (rc == KBG_OK) {
		int check = x->mode != KBH_MODE_PROFILE || r->st.n == 0 ||
			    r->st.n + 1 >= lim->stop.max_runs;
		rc = one_call(x, check, &smp);
		if (rc != KBG_OK)
			break;
		if (smp.unheld) {
			r->warmup++; /* checked, not timed (see the theory) */
			continue;
		}
		if (r->st.n < n_alloc) {
			gaps[r->st.n] = smp.gap_ns;
			wins[r->st.n] = smp.win_ns;
		}
		kbh_stats_add(&r->st, smp.ns);
#ifdef KBG_SAMPLE_LOG
		fprintf(stderr, "S %d %.0f %.0f %.0f\n",
			(int)((x->ncalls - 1) % (uint64_t)x->nslots), smp.ns,
			smp.gap_ns, smp.win_ns);
#endif
		r->stop = kbh_stop_check(&lim->stop, &r->st,
					 kbh_now_ns() - t0);
		if (r->stop != KBH_STOP_CONTINUE)
			break;
	}
	if (x->mode == KBH_MODE_PROFILE && rc != KBG_CRASH) {
		int rc2 = child_profile(x, 0);
		if (rc == KBG_OK)
			rc = rc2;
	}
	r->hold_timeouts = x->hold_timeouts;
	r->forged = x->forged;
	r->calls = x->ncalls;
	if (rc == KBG_OK && r->st.n) {
		size_t n = r->st.n < n_alloc ? r->st.n : n_alloc;
		r->sample_wall_ns = (double)(kbh_now_ns() - t0) / (double)r->st.n;
		r->gap_med = kbg_median(gaps, n);
		r->win_med = kbg_median(wins, n);
	}
	free(gaps);
	free(wins);
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
	kbh_report_bench(rep, i, "hold", "%s", x->hold ? "on" : "off");
	kbh_report_bench(rep, i, "hold_timeouts", "%u",
			 (unsigned)r->hold_timeouts);

	if (r->forged)
		snprintf(why, sizeof why,
			 "forged-timing: %u of %" PRIu64 " calls claimed times "
			 "that do not fit the harness's own clock window of "
			 "the call (the driver's code in the submission's "
			 "process was tampered with)",
			 (unsigned)r->forged, r->calls);
	else if (kbh_cost_suspect(&c->lay.cost, &peak, r->st.best))
		snprintf(why, sizeof why,
			 "below-floor: the best sample is faster than the "
			 "device's physical floor");
	else if (kbg_outlives(r->gap_med, r->gap_base, r->st.mean))
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
		report_system_end(x);
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
	int rc = kbh_guard_start(&x.g, kArenaMax, child_op, &g_child, err,
				 sizeof err);
	unsetenv("POPCORN_FD");
	if (rc) {
		fprintf(stderr, "eval.out: starting the timing process: %s\n",
			err);
		kbg_exit(x, KBH_EXIT_DEVICE);
	}
	/* A reader that went away must give EPIPE, not kill us silently. */
	signal(SIGPIPE, SIG_IGN);
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
		if (prepare(x.p, x.mode, &cases.v[i], &prep[i], err,
			    sizeof err)) {
			fprintf(stderr, "eval.out: case %zu (%s): %s\n", i,
				cases.v[i].spec, err);
			return KBH_EXIT_BAD_SPEC;
		}
	kbh_watchdog_arm(kWatchdogS);

	if (init_device(&x) != KBG_OK)
		return infra_exit(&x);
	report_system_start(&x);
	if (init_child(&x) != KBG_OK || calibrate(&x) != KBG_OK)
		return infra_exit(&x);
	switch (load_submission(&x)) {
	case KBG_OK:
		break;
	case KBG_CRASH:
		fail_all(&x, prep, cases.n);
		return finish(&x, KBH_EXIT_CRASHED);
	case KBG_FAIL:
		fail_all(&x, prep, cases.n);
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
			rc = end_case(&x, run_test(&x, &prep[i]));
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
			rc = end_case(&x, run_bench(&x, &prep[i], &r));
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
