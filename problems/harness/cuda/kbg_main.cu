/* kbg_main.cu: the GPU timing driver (main of every CUDA problem's
 * eval.out).
 *
 *     POPCORN_FD=<fd> ./eval.out test|benchmark|profile|leaderboard cases.txt
 *
 * Theory of operation
 * -------------------
 * Start-up: resolve the trusted libc pointers (harness.c), open the report
 * (exit 111 without POPCORN_FD), parse the mode (exit 2) and every case,
 * running the problem's host-side setup on each, before the GPU is touched
 * (exit 113 on any bad case). Then create the context, read the device's
 * attributes, open NVML (dlopen; optional) and write the system.* keys.
 *
 * Buffers of one case: `sets` data sets, each its inputs as generated
 * (pristine; the submission never gets these pointers) and the expected
 * result the reference computed from them; two work slots (inputs and
 * outputs the submission gets), used alternately so consecutive calls see
 * different addresses; a scratch buffer for reference and check. All are
 * separate cudaMallocs.
 *
 * One call (every call is staged the same way, warm-up included):
 *   1. data: a fresh problem (layout.fresh) regenerates its set from a
 *      seed derived from (case seed, call number) and reruns the
 *      reference; otherwise a set is drawn at random (PRNG seeded from the
 *      case seed) among sets made once per case;
 *   2. the set's inputs are copied into the slot's inputs (device to
 *      device) and the slot's outputs are poisoned with 0xFF bytes (NaN for
 *      floats, 0xFFFFFFFF for integers), so unwritten output fails;
 *   3. L2 is flushed by streaming kbg_flush_bytes(L2) = 4x L2 (>= 64 MiB)
 *      through it with L2-allocating loads (kbg_dev.cu);
 *   4. (benchmark, leaderboard, profile) the hold on the legacy stream
 *      (kbg_dev_hold: a kernel taking every thread slot of every SM that
 *      waits until the host releases it, at most kHoldTimeoutNs); start
 *      event on the legacy default stream; problem->call (the
 *      submission's custom_kernel); end event on the legacy stream; the
 *      host releases the hold; cudaDeviceSynchronize(); a tail event,
 *      synchronised;
 *   5. the time is elapsed(start, end) from the events (device time; the
 *      host clock only bounds it from above as a sanity check);
 *   6. the output is checked against the set's expected result, and the
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
 * submission work (kbg_outlives); a larger one marks the case suspect.
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
 * custom_kernel (a synchronize, a synchronous copy, lazy module loading
 * on the first call) waits for the hold's timeout and is then timed as
 * without a hold; such calls are counted (hold_timeouts). Not held: copy
 * engine work (cudaMemcpyAsync) on a non-blocking stream can run during
 * the hold, for as long as the host spends inside custom_kernel.
 *
 * Timing modes: warm-up calls (kbg_limits: at least warmup_min, until
 * warmup_ns has passed, at most warmup_max) are staged and checked like
 * timed ones but not recorded. Then samples are taken until the stopping
 * rule (harness.h kbh_stop_check: relative standard error < 0.1% after
 * min_runs, or max_runs, or the wall-time cap) says stop. Reported:
 * benchmark.<i>.{spec,runs,mean,std,err,best,worst} (ns), bytes, gbps,
 * flops, gflops, tflops, floor_ns, stop, warmup, gap_ns, sample_wall_ns,
 * hold (on/off: off only where the hold could not be set up),
 * hold_timeouts (calls, warm-up included, whose hold timed out), status. status is "suspect" (benchmark.<i>.error says why) when the
 * best sample is below the physical floor (kbg_peak_derive), when work
 * outlived the timed region, or when the event time exceeds the host's
 * own observation of the call.
 *
 * Faults: an error before the submission first ran is the platform's
 * (exit 110). After it ran, errors are the submission's (the failing test
 * or benchmark gets status fail with the CUDA error, exit 112), except
 * those that only a broken device or driver produces (kbg_is_infra_error:
 * ECC, lost device, driver mismatch), which stay 110. Bad cases exit 113,
 * a missing POPCORN_FD 111, bad usage 2; an outer watchdog exits 114.
 *
 * Symbols: the driver's kernels are static, its functions kbg_/kbh_
 * prefixed with hidden visibility; the runtime is linked statically
 * (nvcc's default -cudart static), so a submission that defines a CUDA
 * runtime function fails to link; and the worker seals the submission's
 * object (kbg_seal.sh: every global it defines except custom_kernel is
 * made local) so it cannot interpose libc or any other shared-library
 * function the driver uses.
 */
