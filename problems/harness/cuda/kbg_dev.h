/* kbg_dev.h: driver-internal device helpers (kbg_dev.cu) used by
 * kbg_main.cu; problems use the helpers declared in kbg.h.
 * All return 0 or a negative cudaError_t value; single-threaded.
 */
#ifndef KBG_DEV_H
#define KBG_DEV_H

#include <stddef.h>

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

/* An empty kernel on the legacy stream (overhead calibration). */
int kbg_dev_empty(void);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif
