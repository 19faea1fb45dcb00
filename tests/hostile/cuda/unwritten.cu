// unwritten (vectoradd, leaderboard mode).
//
// Attempts: to pass without writing the output at all (custom_kernel
// returns at once). A harness that checks a buffer still holding the
// previous call's (or the reference's) result would pass it, with a
// near-zero time.
//
// Expected: verdict failed (outputs are poisoned with NaN before every
// call); not ranked.
#include <cuda_fp16.h>
#include <stddef.h>

#include "task.h"

extern "C" void custom_kernel(const __half *a, const __half *b, __half *out,
			      size_t n)
{
	(void)a, (void)b, (void)out, (void)n;
}
