/* kbg_parent.cpp: the GPU timing driver's parent side, its helpers and
 * its requests to the child (README.md: the parent in "The process
 * split", step 5 of "One call", the CUDA errors rule).
 *
 * Messages and the error classes (the submission's, the platform's),
 * the device's attributes and the system.* keys, and every request the
 * parent makes to the child through the guard, with the validation of
 * its reply: initialising it, calibrating the guard's overhead, mapping
 * and unmapping the work slots, the profiler's range, loading the
 * submission. Never calls user code.
 */
#include "kbg_int.h"
#include "kbg_dev.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#pragma GCC visibility push(hidden)

namespace kbg_drv
{

/* ---- messages and error classes ----------------------------------------- */

/* Sets x->msg, printf-style. */
void kbg__msgf(struct ctx *x, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(x->msg, sizeof x->msg, fmt, ap);
	va_end(ap);
}

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

/* Classifies a CUDA error met while doing `what`. */
int kbg__blame(struct ctx *x, cudaError_t e, const char *what)
{
	kbg__msgf(x, KBG_API " error %s: %s (%s)", what, cudaGetErrorString(e),
		  cudaGetErrorName(e));
	return x->called && !kbg_is_infra_error((int)e) ? KBG_FAIL : KBG_INFRA;
}

/* A problem hook returned rc (0 or a negative cudaError_t or errno). */
int kbg__hook(struct ctx *x, int rc, const char *what)
{
	cudaError_t e;

	if (rc == 0 && (e = cudaGetLastError()) != cudaSuccess)
		return kbg__blame(x, e, what);
	if (rc == 0)
		return KBG_OK;
	if (rc < 0 && -rc < 10000)
		return kbg__blame(x, (cudaError_t)-rc, what);
	kbg__msgf(x, "%s failed (%d)", what, rc);
	return x->called ? KBG_FAIL : KBG_INFRA;
}

/* ---- device and system information ----------------------------------- */

static int read_device(struct ctx *x)
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

void kbg__report_system_start(struct ctx *x)
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
		      peak.bytes_per_s / KBG_PEAK_MARGIN / 1e9, src, x->dev.sms,
		      x->dev.l2_bytes, kbg_llc_bytes(&x->dev));
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

void kbg__report_system_end(struct ctx *x)
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

