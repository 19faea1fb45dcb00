/* kbg_dev.h: driver-internal device helpers (kbg_dev.cu) used by
 * kbg_child.cpp, kbg_parent.cpp and kbg_case.cpp; problems use the helpers
 * declared in kbg.h.
 * All return 0 or a negative cudaError_t value; single-threaded.
 */
#ifndef KBG_DEV_H
#define KBG_DEV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

/* Allocates the comparison record; reads the SM count for kbg_grid. Call
 * after the context exists. */
int kbg_dev_init(void);
void kbg_dev_fini(void);

/* Reads `bytes` of buf through L2 on the legacy stream (see kbg_dev.cu). */
int kbg_dev_flush(const void *buf, size_t bytes, unsigned *sink);

/* The hold: keeps the device busy from before the start event until the
 * host has enqueued the whole timed call, so the host's own latency
 * (recording the event, the submission's launches) never lands between
 * the start event and the submission's first kernel.
 *
 *   kbg_dev_hold_init()      once, after the context exists: the mapped
 *                            release word, the grid that fills every SM;
 *   kbg_dev_hold(gen, t)     on the legacy stream: a kernel that takes
 *                            every thread slot of every SM and waits
 *                            until the host releases `gen`, or t ns;
 *   kbg_dev_release(gen)     host: lets it end;
 *   kbg_dev_hold_timed_out(gen)  after a sync: whether that hold ended by
 *                            its timeout (the call blocked on the device
 *                            inside custom_kernel, e.g. a synchronize).
 * Generations are increasing and never 0. */
int kbg_dev_hold_init(void);
int kbg_dev_hold(unsigned gen, uint64_t timeout_ns);
void kbg_dev_release(unsigned gen);
int kbg_dev_hold_timed_out(unsigned gen);

/* An empty kernel on the legacy stream (overhead calibration). */
int kbg_dev_empty(void);
/* One small kernel on the legacy stream that runs for ns of device time
 * (the calibration's time-slice test). */
int kbg_dev_spin(uint64_t ns);

/* The sentinel: the parent's own account of when the GPU ran another
 * context (README.md, "The sentinel"). A kernel
 * of one block on a non-blocking stream of the parent's context that
 * reads the device's global timer in a loop: contexts of different
 * processes time-slice on the GPU and never run at once, so a jump of the
 * timer is time the GPU gave another context (the child's), and while a
 * watching sentinel runs, the child's work cannot start before the GPU's
 * time slice (about 2 ms) expires.
 *
 *   watch   runs until released (kbg_sent_release) and sums the jumps it
 *           sees before "go" (kbg_sent_go: work of the child's outside
 *           its call) and after it; a jump after "go" ends it at once
 *           (the child's call needed the GPU before it was released:
 *           `broken`);
 *   probe   records when it started and ends;
 *   probe that watches (watch 2): a probe where it starts before
 *           not_before (`early`), else a watch from its start (the
 *           successor probe: it sees any turn the child's context has
 *           after it).
 * Each jump of a watch before "go" is also charged less sw_ns (the two
 * switches another context's turn costs, as calibrated; 0: the whole
 * jump): pre_charge_ns.
 * Records live in mapped host memory, indexed by the sequence number's
 * parity; every field is written before `ended`. One sentinel at a time.
 * Single-threaded; 0 or a negative cudaError_t. */
struct kbg_sent_rec {
	uint64_t start_ns;      /* device clock at its start */
	uint64_t end_ns;        /* released, broken, or (probe) start */
	uint64_t pre_gap_ns;    /* summed jumps before "go" */
	uint64_t pre_charge_ns; /* summed jumps less sw_ns each */
	uint64_t post_gap_ns;   /* the jump that broke it, after "go" */
	uint64_t first_gap_ns;  /* start of the first jump, or 0 */
	uint32_t pre_gaps, broken, early;
	uint32_t started, ended; /* sequence numbers, written last */
};
int kbg_sent_init(void);
int kbg_sent_launch(uint32_t seq, int watch, uint64_t not_before,
		    uint64_t sw_ns);
void kbg_sent_go(uint32_t seq);
void kbg_sent_release(uint32_t seq);
/* 1 (and *out filled) once sentinel seq has started / ended, else 0. */
int kbg_sent_started(uint32_t seq, struct kbg_sent_rec *out);
int kbg_sent_ended(uint32_t seq, struct kbg_sent_rec *out);
/* Smallest timer jump counted as another context's turn (ns). Another
 * context's turn costs two context switches, about 280 us on an H100 or
 * H200; the parent's own kernels beside the watch (staging, the check)
 * delay its loop by 2-5 us at a time (bench/gpu/sentinel/outside.sh on
 * an H100: hundreds of such jumps per watch at a 2 us threshold). */
#define KBG_SENT_GAP_NS 20000ull

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif
