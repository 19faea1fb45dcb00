/* kbg_case.cpp: the GPU timing driver's cases and calls, in the parent
 * (README.md: "One call", its buffers and steps 1-3, 5 and 6; the
 * measurement rules for seeds and expected results).
 *
 * A case's validation and setup (no GPU), its buffers (data sets, the
 * work slots exported to the child, the expected result, scratch), and
 * one call: staged, run in the child, its claims validated, checked.
 */
#include "kbg_int.h"
#include "kbg_dev.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#pragma GCC visibility push(hidden)

namespace kbg_drv
{

/* ---- cases ----------------------------------------------------------- */

/* Host-side validation and setup of one case (no GPU). 0 or -EINVAL. */
int kbg__prepare(const struct kbg_problem *p, enum kbh_mode mode,
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
	if (kbh_case_u64(c, "seed", 0, UINT64_MAX, &out->seed, err, err_size))
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
static int free_case(struct ctx *x)
{
	cudaError_t first = cudaSuccess, e;
	int rc0 = kbg__watch_stop(x); /* cudaFree waits for the device */
	int rc = kbg__close_slots(x);
	if (rc == KBG_OK)
		rc = rc0;

#define KBG_FREE(ptr)                                                          \
	do {                                                                   \
		if (ptr) {                                                     \
			e = cudaFree(ptr);                                     \
			if (e != cudaSuccess && first == cudaSuccess)          \
				first = e;                                     \
			ptr = NULL;                                            \
		}                                                              \
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
		return kbg__blame(x, first, "freeing case buffers");
	return KBG_OK;
}

/* Ends a case whose steps returned rc: frees it (free_case) and returns
 * what the case ended as. The case's own failure and its message win,
 * unless the child died while it was being closed. */
int kbg__end_case(struct ctx *x, int rc)
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
static uint64_t data_seed(const struct ctx *x, uint64_t k)
{
	const uint64_t seed = x->cur->seed;

	if (k == 0)
		return kbh_seed_derive(seed, 1, 0);
	return kbh_seed_derive(seed ^ x->run_key, 3, k);
}

/* Fills set s's pristine inputs from its seed. */
static int generate_set(struct ctx *x, int s)
{
	struct data_set *d = &x->sets[s];

	return kbg__hook(x, x->p->generate(x->cur->params, d->seed, d->in),
			 "generating inputs");
}

/* Runs the reference on set s's pristine inputs into x->exp. */
static int reference_set(struct ctx *x, int s)
{
	return kbg__hook(x,
			 x->p->reference(x->cur->params,
					 (const void *const *)x->sets[s].in,
					 x->exp, x->scratch),
			 "running the reference");
}

/* A data set made once per case (layout.fresh == 0): inputs on the
 * device, the expected result moved to host memory. */
int kbg__make_set(struct ctx *x, int s)
{
	const size_t n = x->cur->lay.exp_bytes;

	x->sets[s].seed = data_seed(x, (uint64_t)s);
	KBG_STEP(generate_set(x, s));
	KBG_STEP(reference_set(x, s));
	KBG_TRY(x,
		cudaMemcpy(x->sets[s].exp_host, x->exp, n,
			   cudaMemcpyDeviceToHost),
		"keeping the expected result");
	KBG_TRY(x, cudaMemset(x->exp, 0, n), "clearing the expected result");
	if (x->scratch)
		KBG_TRY(x, cudaMemset(x->scratch, 0, x->cur->lay.scratch_bytes),
			"clearing scratch");
	return KBG_OK;
}

/* One buffer the child will map: its own whole 2 MiB blocks (see
 * README.md, "fresh inputs, rotated buffers"), zeroed (it must show nothing of earlier
 * allocations), and its IPC handle. */
static int alloc_exported(struct ctx *x, size_t bytes, void **p,
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
int kbg__alloc_case(struct ctx *x, struct prepared *c, int nsets, int nslots,
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
			KBG_TRY(x,
				cudaMalloc(&x->sets[s].in[j], l->in_bytes[j]),
				"allocating inputs");
		if (with_sets)
			KBG_TRY(x,
				cudaMallocHost(&x->sets[s].exp_host,
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
	return kbg__open_slots(x);
}

/* ---- one call -------------------------------------------------------- */

/* The case draws among data sets made once (costly references) rather
 * than regenerating its data before every call. */
static int has_sets(const struct ctx *x)
{
	return !x->cur->lay.fresh && x->mode != KBH_MODE_TEST;
}

/* Zeroes the expected result and the reference's scratch (enqueued). */
static int clear_truth(struct ctx *x)
{
	const struct kbg_layout *l = &x->cur->lay;

	KBG_TRY(x, cudaMemsetAsync(x->exp, 0, l->exp_bytes, cudaStreamLegacy),
		"clearing the expected result");
	if (x->scratch)
		KBG_TRY(x,
			cudaMemsetAsync(x->scratch, 0, l->scratch_bytes,
					cudaStreamLegacy),
			"clearing scratch");
	return KBG_OK;
}

/* Steps 4 and 5 of one call (README.md): the CALL request on slot w, its
 * reply validated, the sample made. Writes "user-code: started" before
 * the first. Returns as kbg__child_request. */
static int run_call(struct ctx *x, int w, struct sample *out)
{
	struct op_call a;
	struct kbh_guard_window win;
	struct kbg_reply r;
	struct kbg_tcall tc;

	/* Without the sentinel (test and profile modes) the child's hold
	 * keeps the device busy until the whole call is enqueued: the start
	 * event then runs right before the submission's first kernel
	 * instead of waiting for the host to launch it. */
	memset(&a, 0, sizeof a);
	a.slot = (uint32_t)w;
	a.hold = x->hold && x->mode != KBH_MODE_TEST && !x->sent;
	a.no_tail = (uint32_t)x->sent;
	a.params_size = (uint32_t)x->p->params_size;
	memcpy(a.params, x->cur->params, x->p->params_size);
	if (x->sent)
		KBG_STEP(kbg__timed_request(x, &a, "custom_kernel", &win, &r,
					    &tc));
	else
		KBG_STEP(kbg__child_request(x, OP_CALL, &a, sizeof a,
					    "custom_kernel", &win, &r));
	if (a.hold && !r.hold)
		x->hold = 0; /* the child could not launch it */
	out->win_ns = (double)(win.t_seen - win.t_go);
	out->claim_ns = r.dev_ns;
	out->forged = x->mode != KBH_MODE_TEST &&
		      kbg__claim_forged(&win, r.dev_ns);
	x->forged += (uint32_t)out->forged;
	x->ncalls++;
	if (x->sent) {
		/* The parent's own measurement; the claim refines it within
		 * the allowance (kbg_time_score). */
		out->meas_ns = kbg_time_sample(&x->tcal, &tc, &out->path);
		out->ns = kbg_time_score(out->meas_ns, r.dev_ns, out->forged);
		/* the score above the claim: it was raised to the bound */
		out->low_claim = !out->forged && out->ns > r.dev_ns;
#ifdef KBG_SAMPLE_LOG
		fprintf(stderr,
			"E %d %.0f %.0f %.0f %.0f %.0f %.0f %.0f %d %.0f %.0f "
			"%.0f %.0f %.0f %.0f\n",
			(int)out->path, r.dev_ns, out->meas_ns,
			(double)(tc.t_seen - tc.t_rel),
			tc.probe_dev ? (double)tc.probe_dev - (double)tc.rel_dev
				     : -1.0,
			tc.back_dev ? (double)tc.back_dev - (double)tc.rel_dev
				    : -1.0,
			tc.watch_dev && tc.probe_dev
				? (double)tc.watch_dev - (double)tc.probe_dev
				: -1.0,
			out->ns, tc.broken, (double)(tc.t_rel - tc.t_go),
			tc.t_probe ? (double)tc.t_probe - (double)tc.t_seen
				   : -1.0,
			(double)tc.outside_ns,
			kbg_time_late_work(&x->tcal, &tc), (double)tc.age_ns,
			(double)tc.p_charge_ns);
#endif
		out->outside_ns = (double)tc.outside_ns;
		x->host_calls += out->path != KBG_TPATH_DEVICE;
		out->gap_ns = r.gap_ns;
		out->unheld = 0;
		return KBG_OK;
	}
	out->ns = out->forged ? out->win_ns : r.dev_ns;
	out->gap_ns = r.gap_ns;
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
int kbg__one_call(struct ctx *x, int check, struct sample *out)
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
		KBG_TRY(x,
			cudaMemcpyAsync(ws->in[j], d->in[j], l->in_bytes[j],
					cudaMemcpyDeviceToDevice,
					cudaStreamLegacy),
			"staging inputs");
	for (int j = 0; j < l->n_out; j++)
		KBG_TRY(x,
			cudaMemsetAsync(ws->out[j], 0xff, l->out_bytes[j],
					cudaStreamLegacy),
			"poisoning outputs");
		/* Lines a submission marked persisting (an access-policy window)
	 * would survive the streaming flush in L2's set-aside part: made
	 * normal again first, they are flushed like the rest. */
#ifndef KBG_NO_PERSIST_RESET
	/* (With the sentinel, right after the call instead, while the GPU
	 * is not held: the reset waits for the whole context.) */
	if (!x->sent)
		KBG_TRY(x, cudaCtxResetPersistingL2Cache(),
			"resetting persisting L2 lines");
#endif
	int rc = kbg_dev_flush(x->flush_buf, x->flush_bytes, x->sink);
	if (rc)
		return kbg__blame(x, (cudaError_t)-rc, "flushing L2");
	/* Staging must be complete (the child reads the slots from its own
	 * context, which our stream does not order) and error-free before
	 * the clock starts. The legacy stream, not the device: the
	 * sentinel's own stream runs on. */
	KBG_TRY(x, cudaStreamSynchronize(cudaStreamLegacy), "staging the call");
#ifdef KBG_SAMPLE_LOG
	x->ph_staged = kbh_now_ns();
#endif

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
		KBG_TRY(x,
			cudaMemcpyAsync(x->exp, d->exp_host, l->exp_bytes,
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
#ifdef KBG_SAMPLE_LOG
		x->ph_checked = kbh_now_ns();
#endif
		if (rc == 0 && rc2 != KBG_OK)
			return rc2;
	}
	if (rc > 0) {
		if (!x->msg[0])
			kbg__msgf(x, "output does not match the reference");
		return KBG_FAIL;
	}
	KBG_STEP(kbg__hook(x, rc, "checking the output"));
	for (int j = 0; j < l->n_in; j++) {
		size_t first;
		rc = kbg_equal_bytes(ws->in[j], d->in[j], l->in_bytes[j],
				     &first);
		if (rc)
			return kbg__blame(x, (cudaError_t)-rc,
					  "checking inputs");
		if (first < l->in_bytes[j]) {
			kbg__msgf(x,
				  "custom_kernel modified input %d (first "
				  "changed byte %zu); inputs are read-only",
				  j, first);
			return KBG_FAIL;
		}
	}
	return KBG_OK;
}

/* The end->tail gap with no submission work, in the child (a claim, as
 * every gap). */
int kbg__baseline_gap(struct ctx *x, double *base)
{
	struct kbh_guard_window w;
	struct kbg_reply r;
	struct op_flag a;

	memset(&a, 0, sizeof a);
	KBG_STEP(kbg__child_request(x, OP_BASELINE, &a, sizeof a, "calibrating",
				    &w, &r));
	*base = r.gap_ns;
	return KBG_OK;
}

} // namespace kbg_drv

#pragma GCC visibility pop