int kbg__init_device(struct ctx *x)
{
	KBG_TRY(x, cudaSetDevice(0), "selecting device 0");
	KBG_TRY(x, cudaFree(0), "creating the context");
	KBG_STEP(read_device(x));
	int rc = kbg_dev_init();
	if (rc)
		return kbg__blame(x, (cudaError_t)-rc,
				  "initialising the driver");
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
static int reply_ok(const struct kbg_reply *r, uint64_t seq)
{
	return r->seq == seq && r->where < W_COUNT &&
	       (r->err == 0) == (r->where == W_NONE) && r->err >= 0 &&
	       r->err < 10000 && r->hold <= 1 && r->hold_timed_out <= 1 &&
	       r->sticky <= 1 && isfinite(r->dev_ns) && r->dev_ns >= 0 &&
	       isfinite(r->gap_ns) && r->gap_ns >= 0;
}

/* The steps of the child's replies (reply.where, kbg_int.h), named. */
static const char *const kWhere[W_COUNT] = {
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

/* Classifies a CUDA error the child reported, by the same rules as the
 * parent's own (kbg__blame): the submission's once it has run, unless
 * only a broken device or driver raises it. The message is made here
 * from the code; nothing the child wrote is printed. */
static int child_error(struct ctx *x, const struct kbg_reply *r)
{
	cudaError_t e = (cudaError_t)r->err;

	x->child_sticky |= (int)r->sticky;
	if (r->where == W_LEFT)
		kbg__msgf(x, "custom_kernel left a " KBG_API " error: %s (%s)",
			  cudaGetErrorString(e), cudaGetErrorName(e));
	else
		kbg__msgf(x, KBG_API " error %s: %s (%s)", kWhere[r->where],
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
/* What a request's outcome means (kbg__child_request's return values). */
static int request_done(struct ctx *x, int rc, uint64_t seq, const char *what,
			const struct kbh_guard_window *w, struct kbg_reply *r)
{
	if (rc == -ECHILD) {
		if (!x->called) {
			kbg__msgf(x,
				  "the submission's process %s before any "
				  "submission code ran (%s)",
				  kbh_guard_death(x->g), what);
			return KBG_INFRA;
		}
		kbg__msgf(x,
			  "custom_kernel crashed: the submission's process %s "
			  "during %s (a crash, or exit() called from the "
			  "submission)",
			  kbh_guard_death(x->g), what);
		x->crashed = 1;
		return KBG_CRASH;
	}
	if (rc) {
		kbg__msgf(x, "guard request (%s): %s", what, strerror(-rc));
		return KBG_INFRA;
	}
	kbh_copy(r, x->reply, sizeof *r);
	if (w->status != 0 || !reply_ok(r, seq)) {
		kbg__msgf(x,
			  "the submission's process sent a malformed reply "
			  "to the harness (%s): its copy of the driver was "
			  "tampered with",
			  what);
		return x->called ? KBG_FAIL : KBG_INFRA;
	}
	if (r->err)
		return child_error(x, r);
	return KBG_OK;
}

int kbg__child_request(struct ctx *x, uint32_t op, void *arg, size_t size,
		       const char *what, struct kbh_guard_window *w,
		       struct kbg_reply *r)
{
	const uint64_t seq = ++x->seq;

	memcpy(arg, &seq, sizeof seq);
	kbh_fill(x->reply, 0xff, sizeof *x->reply);
	return request_done(x, kbh_guard_request(x->g, op, arg, size, w), seq,
			    what, w, r);
}

/* ---- the sentinel (README.md, "The sentinel") ------------------------- */

/* How long the parent waits for a sentinel to start or end before it
 * calls the device broken: far above a time slice. */
static const uint64_t kSentWaitNs = 5000000000ull;

/* Spins until sentinel seq has started (ended). 0, or -ETIMEDOUT. */
static int sent_wait(uint32_t seq, int ended, struct kbg_sent_rec *rec)
{
	uint64_t t0 = kbh_now_ns();
	for (unsigned i = 0;; i++) {
		if (ended ? kbg_sent_ended(seq, rec)
			  : kbg_sent_started(seq, rec))
			return 0;
		if ((i & 1023) == 0 && kbh_now_ns() - t0 > kSentWaitNs)
			return -ETIMEDOUT;
	}
}

static int sent_stuck(struct ctx *x, const char *what)
{
	kbg__msgf(x,
		  "the harness's sentinel kernel did not %s within %.0f s "
		  "(device or driver fault)",
		  what, (double)kSentWaitNs / 1e9);
	return KBG_INFRA;
}

/* What each jump of a watch is charged less (kbg_time_switch_ns). */
static uint64_t switch_ns(const struct ctx *x)
{
	return (uint64_t)kbg_time_switch_ns(&x->tcal);
}

/* Launches a probe and waits until it runs: *seen its host time. */
static int sent_probe(struct ctx *x, uint64_t *seen, struct kbg_sent_rec *rec)
{
	uint32_t seq = ++x->sent_seq;
	KBG_TRY(x, (cudaError_t)-kbg_sent_launch(seq, 0, 0, 0),
		"launching a probe");
	if (sent_wait(seq, 0, rec))
		return sent_stuck(x, "start");
	*seen = kbh_now_ns();
	return KBG_OK;
}

int kbg__watch_start(struct ctx *x)
{
	struct kbg_sent_rec rec;
	if (!x->sent || x->watch_seq)
		return KBG_OK;
	uint32_t seq = ++x->sent_seq;
	KBG_TRY(x, (cudaError_t)-kbg_sent_launch(seq, 1, 0, switch_ns(x)),
		"launching the sentinel");
	if (sent_wait(seq, 0, &rec))
		return sent_stuck(x, "start");
	x->watch_seq = seq;
	x->watch_t0 = kbh_now_ns();
	x->watch_dev = rec.start_ns;
	return KBG_OK;
}

/* Ends the watch (before the parent synchronises its whole context or
 * frees memory). The child's work it saw after the last call is counted
 * against the case (nothing is left to charge it to). */
int kbg__watch_stop(struct ctx *x)
{
	struct kbg_sent_rec rec;
	uint32_t seq = x->watch_seq;
	if (!seq)
		return KBG_OK;
	x->watch_seq = 0;
	kbg_sent_release(seq);
	if (sent_wait(seq, 1, &rec))
		return sent_stuck(x, "end");
	x->outside_calls += rec.pre_gaps > 0;
	return KBG_OK;
}

/* Renews a watch that has run long, before "go": a watch that ran
 * longer than a time slice is preempted as soon as the child queues its
 * work, which breaks the hold (seen for every call of vectoradd's largest
 * case, whose staging takes 7 ms on the H100). The next watch is queued
 * behind this one on the same stream (it starts as this one ends, with
 * no turn of another context in between) and gets a fresh slice; this
 * one's charged outside time carries to the next call. */
static int watch_renew(struct ctx *x)
{
	struct kbg_sent_rec rec, nrec;
	uint32_t old = x->watch_seq, seq = ++x->sent_seq;

	KBG_TRY(x, (cudaError_t)-kbg_sent_launch(seq, 1, 0, switch_ns(x)),
		"launching the sentinel");
	kbg_sent_release(old);
	if (sent_wait(old, 1, &rec) || sent_wait(seq, 0, &nrec))
		return sent_stuck(x, "end");
	x->carry_ns += rec.pre_charge_ns;
	x->outside_calls += rec.pre_gaps > 0;
	x->watch_seq = seq;
	x->watch_t0 = kbh_now_ns();
	x->watch_dev = nrec.start_ns;
	return KBG_OK;
}

/* How many probes a call may launch behind its released hold, and how
 * long the parent's context stays idle before launching another. */
static const int kProbeTries = 4;
static const uint64_t kProbeIdleNs = 20000;

/* The successor probe: launched behind the released hold, it starts when
 * the child's context lets go of the GPU, and from then on watches (any
 * later turn of the child's context is a jump it charges) until "done".
 * One that starts sooner after the release than another context's turn
 * can take (kbg_time_turn_ns) ran before the child's work: the scheduler
 * had not yet switched to the child (seen on the H100 and the H200 for
 * vectoradd's largest case, 27 us after the release). It ends at once
 * and marks nothing, so another is launched after kProbeIdleNs, up to
 * kProbeTries in all; the last one's start is tc->back_dev (one still
 * early leaves the call to the host path). A probe that watches is
 * x->probe_seq, ended by probe_end. */
static int successor_probe(struct ctx *x, struct kbg_tcall *tc)
{
	const uint64_t not_before =
		tc->rel_dev + (uint64_t)kbg_time_turn_ns(&x->tcal);
	struct kbg_sent_rec pr;

	for (int i = 0; i < kProbeTries; i++) {
		uint32_t seq = ++x->sent_seq;
		KBG_TRY(x,
			(cudaError_t)-kbg_sent_launch(seq, 2, not_before,
						      switch_ns(x)),
			"launching a probe");
		if (sent_wait(seq, 0, &pr))
			return sent_stuck(x, "start");
		tc->back_dev = pr.start_ns;
		if (!pr.early) {
			x->probe_seq = seq;
			break;
		}
		if (sent_wait(seq, 1, &pr))
			return sent_stuck(x, "end");
		x->early_probes++;
		/* A context that keeps getting work keeps the GPU: leave ours
		 * idle a moment so the scheduler turns to the child's. */
		for (uint64_t t = kbh_now_ns();
		     kbh_now_ns() - t < kProbeIdleNs;)
			;
	}
	return KBG_OK;
}

/* Ends the watching successor probe (after "done", or the child's death):
 * the parent's context is back at its end. */
static int probe_end(struct ctx *x, struct kbg_tcall *tc)
{
	struct kbg_sent_rec pr;
	uint32_t seq = x->probe_seq;

	x->probe_seq = 0;
	kbg_sent_release(seq);
	if (sent_wait(seq, 1, &pr))
		return sent_stuck(x, "end");
	tc->t_probe = kbh_now_ns();
	tc->probe_dev = pr.end_ns;
	tc->p_charge_ns = pr.pre_charge_ns;
	tc->p_watch = 1;
	return KBG_OK;
}

/* A CALL timed by the parent. The watch running since the last call
 * holds the GPU (renewed first if it has run long); the request goes
 * out; as soon as the child says it has launched its work (or is done,
 * or its work broke the hold, or kbg_time_release_ns passed), the hold is
 * released and a probe launched behind it: it starts when the child's
 * context lets go of the GPU and watches until "done". Where there is no
 * such probe, an end probe after "done" (it waits for any work still
 * running). Then the next watch. *tc gets the measurements
 * (kbg_time_sample).
 *
 * The release on the parent's clock (counted as hold_timeouts): a call
 * that waits on the device inside custom_kernel (a synchronize, a
 * synchronous copy or reduction: honest patterns, tests/honest/cuda)
 * cannot return before its work has run, and would otherwise wait until
 * the watch's time slice expired (up to 2.4 ms); and host time before
 * the call's GPU work is kept out of the sample only up to an empty
 * call's launch plus 20 us (a copy engine runs beside the watch: inputs
 * copied out and a result computed on the host would otherwise be
 * free). */
int kbg__timed_request(struct ctx *x, struct op_call *a, const char *what,
		       struct kbh_guard_window *w, struct kbg_reply *r,
		       struct kbg_tcall *tc)
{
	const uint64_t seq = ++x->seq;
	struct kbg_sent_rec rec, pr;
	int rc, ended = 0;

	memset(tc, 0, sizeof *tc);
	if (x->renew_ns && x->watch_seq &&
	    kbh_now_ns() - x->watch_t0 > x->renew_ns)
		KBG_STEP(watch_renew(x));
	const uint32_t hold = x->watch_seq;
	const uint64_t release_ns = (uint64_t)kbg_time_release_ns(&x->tcal);
	int timed_out = 0;
	tc->age_ns = kbh_now_ns() - x->watch_t0;
	memcpy(a, &seq, sizeof seq);
	kbh_fill(x->reply, 0xff, sizeof *x->reply);
	kbg_sent_go(hold);
	rc = kbh_guard_post(x->g, OP_CALL, a, sizeof *a, w);
	if (rc)
		return request_done(x, rc, seq, what, w, r);
	tc->t_go = w->t_go;
	for (unsigned i = 0;; i++) {
		if (__atomic_load_n(&x->reply->launched, __ATOMIC_ACQUIRE) ==
		    seq)
			break;
		if ((ended = kbg_sent_ended(hold, &rec)))
			break;
		if ((i & 255) == 0 && kbh_guard_poll(x->g) != 0)
			break; /* done, or dead: finish says which */
		if ((i & 255) == 0 && kbh_now_ns() - tc->t_go > release_ns) {
			x->hold_timeouts++;
			timed_out = 1;
			break;
		}
	}
	tc->t_rel = kbh_now_ns();
	kbg_sent_release(hold);
	x->watch_seq = 0;
	if (!ended && sent_wait(hold, 1, &rec))
		return sent_stuck(x, "end");
	tc->rel_dev = rec.end_ns;
	tc->broken = (int)rec.broken;
	tc->outside_ns = rec.pre_charge_ns + x->carry_ns;
	x->carry_ns = 0;
#ifdef KBG_SAMPLE_LOG
	if (rec.pre_gaps || rec.broken)
		fprintf(stderr,
			"G watch %.1f us: %u gaps %.1f us, first at %.1f us, "
			"broken %u (post %.1f us), checked at %.1f us, "
			"staged at %.1f us, go at %.1f us\n",
			(double)(rec.end_ns - rec.start_ns) / 1e3, rec.pre_gaps,
			(double)rec.pre_gap_ns / 1e3,
			rec.first_gap_ns
				? (double)(rec.first_gap_ns - rec.start_ns) /
					  1e3
				: -1.0,
			rec.broken, (double)rec.post_gap_ns / 1e3,
			((double)x->ph_checked - (double)x->watch_t0) / 1e3,
			((double)x->ph_staged - (double)x->watch_t0) / 1e3,
			(double)(tc->t_go - x->watch_t0) / 1e3);
#endif
	x->outside_calls += rec.pre_gaps > 0;
	/* No successor probe behind a call that waits on the device inside
	 * custom_kernel: its next work, queued once that wait ends, would
	 * wait behind the watching probe for a time slice. The end probe
	 * and the host path time it. */
	if (!tc->broken && !x->last_long && !timed_out)
		KBG_STEP(successor_probe(x, tc));
	rc = kbh_guard_finish(x->g, w);
	/* The watching probe ends whatever the child did (it would hold
	 * the parent's context for ever). */
	if (x->probe_seq)
		KBG_STEP(probe_end(x, tc));
	if (rc == 0) {
		tc->t_seen = w->t_seen;
		if (!tc->p_watch) {
			/* It waits for work left after "done". */
			KBG_STEP(sent_probe(x, &tc->t_probe, &pr));
			tc->probe_dev = pr.start_ns;
		}
		/* A call as long as half a time slice would have its
		 * successor probe land inside it: the next call skips it. */
		x->last_long = tc->broken ||
			       kbg_time_sample(&x->tcal, tc, NULL) -
					       (double)tc->outside_ns >=
				       x->tcal.short_ns;
#ifndef KBG_NO_PERSIST_RESET
		/* Persisting lines the call set (kbg_case.cpp, the flush):
		 * reset now, as the reset waits for our whole context. */
		KBG_TRY(x, cudaCtxResetPersistingL2Cache(),
			"resetting persisting L2 lines");
#endif
		KBG_STEP(kbg__watch_start(x));
		tc->watch_dev = x->watch_dev;
	}
	return request_done(x, rc, seq, what, w, r);
}

/* 1 when a CALL's claims do not fit the parent's window: [t0, t1] must
 * lie inside [t_go, t_seen] (kbh_guard_verify; no slack: nothing is
 * clamped) and the device time must not exceed t_seen - t_go (within the
 * clocks' tolerance). Pure. */
int kbg__claim_forged(const struct kbh_guard_window *w, double dev_ns)
{
	uint64_t ignored;
	double win = (double)(w->t_seen - w->t_go);

	if (kbh_guard_verify(w, UINT64_MAX, &ignored) == KBH_GUARD_FORGED)
		return 1;
	return dev_ns > win * (1.0 + kClockTolRel) + kClockTolNs;
}

/* Hands the child the current case's slot handles (OPEN). */
int kbg__open_slots(struct ctx *x)
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
	return kbg__child_request(x, OP_OPEN, &a, sizeof a,
				  "mapping the work buffers", &w, &r);
}

/* Has the child unmap the slots (CLOSE). A child already broken by a
 * sticky error cannot: that is reported already, so only its death
 * counts then. */
int kbg__close_slots(struct ctx *x)
{
	struct kbh_guard_window w;
	struct kbg_reply r;
	struct op_flag a;
	const int broken = x->child_sticky;

	if (!x->opened)
		return KBG_OK;
	x->opened = 0;
	memset(&a, 0, sizeof a);
	int rc = kbg__child_request(x, OP_CLOSE, &a, sizeof a,
				    "unmapping the work buffers", &w, &r);
	if (rc != KBG_CRASH && broken)
		return KBG_OK;
	return rc;
}

/* Starts or stops the profiler's capture range in the child, where the
 * submission's kernels run. Only its death matters. */
int kbg__child_profile(struct ctx *x, int on)
{
	struct kbh_guard_window w;
	struct kbg_reply r;
	struct op_flag a;

	memset(&a, 0, sizeof a);
	a.flag = (uint32_t)on;
	int rc = kbg__child_request(x, OP_PROFILE, &a, sizeof a,
				    "the profiler range", &w, &r);
	return rc == KBG_CRASH ? rc : KBG_OK;
}

/* The reply record, the child's context and its overhead (system.guard):
 * before any user code, so every failure here is the platform's. */
int kbg__init_child(struct ctx *x)
{
	struct kbh_guard_window w;
	struct kbg_reply r;
	struct op_init a;
	char err[256];

	x->reply = (struct kbg_reply *)kbh_guard_alloc(x->g, sizeof *x->reply);
	if (!x->reply) {
		kbg__msgf(x, "the guard's arena has no room for the reply");
		return KBG_INFRA;
	}
	if (kbh_guard_publish(x->g, err, sizeof err)) {
		kbg__msgf(x, "%s", err);
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
		/* Timed modes measure with the parent's sentinel (README.md, "The
	 * sentinel"), which owns the hold; the child's is not needed. Never
	 * on AMD GPUs, whose processes' kernels may run at once;
	 * -DKBG_NO_SENTINEL (a test-only build: the ablation of
	 * bench/gpu/timing.sh) times with the child's claim as before. */
#if !defined(KBG_NO_SENTINEL) && !defined(KBG_HIP)
	x->sent = x->mode == KBH_MODE_BENCHMARK ||
		  x->mode == KBH_MODE_LEADERBOARD;
#endif
	if (x->sent) {
		KBG_TRY(x, (cudaError_t)-kbg_sent_init(),
			"setting up the sentinel");
		a.hold = 0;
	}
	KBG_STEP(kbg__child_request(x, OP_INIT, &a, sizeof a, "initialising",
				    &w, &r));
	x->hold = (int)r.hold;
	return KBG_OK;
}

/* Empty CALLs (no custom_kernel): the guard's overhead per request,
 * reported so a reader can compare window_ns with the samples; in timed
 * modes also the sentinel's calibration (kbg_time_calibrate): empty
 * calls through the whole timed path, and one call whose work spins for
 * kSliceTestNs, which tells how soon the GPU's time slice lets a probe
 * in. All before any user code, so none of it is the child's to bend. */
static const uint64_t kSliceTestNs = 4000000;

static int calibrate_sentinel(struct ctx *x)
{
	struct kbg_tcall dev[kCalCalls], host[kCalCalls], spin;
	struct kbh_guard_window w;
	struct kbg_reply r;
	struct op_call a;

	/* Probes, not yet calibrated, must not decide anything. */
	x->tcal.short_ns = 1e18;
	x->tcal.probe_ns = 0;
	KBG_STEP(kbg__watch_start(x));
	/* 0..n-1: the device path (a successor probe behind the hold);
	 * n..2n-1: the host path (none; an end probe after "done"), as a
	 * long call takes it; 2n: the time-slice test. A call whose hold
	 * broke (the GPU's slice ran out while it held, and the child's
	 * empty kernel got in) is not a calibration; it is made again, up
	 * to 4n attempts in all. */
	int nd = 0, nh = 0, tries = 0, have_spin = 0;
	while (nd < kCalCalls || nh < kCalCalls || !have_spin) {
		const int on_dev = nd < kCalCalls,
			  test = !on_dev && nh >= kCalCalls;
		struct kbg_tcall *t = on_dev ? &dev[nd]
				      : test ? &spin
					     : &host[nh];
		if (++tries > 4 * kCalCalls) {
			kbg__msgf(
				x,
				"calibrating the sentinel: the hold broke "
				"in %d of %d calls with no user code (another "
				"process on the GPU?)",
				tries - 1 - nd - nh - have_spin, tries - 1);
			return KBG_INFRA;
		}
		memset(&a, 0, sizeof a);
		a.empty = test ? 2 : 1;
		a.no_tail = 1; /* as the timed calls */
		a.spin_ns = kSliceTestNs;
		const int host_path = !on_dev && !test;
		x->last_long = host_path; /* no successor probe */
		KBG_STEP(kbg__timed_request(x, &a, "calibrating", &w, &r, t));
		if (t->broken || (!host_path && !t->back_dev))
			continue;
		if (on_dev)
			nd++;
		else if (test)
			have_spin = 1;
		else
			nh++;
	}
	double slice = (double)(spin.back_dev - spin.rel_dev);
	if (kbg_time_calibrate(dev, kCalCalls, host, kCalCalls, slice,
			       (double)kSliceTestNs, &x->tcal)) {
		kbg__msgf(x, "calibrating the sentinel: no empty call's probe "
			     "waited for the child's context");
		return KBG_INFRA;
	}
	x->last_long = 0;
	x->outside_calls = 0;
	x->carry_ns = 0;
	/* Well short of a slice: the hold must last until the release. */
	x->renew_ns = (uint64_t)(x->tcal.short_ns / 2);
	kbh_report_kv(x->rep, "system.sentinel",
		      "device path overhead %.1f us, host path %.1f us (from "
		      "go %.1f us), end probe p90 %.1f us, time slice test "
		      "%.1f us (short calls below %.1f us), next watch %.1f "
		      "us after the probe (device clock), done %.1f us after "
		      "the probe, launched %.1f us after go (hold released "
		      "by %.1f us)",
		      x->tcal.dev_ns / 1e3, x->tcal.rel_ns / 1e3,
		      x->tcal.go_ns / 1e3, x->tcal.probe_ns / 1e3, slice / 1e3,
		      x->tcal.short_ns / 1e3, x->tcal.wgap_ns / 1e3,
		      x->tcal.tail_ns / 1e3, x->tcal.launch_ns / 1e3,
		      kbg_time_release_ns(&x->tcal) / 1e3);
	return KBG_OK;
}

int kbg__calibrate(struct ctx *x)
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
		KBG_STEP(kbg__child_request(x, OP_CALL, &a, sizeof a,
					    "calibrating", &w, &r));
		forged += kbg__claim_forged(&w, r.dev_ns);
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
	kbh_report_kv(
		x->rep, "system.guard",
		"child %d%s; empty call: window p50 %.1f us, p95 %.1f us, "
		"event time p50 %.1f us%s",
		kbh_guard_pid(x->g),
		kbh_guard_confined(x->g) ? " confined" : " NOT confined",
		win_p50 / 1e3, win_p95 / 1e3, dev_p50 / 1e3,
		forged ? " (MISFIT)" : "");
	if (!x->sent)
		return KBG_OK;
	int rc = calibrate_sentinel(x);
	int rc2 = kbg__watch_stop(x);
	return rc != KBG_OK ? rc : rc2;
}

/* Loads the submission in the child (guard.h): its constructors and
 * everything else that runs on load run there, after its confinement,
 * never here. Writes "user-code: started" first. KBG_OK; KBG_CRASH when
 * the child died loading it; KBG_FAIL when it does not load (x->msg says
 * why: the loader's words); KBG_INFRA for our own errors. */
int kbg__load_submission(struct ctx *x)
{
	const char *path = getenv(KBH_SUBMISSION_ENV);
	char err[sizeof x->msg];

	if (!path || !path[0]) {
		kbg__msgf(x, "%s is not set", KBH_SUBMISSION_ENV);
		return KBG_INFRA;
	}
	if (kbh_report_user_started(x->rep) != 0) {
		kbg__msgf(x, "writing the report failed");
		return KBG_INFRA;
	}
	x->called = 1;
	int rc = kbh_guard_load(x->g, path, KBH_SUBMISSION_SYMBOL, err,
				sizeof err);
	if (rc == 0)
		return KBG_OK;
	kbg__msgf(x, "%s", err);
	if (rc == -ECHILD) {
		x->crashed = 1;
		return KBG_CRASH;
	}
	return KBG_FAIL;
}

/* Every case failed with x->msg (the submission did not load). */
void kbg__fail_all(struct ctx *x, const struct prepared *prep, size_t n)
{
	const int test = x->mode == KBH_MODE_TEST;

	fprintf(stderr, "eval.out: %s\n", x->msg);
	if (test)
		kbh_report_test_count(x->rep, n);
	else
		kbh_report_bench_count(x->rep, n);
	for (size_t i = 0; i < n; i++) {
		if (test) {
			kbh_report_test(x->rep, i, "spec", "%s",
					prep[i].c.spec);
			kbh_report_test(x->rep, i, "status", "fail");
			kbh_report_test(x->rep, i, "error", "%s", x->msg);
		} else {
			kbh_report_bench(x->rep, i, "spec", "%s",
					 prep[i].c.spec);
			kbh_report_bench(x->rep, i, "status", "fail");
			kbh_report_bench(x->rep, i, "error", "%s", x->msg);
		}
	}
}

} // namespace kbg_drv

#pragma GCC visibility pop