#include "kbg.h"
#include "kbg_dev.h"
#include "kbg_sys.h"

#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Step results: 0 ok; KBG_FAIL the submission failed (ctx.msg says why);
 * KBG_INFRA a platform error (ctx.msg says which). */
enum { KBG_OK = 0, KBG_FAIL = 1, KBG_INFRA = -1 };

struct data_set {
	void *in[KBG_MAX_BUFS];
	void *exp;
};

struct work_slot {
	void *in[KBG_MAX_BUFS];
	void *out[KBG_MAX_BUFS];
};

struct prepared {
	struct kbh_case c;
	struct kbg_layout lay;
	struct kbg_limits lim;
	uint64_t seed;
	alignas(16) unsigned char params[KBG_PARAMS_MAX];
};

struct sample {
	double ns;      /* event time start -> end */
	double gap_ns;  /* event time end -> tail */
	double host_ns; /* host time from before start to after the sync */
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
	cudaEvent_t ev_start, ev_end, ev_tail;
	int called; /* the submission has run at least once */
	int hold;   /* timed calls are held (kbg_dev_hold) */
	unsigned hold_gen;
	uint32_t hold_timeouts; /* of the current case */
	char msg[1024];

	/* the case being run */
	struct prepared *cur;
	struct data_set sets[kMaxSets];
	int nsets;
	struct work_slot slots[kSlots];
	int nslots;
	void *scratch;
	uint64_t ncalls;
	struct kbh_rng pick;
};

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
	switch ((cudaError_t)code) {
	case cudaErrorNoDevice:
	case cudaErrorInsufficientDriver:
	case cudaErrorInitializationError:
	case cudaErrorSystemDriverMismatch:
	case cudaErrorCompatNotSupportedOnDevice:
	case cudaErrorDevicesUnavailable:
	case cudaErrorECCUncorrectable:
	case cudaErrorNvlinkUncorrectable:
	case cudaErrorSystemNotReady:
	case cudaErrorStubLibrary:
	case cudaErrorDeviceUninitialized:
	case cudaErrorInvalidDevice:
	case cudaErrorUnsupportedPtxVersion:
	case cudaErrorNoKernelImageForDevice:
		return 1;
	default:
		return 0;
	}
}

