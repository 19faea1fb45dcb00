/* kbg_child.cpp: the GPU timing driver's child side (README.md: the
 * child in "The process split", step 4 of "One call").
 *
 * Runs in the untrusted process, interleaved with user code: nothing here
 * decides anything; it only does what a request says and reports.
 * kbg__child_op serves one request (kbh_guard_fn); the protocol (ops,
 * arguments, the reply record) is in kbg_int.h.
 */
#include "kbg_int.h"
#include "kbg_dev.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#pragma GCC visibility push(hidden)

namespace kbg_drv
{

/* Records the first failure, and whether the context is left broken: a
 * sticky error is returned again by a synchronize after the last error
 * has been taken. */
static void child_fail(struct kbg_reply *r, cudaError_t e, uint32_t where)
{
	if (r->err)
		return;
	r->err = (int32_t)e;
	r->where = where;
	(void)cudaGetLastError();
	r->sticky = cudaDeviceSynchronize() != cudaSuccess;
	(void)cudaGetLastError();
}

static void child_init(struct child *c, const struct op_init *a,
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
		(void)cudaMemPoolSetAttribute(
			pool, cudaMemPoolAttrReleaseThreshold, &keep);
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
static void child_close(struct child *c, struct kbg_reply *r)
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
static cudaError_t child_map(void **ptr, const cudaIpcMemHandle_t *h,
			     uint32_t n)
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

static void child_open(struct child *c, const struct op_open *a,
		       struct kbg_reply *r)
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

/* The timed region (README.md, "One call", step 4). t0 right before the
 * hold is launched, t1 right after the synchronize: as guard.h asks, the
 * claim covers everything the device did for the call. */
static void child_call(struct child *c, const struct op_call *a,
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
#ifdef KBG_HOSTILE_LAUNCHED
	/* Test only (bench/gpu/timing.sh): a child whose driver says it
	 * launched before the call, so that the parent's hold ends at once
	 * and host time inside the call falls after the release. */
	if (c->reply)
		__atomic_store_n(&c->reply->launched, r->seq, __ATOMIC_RELEASE);
#endif
	if (!a->empty)
		c->p->call(c->params, in, out);
	else if (a->empty == 2)
		(void)kbg_dev_spin(a->spin_ns);
	else
		(void)kbg_dev_empty();
	e = cudaEventRecord(c->ev_end, cudaStreamLegacy);
	if (hold)
		kbg_dev_release(gen);
	/* The parent's sentinel holds the GPU until this is seen. */
	if (c->reply)
		__atomic_store_n(&c->reply->launched, r->seq, __ATOMIC_RELEASE);
	if (e != cudaSuccess) {
		*t1 = kbh_now_ns();
		child_fail(r, e, W_END);
		return;
	}
#ifdef KBG_HOSTILE_EARLY_DONE
	/* Test only (bench/gpu/timing.sh hostile): a child whose driver
	 * was patched to say "done" before its work ends. */
	if (!a->empty) {
		*t1 = kbh_now_ns();
		r->dev_ns = 1;
		return;
	}
#endif
	e = cudaDeviceSynchronize();
	*t1 = kbh_now_ns();
	if (e != cudaSuccess) {
		child_fail(r, e, W_RUN);
		return;
	}
	if (!a->no_tail &&
	    ((e = cudaEventRecord(c->ev_tail, cudaStreamLegacy)) !=
		     cudaSuccess ||
	     (e = cudaEventSynchronize(c->ev_tail)) != cudaSuccess)) {
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
#ifdef KBG_HOSTILE_CLAIM
	/* Test only: a child that rewrites its reply (the claim scaled). */
	if (!a->empty)
		r->dev_ns *= KBG_HOSTILE_CLAIM;
#endif
#ifdef KBG_HOSTILE_AFTER
	/* Test only: work left on the GPU after "done" (a kernel that spins
	 * KBG_HOSTILE_AFTER ns), as a head start for the next call would. */
	if (!a->empty)
		(void)kbg_dev_spin(KBG_HOSTILE_AFTER);
#endif
	if (!a->no_tail &&
	    (e = cudaEventElapsedTime(&ms, c->ev_end, c->ev_tail)) !=
		    cudaSuccess) {
		child_fail(r, e, W_EVENTS);
		return;
	}
	r->gap_ns = a->no_tail ? 0.0 : (double)ms * 1e6;
	r->hold = (uint32_t)hold;
	r->hold_timed_out = hold && kbg_dev_hold_timed_out(gen);
}

/* The end->tail gap with no submission work (median of a few). */
static void child_baseline(struct child *c, struct kbg_reply *r)
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
int kbg__child_op(void *ctx, uint32_t op, const void *arg, size_t size,
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

} // namespace kbg_drv

#pragma GCC visibility pop
