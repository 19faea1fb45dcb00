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

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif
