/* kbg_main.cu: the GPU timing driver (main of every CUDA problem's
 * eval.out).
 *
 *     POPCORN_FD=<fd> ./eval.out test|benchmark|profile|leaderboard cases.txt
 *
 * Theory of operation
 * -------------------
 * Start-up: resolve the trusted libc pointers (harness.c), open the report
 * (exit 111 without POPCORN_FD), then fork (the report relay, below: the
 * parent keeps the report channel and runs no user code; everything else
 * happens in the child). The child parses the mode (exit 2) and every
 * case, running the problem's host-side setup on each, before the GPU is
 * touched (exit 113 on any bad case); removes the cases file when the
 * worker asks (KBH_CASES_UNLINK=1: the seeds are not the submission's
 * business) and draws the run key (getrandom). Then it creates the
 * context, reads the device's attributes, opens NVML (dlopen; optional)
 * and writes the system.* keys.
 *
 * Buffers of one case: `sets` data sets, each its inputs as generated
 * (pristine; the submission never gets these pointers) and, for data sets
 * made once per case, the expected result in host memory; one device
 * buffer for the expected result of the call being checked; two work
 * slots (inputs and outputs the submission gets), used alternately so
 * consecutive calls see different addresses; a scratch buffer for
 * reference and check. All are separate cudaMallocs.
 *
 * Seeds: a case's first call (test mode's only one) uses data from the
 * case seed alone, so failures replay; every later call's data (and the
 * choice among data sets, and every set but the first) also depends on
 * the run key, 64 bits from getrandom() drawn before user code runs: no
 * file, argument or call count predicts the inputs of a timed call.
 *
 * Expected results: never on the device while the submission runs. With
 * fresh data the reference runs only after the call (and its work) ended,
 * on inputs regenerated from the seed; a set's result is copied in from
 * host memory after the call. The device buffer and the reference's
 * scratch are zeroed after every check.
 *
 * One call (every call is staged the same way, warm-up included):
 *   1. data: fresh data (layout.fresh, and test mode) is generated into
 *      set 0 from the call's seed; otherwise a set is drawn at random
 *      among sets made once per case;
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
 * Right before the first call of custom_kernel the report gets
 * "user-code: started": from then on the worker takes 2/110/111/113 as
 * the submission's (it shares the process), and the relay turns an exit
 * the driver did not announce into 115 (crashed).
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
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
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

/* Step results: 0 ok; KBG_FAIL the submission failed (ctx.msg says why);
 * KBG_INFRA a platform error (ctx.msg says which). */
enum { KBG_OK = 0, KBG_FAIL = 1, KBG_INFRA = -1 };

/* Pristine inputs on the device; for problems with data sets made once
 * per case (layout.fresh == 0) also the set's expected result, kept in
 * host memory: never on the device while the submission runs. */
struct data_set {
	void *in[KBG_MAX_BUFS];
	void *exp_host; /* cudaMallocHost, exp_bytes; NULL for fresh data */
	uint64_t seed;
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
	/* The expected result of the current call, on the device only from
	 * after the call until its check: computed (fresh data) or copied
	 * from the set's host copy into it after the submission returned,
	 * zeroed again after the check. */
	void *exp;
	uint64_t ncalls;
	struct kbh_rng pick;
	/* Per-run randomness (getrandom at start-up, before any user code):
	 * mixed into the seeds of every call but each case's first, so that
	 * no file, argument or call count tells a submission its future
	 * inputs. */
	uint64_t run_key;
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
	if (first != cudaSuccess)
		return blame(x, first, "freeing case buffers");
	return KBG_OK;
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

/* with_sets: the case uses data sets made once (expected results kept
 * on the host); else one set regenerated before every call. */
int alloc_case(struct ctx *x, struct prepared *c, int nsets, int nslots,
	       int with_sets)
{
	const struct kbg_layout *l = &c->lay;

	x->cur = c;
	x->nsets = nsets;
	x->nslots = nslots;
	x->ncalls = 0;
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

/* Stages, runs, times and (when `check`) checks one call. */
int one_call(struct ctx *x, int check, struct sample *out)
{
	const struct kbg_problem *p = x->p;
	struct prepared *c = x->cur;
	const struct kbg_layout *l = &c->lay;
	int s, w = (int)(x->ncalls % (uint64_t)x->nslots);
	cudaError_t e;
	uint64_t t0, t1;

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
	int rc = kbg_dev_flush(x->flush_buf, x->flush_bytes, x->sink);
	if (rc)
		return blame(x, (cudaError_t)-rc, "flushing L2");
	/* Staging must be complete and error-free before the clock starts:
	 * a pending error would otherwise be blamed on the submission. */
	KBG_TRY(x, cudaDeviceSynchronize(), "staging the call");

	if (!x->called && kbh_report_user_started(x->rep) != 0) {
		/* Any exit from the first call on may be the submission's
		 * own: the worker reads this line. */
		msgf(x, "writing the report failed");
		return KBG_INFRA;
	}

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

	KBG_STEP(alloc_case(x, c, 1, 1, 0));
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

/* ---- the report relay ------------------------------------------------ *
 *
 * The submission runs in this process and could write to the report
 * channel (POPCORN_FD) itself: a complete fake report and exit(0), from
 * custom_kernel or an exit handler; or end the process with an exit
 * status that blames the platform (110). So the channel stays in a
 * parent process that runs no user code: main() forks before anything
 * else (before any CUDA call: the child creates the context), the child
 * puts /dev/null on the channel's descriptor and closes every other one
 * above 2, and runs the whole driver, its report lines going to the
 * parent through a pipe, one frame per line, each frame tagged with
 * SipHash-2-4 under a 128-bit key from getrandom() and a sequence number.
 * The parent (non-dumpable: no ptrace, no /proc/<pid>/fd or mem for the
 * child) checks every frame and writes its line to the channel. The
 * child's last frame announces its exit code.
 *
 * The parent decides the run's exit status:
 *   - the announced code, when the child exits with exactly that status;
 *   - 115 (crashed: `crash: <why>` and `check: fail` on the report) when
 *     a frame fails its tag (someone else wrote to the pipe), when the
 *     child ends without announcing after user code started (any exit
 *     status but 114, the watchdog's: exit(110) from custom_kernel is
 *     the submission's), or exits with another status than it announced
 *     (an exit handler or thread changed it);
 *   - the child's status as it is when it ends without announcing before
 *     user code started; its signal, re-raised, when it was killed.
 *
 * What it does not cover: code in the child can read the key from its
 * own memory (like patching the driver's timing code, which the sandbox,
 * the physical floor and the worker's wall-clock check must catch); code
 * that runs before main (constructors in the submission's object: nvcc
 * adds one per file itself, so the worker's ELF check must allow exactly
 * nvcc's registration function, see README) runs in the parent. A thread
 * already running at main() is refused (exit 115).
 */

const uint32_t kRelayMagic = 0x4b425231; /* "KBR1" */
const size_t kRelayMax = KBH_REPORT_VALUE_MAX + 256;

struct relay_hdr {
	uint32_t magic;
	uint32_t len; /* payload bytes: type, then data */
	uint64_t tag; /* SipHash-2-4(key, seq || payload) */
};

struct relay {
	int wfd;          /* child: the pipe's write end */
	int rfd;          /* parent: its read end */
	int report_fd;    /* parent: the channel */
	pid_t child;
	uint64_t key[2];
	uint64_t seq;
};

struct relay g_relay;

inline uint64_t rotl64(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

#define KBG_SIPROUND                                                       \
	do {                                                               \
		v0 += v1;                                                  \
		v1 = rotl64(v1, 13);                                       \
		v1 ^= v0;                                                  \
		v0 = rotl64(v0, 32);                                       \
		v2 += v3;                                                  \
		v3 = rotl64(v3, 16);                                       \
		v3 ^= v2;                                                  \
		v0 += v3;                                                  \
		v3 = rotl64(v3, 21);                                       \
		v3 ^= v0;                                                  \
		v2 += v1;                                                  \
		v1 = rotl64(v1, 17);                                       \
		v1 ^= v2;                                                  \
		v2 = rotl64(v2, 32);                                       \
	} while (0)

/* SipHash-2-4 (Aumasson & Bernstein) of m[0..n). */
uint64_t siphash24(const uint64_t k[2], const unsigned char *m, size_t n)
{
	uint64_t v0 = 0x736f6d6570736575ull ^ k[0];
	uint64_t v1 = 0x646f72616e646f6dull ^ k[1];
	uint64_t v2 = 0x6c7967656e657261ull ^ k[0];
	uint64_t v3 = 0x7465646279746573ull ^ k[1];
	uint64_t b = (uint64_t)n << 56, w;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		w = 0;
		for (int j = 7; j >= 0; j--)
			w = w << 8 | m[i + (size_t)j];
		v3 ^= w;
		KBG_SIPROUND;
		KBG_SIPROUND;
		v0 ^= w;
	}
	for (size_t j = 0; i + j < n; j++)
		b |= (uint64_t)m[i + j] << (8 * j);
	v3 ^= b;
	KBG_SIPROUND;
	KBG_SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	KBG_SIPROUND;
	KBG_SIPROUND;
	KBG_SIPROUND;
	KBG_SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}
#undef KBG_SIPROUND

uint64_t relay_tag(const struct relay *rl, uint64_t seq, const char *p,
		   size_t n)
{
	unsigned char buf[8 + kRelayMax];

	for (int j = 0; j < 8; j++)
		buf[j] = (unsigned char)(seq >> (8 * j));
	memcpy(buf + 8, p, n);
	return siphash24(rl->key, buf, 8 + n);
}

int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Child: one frame (type, data), in one write (below PIPE_BUF: atomic). */
int relay_send(struct relay *rl, char type, const char *data, size_t n)
{
	char frame[sizeof(struct relay_hdr) + kRelayMax];
	struct relay_hdr h;

	if (n + 1 > kRelayMax)
		return -1;
	frame[sizeof h] = type;
	memcpy(frame + sizeof h + 1, data, n);
	h.magic = kRelayMagic;
	h.len = (uint32_t)(n + 1);
	h.tag = relay_tag(rl, rl->seq++, frame + sizeof h, n + 1);
	memcpy(frame, &h, sizeof h);
	return write_all(rl->wfd, frame, sizeof h + n + 1);
}

int relay_sink(void *ctx, const char *line, size_t len)
{
	return relay_send((struct relay *)ctx, 'L', line, len);
}

/* Child: the driver's exit code, its last frame. */
void relay_end(struct relay *rl, int code)
{
	char num[16];
	int n = snprintf(num, sizeof num, "%d", code);

	fflush(NULL);
	(void)relay_send(rl, 'E', num, (size_t)n);
	close(rl->wfd);
}

/* Threads of this process (1 unless something ran before main). */
int thread_count(void)
{
	char buf[4096];
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC), n = -1;
	ssize_t len;

	if (fd < 0)
		return -1;
	len = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (len <= 0)
		return -1;
	buf[len] = '\0';
	const char *t = strstr(buf, "\nThreads:");
	if (t)
		n = atoi(t + 9);
	return n;
}

/* Parent: a line of its own on the channel. */
void relay_line(struct relay *rl, const char *key, const char *value)
{
	char line[512];
	int n = snprintf(line, sizeof line, "%s: %s\n", key, value);

	if (n > 0 && (size_t)n < sizeof line)
		(void)write_all(rl->report_fd, line, (size_t)n);
}

/* Parent: the run failed by the submission's doing. */
int relay_crash(struct relay *rl, int saw_check, const char *why)
{
	fprintf(stderr, "eval.out: %s\n", why);
	relay_line(rl, "crash", why);
	if (!saw_check)
		relay_line(rl, "check", "fail");
	return KBH_EXIT_CRASHED;
}

/* Forks. Returns 1 in the parent, 0 in the child, -1 (errno) on error
 * (nothing forked). */
int relay_start(struct relay *rl, int report_fd)
{
	int p[2];

	memset(rl, 0, sizeof *rl);
	rl->report_fd = report_fd;
	if (kbh_seed_random(&rl->key[0]) || kbh_seed_random(&rl->key[1]))
		return -1;
	if (pipe2(p, O_CLOEXEC) != 0)
		return -1;
	fflush(NULL);
	rl->child = fork();
	if (rl->child < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		errno = e;
		return -1;
	}
	if (rl->child > 0) {
		close(p[1]);
		rl->rfd = p[0];
		/* No ptrace, no /proc/<pid>/{fd,mem,environ} for the child
		 * (same uid): the channel stays out of its reach. */
		prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
		return 1;
	}
	close(p[0]);
	rl->wfd = p[1];
	/* The channel's descriptor keeps its number, on /dev/null: whatever
	 * the child writes there is lost. Every other descriptor above 2
	 * but the pipe is closed. */
	int nul = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (nul >= 0 && nul != report_fd) {
		dup2(nul, report_fd);
		close(nul);
	}
	for (int fd = 3; fd < 4096; fd++)
		if (fd != rl->wfd && fd != report_fd)
			close(fd);
	rl->report_fd = -1;
	return 0;
}

/* Parent: relays checked frames until the child's last one or its end,
 * then decides the exit status (see above). */
int relay_parent(struct relay *rl)
{
	static char buf[1 << 16];
	size_t have = 0;
	int saw_check = 0, started = 0, ended = 0, end_code = 0;
	int forged = 0, reaped = 0, st = 0;
	uint64_t seq = 0;

	for (;;) {
		struct pollfd pf = {rl->rfd, POLLIN, 0};
		int pr = poll(&pf, 1, 200);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr == 0) {
			/* A descendant may hold the pipe open after the
			 * child is gone: do not wait for its EOF. */
			if (waitpid(rl->child, &st, WNOHANG) == rl->child) {
				reaped = 1;
				fcntl(rl->rfd, F_SETFL, O_NONBLOCK);
			}
			if (!reaped)
				continue;
		}
		ssize_t n = read(rl->rfd, buf + have, sizeof buf - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* EOF, or drained after the child ended */
		have += (size_t)n;
		size_t off = 0;
		while (!forged && !ended && have - off >= sizeof(relay_hdr)) {
			struct relay_hdr h;
			memcpy(&h, buf + off, sizeof h);
			if (h.magic != kRelayMagic || h.len < 1 ||
			    h.len > kRelayMax) {
				forged = 1;
				break;
			}
			if (have - off < sizeof h + h.len)
				break;
			const char *pl = buf + off + sizeof h;
			if (relay_tag(rl, seq, pl, h.len) != h.tag) {
				forged = 1;
				break;
			}
			seq++;
			if (pl[0] == 'L') {
				const char *line = pl + 1;
				size_t len = h.len - 1;
				if (len >= 7 && memcmp(line, "check: ", 7) == 0)
					saw_check = 1;
				if (len == 19 &&
				    memcmp(line, "user-code: started", 18) == 0)
					started = 1;
				if (write_all(rl->report_fd, line, len) != 0) {
					/* the worker went away: nothing to
					 * report to */
					kill(rl->child, SIGKILL);
					waitpid(rl->child, NULL, 0);
					return KBH_EXIT_NO_FD;
				}
			} else if (pl[0] == 'E') {
				char num[16];
				size_t len = h.len - 1 < 15 ? h.len - 1 : 15;
				memcpy(num, pl + 1, len);
				num[len] = '\0';
				end_code = atoi(num);
				ended = 1;
			} else {
				forged = 1;
			}
			off += sizeof h + h.len;
		}
		memmove(buf, buf + off, have - off);
		have -= off;
		if (forged || ended)
			break;
		if (have == sizeof buf) {
			forged = 1; /* no frame is this long */
			break;
		}
	}
	close(rl->rfd);
	if (forged) {
		kill(rl->child, SIGKILL);
		if (!reaped)
			waitpid(rl->child, &st, 0);
		return relay_crash(rl, saw_check,
				   "the report channel carried data the "
				   "harness did not write (forged results?)");
	}
	if (!reaped)
		while (waitpid(rl->child, &st, 0) < 0 && errno == EINTR)
			;
	char why[160];
	if (ended) {
		if (WIFEXITED(st) && WEXITSTATUS(st) == end_code)
			return end_code;
		if (WIFSIGNALED(st))
			snprintf(why, sizeof why,
				 "killed by signal %d after the harness "
				 "finished (exit handlers?)", WTERMSIG(st));
		else
			snprintf(why, sizeof why,
				 "exit status %d, but the harness finished with "
				 "%d (exit handlers?)", WEXITSTATUS(st), end_code);
		return relay_crash(rl, saw_check, why);
	}
	if (WIFSIGNALED(st)) {
		/* As if it had happened here: the worker reports the
		 * signal (and its out-of-memory kills) as before. */
		int sig = WTERMSIG(st);
		signal(sig, SIG_DFL);
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, sig);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		kill(getpid(), sig);
		return KBH_EXIT_CRASHED;
	}
	int code = WIFEXITED(st) ? WEXITSTATUS(st) : KBH_EXIT_CRASHED;
	if (!started || code == KBH_EXIT_TIMEOUT)
		return code;
	snprintf(why, sizeof why,
		 "custom_kernel ended the process (exit status %d) before the "
		 "harness finished", code);
	return relay_crash(rl, saw_check, why);
}

/* Everything after the report channel is open: in the relay's child. */
int kbg_run(struct ctx &x, int argc, char **argv);

} // namespace

int main(int argc, char **argv)
{
	static struct ctx x;
	char err[512], fdnum[32];
	const char *fdv;
	int rc;

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
	kbh_report_close(x.rep);
	x.rep = NULL;
	if (thread_count() > 1) {
		/* Only code run before main can have started a thread. */
		g_relay.report_fd = atoi(fdnum);
		_exit(relay_crash(&g_relay, 0,
				  "a thread was running before main (static "
				  "initialisation in the submission?)"));
	}
	rc = relay_start(&g_relay, atoi(fdnum));
	if (rc < 0) {
		fprintf(stderr, "eval.out: starting the report relay: %s\n",
			strerror(errno));
		return KBH_EXIT_DEVICE;
	}
	if (rc > 0)
		_exit(relay_parent(&g_relay)); /* no exit handlers here */
	if (kbh_report_open_sink(&x.rep, relay_sink, &g_relay)) {
		fprintf(stderr, "eval.out: out of memory\n");
		relay_end(&g_relay, KBH_EXIT_DEVICE);
		return KBH_EXIT_DEVICE;
	}
	int code = kbg_run(x, argc, argv);
	relay_end(&g_relay, code);
	return code;
}

namespace {

/* Everything after the report channel is open: in the relay's child. */
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

} // namespace

#pragma GCC visibility pop
