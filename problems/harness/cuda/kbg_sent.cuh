/* kbg_sent.cuh: the sentinel kernel's body (README.md, "The sentinel";
 * kbg_dev.h says what it does), shared by the CUDA driver (kbg_dev.cu,
 * k_sentinel) and the Python harness (../python/kbh_sentinel.cu, built to
 * the PTX the Python parent loads through the driver API). Device code
 * only; include it once per translation unit, after kbg_api.h and
 * kbg_dev.h.
 *
 * The control block lives in mapped host memory; its layout is part of
 * the Python harness's contract (kbh_sentinel.py mirrors it with ctypes):
 * two 32-bit words (release, go), 56 bytes of padding, then two records
 * (struct kbg_sent_rec), indexed by the sequence number's parity.
 */
#ifndef KBG_SENT_CUH
#define KBG_SENT_CUH

struct kbg_sent_ctl {
	volatile unsigned release, go;
	unsigned pad[14];
	kbg_sent_rec rec[2];
};

__device__ unsigned long long kbg_sent_charge(unsigned long long jump,
					      unsigned long long sw_ns)
{
	return jump > sw_ns ? jump - sw_ns : 0;
}

/* The sentinel (kbg_dev.h). Warp 0 polls the release word; warp 1 reads
 * the timer without pause and sums its jumps. Whichever ends the watch
 * first (release, or a jump after "go") decides end_ns. A probe that
 * watches (watch 2) and starts before not_before ends at once. Run by
 * one block of 64 threads. */
__device__ void kbg_sentinel(kbg_sent_ctl *c, unsigned seq, int watch,
			     unsigned long long gap_ns,
			     unsigned long long not_before,
			     unsigned long long sw_ns)
{
	__shared__ volatile int stop;
	__shared__ unsigned long long end, pre_sum, pre_charge, post, first;
	__shared__ unsigned pre_n, broken;
	volatile kbg_sent_rec *r = &c->rec[seq & 1];
	const unsigned long long start = kbg_dev_timer_ns();

	if (watch == 2 && start < not_before)
		watch = 0; /* early: the child's work has not run yet */
	if (threadIdx.x == 0) {
		stop = 0;
		end = start;
		pre_sum = pre_charge = post = first = 0;
		pre_n = broken = 0;
		r->start_ns = start;
		r->early = watch == 0 && not_before;
		__threadfence_system();
		r->started = seq;
		__threadfence_system();
	}
	__syncthreads();
	if (watch && threadIdx.x == 0) {
		/* A jump between two of its own looks after "go" is a turn
		 * of the child's: the watch was preempted (its context's
		 * slice had run out) and may only see the release after the
		 * call's work ran. Then the hold broke, whichever warp saw
		 * it first. */
		unsigned long long last = kbg_dev_timer_ns(), t;
		for (;;) {
			const int released = (int)(c->release - seq) >= 0;
			t = kbg_dev_timer_ns();
			if (t - last > gap_ns && (int)(c->go - seq) >= 0) {
				if (atomicCAS((int *)&stop, 0, 1) == 0) {
					end = last;
					post = t - last;
					broken = 1;
				}
				break;
			}
			if (released || stop)
				break;
			last = t;
			kbg_dev_pause();
		}
		if (atomicCAS((int *)&stop, 0, 1) == 0)
			end = t;
	} else if (watch && threadIdx.x == 32) {
		unsigned long long last = kbg_dev_timer_ns();
		while (!stop) {
			unsigned long long t = kbg_dev_timer_ns();
			if (t - last > gap_ns) {
				if (!first)
					first = last;
				if ((int)(c->go - seq) >= 0) {
					if (atomicCAS((int *)&stop, 0, 1) ==
					    0) {
						end = last;
						post = t - last;
						broken = 1;
					}
					break;
				}
				pre_n++;
				pre_sum += t - last;
				pre_charge += kbg_sent_charge(t - last, sw_ns);
			}
			last = t;
		}
	}
	__syncthreads();
	if (threadIdx.x == 0) {
		r->end_ns = end;
		r->pre_gap_ns = pre_sum;
		r->pre_charge_ns = pre_charge;
		r->pre_gaps = pre_n;
		r->first_gap_ns = first;
		r->post_gap_ns = post;
		r->broken = broken;
		__threadfence_system();
		r->ended = seq;
		__threadfence_system();
	}
}

#endif