namespace {

/* Classifies a CUDA error met while doing `what`. */
int blame(struct ctx *x, cudaError_t e, const char *what)
{
	msgf(x, "CUDA error %s: %s (%s)", what, cudaGetErrorString(e),
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

	cudaGetDevice(&d);
	if (cudaDeviceGetPCIBusId(pci, sizeof pci, d) != cudaSuccess)
		pci[0] = '\0';
	(void)cudaGetLastError();
	x->sys = kbg_sys_open(pci);
	cudaDriverGetVersion(&drv);
	cudaRuntimeGetVersion(&rt);
	kbg_peak_derive(&x->dev, KBG_OPS_NONE, 0, &peak, &src);

	kbh_report_kv(x->rep, "system.device", "%s", x->dev.name);
	kbh_report_kv(x->rep, "system.cc", "%d.%d", x->dev.cc_major,
		      x->dev.cc_minor);
	if (kbg_sys_driver(x->sys)[0])
		kbh_report_kv(x->rep, "system.driver", "%s (CUDA %d.%d)",
			      kbg_sys_driver(x->sys), drv / 1000,
			      drv % 1000 / 10);
	else
		kbh_report_kv(x->rep, "system.driver", "CUDA %d.%d",
			      drv / 1000, drv % 1000 / 10);
	kbh_report_kv(x->rep, "system.runtime", "CUDA %d.%d", rt / 1000,
		      rt % 1000 / 10);
	kbh_report_kv(x->rep, "system.peak_gbps", "%.0f (%s, %d SMs, L2 %zu)",
		      peak.bytes_per_s / KBG_PEAK_MARGIN / 1e9, src,
		      x->dev.sms, x->dev.l2_bytes);
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
#ifndef KBG_NO_HOLD
	/* Without the hold, timing still works (host latency included). */
	x->hold = kbg_dev_hold_init() == 0;
	(void)cudaGetLastError();
#endif
	x->flush_bytes = kbg_flush_bytes(x->dev.l2_bytes);
	KBG_TRY(x, cudaMalloc(&x->flush_buf, x->flush_bytes),
		"allocating the L2 flush buffer");
	KBG_TRY(x, cudaMemset(x->flush_buf, 0x5a, x->flush_bytes),
		"filling the L2 flush buffer");
	KBG_TRY(x, cudaMalloc(&x->sink, sizeof *x->sink),
		"allocating the flush sink");
	KBG_TRY(x, cudaEventCreate(&x->ev_start), "creating events");
	KBG_TRY(x, cudaEventCreate(&x->ev_end), "creating events");
	KBG_TRY(x, cudaEventCreate(&x->ev_tail), "creating events");
	KBG_TRY(x, cudaDeviceSynchronize(), "initialising the device");
	return KBG_OK;
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

int free_case(struct ctx *x)
{
	cudaError_t first = cudaSuccess, e;

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
		KBG_FREE(x->sets[s].exp);
	}
	for (int w = 0; w < kSlots; w++)
		for (int j = 0; j < KBG_MAX_BUFS; j++) {
			KBG_FREE(x->slots[w].in[j]);
			KBG_FREE(x->slots[w].out[j]);
		}
	KBG_FREE(x->scratch);
#undef KBG_FREE
	x->cur = NULL;
	if (first != cudaSuccess)
		return blame(x, first, "freeing case buffers");
	return KBG_OK;
}

/* Makes set s from seed: generate, then reference. */
int make_set(struct ctx *x, int s, uint64_t seed)
{
	const struct kbg_problem *p = x->p;
	struct prepared *c = x->cur;
	struct data_set *d = &x->sets[s];

	KBG_STEP(hook(x, p->generate(c->params, seed, d->in),
		      "generating inputs"));
	KBG_STEP(hook(x, p->reference(c->params, (const void *const *)d->in,
				      d->exp, x->scratch),
		      "running the reference"));
	return KBG_OK;
}

int alloc_case(struct ctx *x, struct prepared *c, int nsets, int nslots)
{
	const struct kbg_layout *l = &c->lay;

	x->cur = c;
	x->nsets = nsets;
	x->nslots = nslots;
	x->ncalls = 0;
	kbh_rng_seed(&x->pick, kbh_seed_derive(c->seed, 2, 0));
	for (int s = 0; s < nsets; s++) {
		for (int j = 0; j < l->n_in; j++)
			KBG_TRY(x, cudaMalloc(&x->sets[s].in[j], l->in_bytes[j]),
				"allocating inputs");
		KBG_TRY(x, cudaMalloc(&x->sets[s].exp, l->exp_bytes),
			"allocating the expected result");
	}
	for (int w = 0; w < nslots; w++) {
		for (int j = 0; j < l->n_in; j++)
			KBG_TRY(x, cudaMalloc(&x->slots[w].in[j], l->in_bytes[j]),
				"allocating inputs");
		for (int j = 0; j < l->n_out; j++)
			KBG_TRY(x,
				cudaMalloc(&x->slots[w].out[j], l->out_bytes[j]),
				"allocating outputs");
	}
	if (l->scratch_bytes)
		KBG_TRY(x, cudaMalloc(&x->scratch, l->scratch_bytes),
			"allocating scratch");
	return KBG_OK;
}

/* ---- one call -------------------------------------------------------- */

int elapsed_ns(struct ctx *x, cudaEvent_t a, cudaEvent_t b, double *ns)
{
	float ms = 0;
	KBG_TRY(x, cudaEventElapsedTime(&ms, a, b), "reading events");
	*ns = (double)ms * 1e6;
	return KBG_OK;
}

/* Stages, runs, times and (when `check`) checks one call. */
int one_call(struct ctx *x, int check, struct sample *out)
{
	const struct kbg_problem *p = x->p;
	struct prepared *c = x->cur;
	const struct kbg_layout *l = &c->lay;
	int s, w = (int)(x->ncalls % (uint64_t)x->nslots);
	cudaError_t e;
	uint64_t t0, t1;

	if (l->fresh && x->mode != KBH_MODE_TEST) {
		s = 0;
		KBG_STEP(make_set(x, 0, kbh_seed_derive(c->seed, 1,
							 x->ncalls + 1)));
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
	int rc = kbg_dev_flush(x->flush_buf, x->flush_bytes, x->sink);
	if (rc)
		return blame(x, (cudaError_t)-rc, "flushing L2");
	/* Staging must be complete and error-free before the clock starts:
	 * a pending error would otherwise be blamed on the submission. */
	KBG_TRY(x, cudaDeviceSynchronize(), "staging the call");

	/* The hold keeps the device busy until the whole call is enqueued:
	 * the start event then runs right before the submission's first
	 * kernel instead of waiting for the host to launch it. */
	int hold = x->hold && x->mode != KBH_MODE_TEST;
	unsigned gen = 0;
	t0 = kbh_now_ns();
	if (hold) {
		gen = ++x->hold_gen;
		if (kbg_dev_hold(gen, kHoldTimeoutNs)) {
			/* not launched: time without it from now on */
			(void)cudaGetLastError();
			x->hold = hold = 0;
		}
	}
	e = cudaEventRecord(x->ev_start, cudaStreamLegacy);
	if (e != cudaSuccess) {
		if (hold)
			kbg_dev_release(gen);
		return blame(x, e, "recording the start event");
	}
	x->called = 1;
	p->call(c->params, ws->in, ws->out);
	e = cudaEventRecord(x->ev_end, cudaStreamLegacy);
	if (hold)
		kbg_dev_release(gen);
	if (e != cudaSuccess)
		return blame(x, e, "recording the end event");
	e = cudaDeviceSynchronize();
	t1 = kbh_now_ns();
	if (e != cudaSuccess)
		return blame(x, e, "running custom_kernel");
	KBG_TRY(x, cudaEventRecord(x->ev_tail, cudaStreamLegacy),
		"recording the tail event");
	KBG_TRY(x, cudaEventSynchronize(x->ev_tail), "waiting for the tail");
	e = cudaGetLastError();
	if (e != cudaSuccess) {
		msgf(x, "custom_kernel left a CUDA error: %s (%s)",
		     cudaGetErrorString(e), cudaGetErrorName(e));
		return kbg_is_infra_error((int)e) ? KBG_INFRA : KBG_FAIL;
	}
	KBG_STEP(elapsed_ns(x, x->ev_start, x->ev_end, &out->ns));
	KBG_STEP(elapsed_ns(x, x->ev_end, x->ev_tail, &out->gap_ns));
	out->host_ns = (double)(t1 - t0);
	x->ncalls++;
	if (hold && kbg_dev_hold_timed_out(gen))
		x->hold_timeouts++;

	if (!check)
		return KBG_OK;
	x->msg[0] = '\0';
	rc = p->check(c->params, (const void *const *)d->in,
		      (const void *const *)ws->out, d->exp, x->scratch, x->msg,
		      sizeof x->msg);
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

/* The end->tail gap with no submission work (median of a few). */
int baseline_gap(struct ctx *x, double *base)
{
	double g[kBaselineGaps];

	for (int i = 0; i < kBaselineGaps; i++) {
		KBG_TRY(x, cudaEventRecord(x->ev_end, cudaStreamLegacy),
			"calibrating");
		KBG_TRY(x, cudaDeviceSynchronize(), "calibrating");
		KBG_TRY(x, cudaEventRecord(x->ev_tail, cudaStreamLegacy),
			"calibrating");
		KBG_TRY(x, cudaEventSynchronize(x->ev_tail), "calibrating");
		KBG_STEP(elapsed_ns(x, x->ev_end, x->ev_tail, &g[i]));
	}
	*base = kbg_median(g, kBaselineGaps);
	return KBG_OK;
}

/* ---- modes ----------------------------------------------------------- */

int run_test(struct ctx *x, struct prepared *c)
{
	struct sample smp;

	KBG_STEP(alloc_case(x, c, 1, 1));
	KBG_STEP(make_set(x, 0, kbh_seed_derive(c->seed, 1, 0)));
	KBG_TRY(x, cudaDeviceSynchronize(), "preparing the test");
	return one_call(x, 1, &smp);
}

struct bench_result {
	struct kbh_stats st;
	enum kbh_stop stop;
	double gap_med, gap_base, sample_wall_ns;
	uint32_t warmup;  /* untimed, checked calls */
	uint32_t hold_timeouts; /* calls whose hold ended by its timeout */
	int host_short;   /* an event time exceeded the host's observation */
};

int run_bench(struct ctx *x, struct prepared *c, struct bench_result *r)
{
	const struct kbg_limits *lim = &c->lim;
	int nsets = c->lay.fresh ? 1 : c->lay.sets;
	struct sample smp;
	uint64_t t0, n_alloc;
	double *gaps;
	int rc = KBG_OK;

	memset(r, 0, sizeof *r);
	kbh_stats_init(&r->st);
	x->hold_timeouts = 0;
	KBG_STEP(alloc_case(x, c, nsets, kSlots));
	if (!c->lay.fresh)
		for (int s = 0; s < nsets; s++)
			KBG_STEP(make_set(x, s, kbh_seed_derive(c->seed, 1, s)));
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
	if (!gaps) {
		msgf(x, "out of host memory");
		return KBG_INFRA;
	}
	if (x->mode == KBH_MODE_PROFILE) {
		/* A no-op without a profiler; never leave its error behind
		 * to be blamed on the submission. */
		(void)cudaProfilerStart();
		(void)cudaGetLastError();
	}
	t0 = kbh_now_ns();
	for (;;) {
		int check = x->mode != KBH_MODE_PROFILE || r->st.n == 0 ||
			    r->st.n + 1 >= lim->stop.max_runs;
		rc = one_call(x, check, &smp);
		if (rc != KBG_OK)
			break;
		if (r->st.n < n_alloc)
			gaps[r->st.n] = smp.gap_ns;
		kbh_stats_add(&r->st, smp.ns);
#ifdef KBG_SAMPLE_LOG
		fprintf(stderr, "S %d %.0f %.0f\n",
			(int)((x->ncalls - 1) % (uint64_t)x->nslots), smp.ns,
			smp.gap_ns);
#endif
		if (smp.ns > smp.host_ns * 1.05 + 50000.0)
			r->host_short = 1;
		r->stop = kbh_stop_check(&lim->stop, &r->st,
					 kbh_now_ns() - t0);
		if (r->stop != KBH_STOP_CONTINUE)
			break;
	}
	if (x->mode == KBH_MODE_PROFILE) {
		(void)cudaProfilerStop();
		(void)cudaGetLastError();
	}
	r->hold_timeouts = x->hold_timeouts;
	if (rc == KBG_OK && r->st.n) {
		r->sample_wall_ns = (double)(kbh_now_ns() - t0) / (double)r->st.n;
		r->gap_med = kbg_median(
			gaps, r->st.n < n_alloc ? r->st.n : n_alloc);
	}
	free(gaps);
	return rc;
}

int report_bench(struct ctx *x, size_t i, struct prepared *c,
		 const struct bench_result *r)
{
	struct kbh_peak peak;
	const char *why = NULL;
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
	kbh_report_bench(rep, i, "hold", "%s", x->hold ? "on" : "off");
	kbh_report_bench(rep, i, "hold_timeouts", "%u",
			 (unsigned)r->hold_timeouts);

	if (kbh_cost_suspect(&c->lay.cost, &peak, r->st.best))
		why = "below-floor: the best sample is faster than the "
		      "device's physical floor";
	else if (kbg_outlives(r->gap_med, r->gap_base, r->st.mean))
		why = "outlives-timing: work was still running after the end "
		      "event (a non-blocking stream or another thread?)";
	else if (r->host_short)
		why = "host-bound: an event time exceeded the host's "
		      "observation of the call";
	kbh_report_bench(rep, i, "status", "%s", why ? "suspect" : "pass");
	if (why)
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

int finish(struct ctx *x, int code)
{
	if (x->rep) {
		report_system_end(x);
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

} // namespace

int main(int argc, char **argv)
{
	static struct ctx x;
	struct kbh_cases cases = {NULL, 0};
	struct prepared *prep;
	char err[512];
	int code = KBH_EXIT_OK;

	if (kbh_trusted_init(err, sizeof err)) {
		fprintf(stderr, "eval.out: %s\n", err);
		return KBH_EXIT_DEVICE;
	}
	if (kbh_report_open_env(&x.rep, err, sizeof err)) {
		fprintf(stderr, "eval.out: %s\n", err);
		return KBH_EXIT_NO_FD;
	}
	if (argc != 3 || kbh_mode_parse(argv[1], &x.mode))
		return usage(argv[0]);
	x.p = &kbg_problem_def;
	if (kbh_cases_load(argv[2], &cases, err, sizeof err)) {
		fprintf(stderr, "eval.out: %s\n", err);
		return KBH_EXIT_BAD_SPEC;
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

	if (x.mode == KBH_MODE_TEST) {
		size_t failed = 0;
		kbh_report_test_count(x.rep, cases.n);
		for (size_t i = 0; i < cases.n; i++) {
			int rc;
			kbh_report_test(x.rep, i, "spec", "%s", prep[i].c.spec);
			rc = run_test(&x, &prep[i]);
			if (rc == KBG_OK)
				rc = free_case(&x);
			else
				(void)free_case(&x);
			if (rc == KBG_INFRA)
				return infra_exit(&x);
			if (rc == KBG_FAIL) {
				failed++;
				kbh_report_test(x.rep, i, "status", "fail");
				kbh_report_test(x.rep, i, "error", "%s", x.msg);
				/* A sticky error leaves the context unusable:
				 * the remaining tests cannot run. */
				if (cudaDeviceSynchronize() != cudaSuccess) {
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
		code = failed ? KBH_EXIT_FAILED : KBH_EXIT_OK;
	} else {
		kbh_report_bench_count(x.rep, cases.n);
		for (size_t i = 0; i < cases.n; i++) {
			struct bench_result r;
			int rc;
			kbh_report_bench(x.rep, i, "spec", "%s", prep[i].c.spec);
			rc = run_bench(&x, &prep[i], &r);
			if (rc == KBG_OK)
				rc = free_case(&x);
			else
				(void)free_case(&x);
			if (rc == KBG_INFRA)
				return infra_exit(&x);
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
	kbh_report_close(x.rep);
	kbh_cases_free(&cases);
	free(prep);
	return code;
}

#pragma GCC visibility pop
