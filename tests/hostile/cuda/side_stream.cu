// side_stream (vectoradd, leaderboard mode).
//
// Attempts: to keep its work out of the timed interval: the (correct,
// naive) kernel is launched on a non-blocking stream of its own, which
// the legacy stream's end event does not wait for, and custom_kernel
// returns at once. The result is complete by the time the harness checks
// it (it synchronises the device first), so only the timing can tell.
//
// Expected: verdict suspect ("outlives-timing" or "below-floor") or
// failed; never passed with a better score than the same kernel honestly
// timed (the script compares with the honest baseline).
#include <cuda_fp16.h>
#include <stddef.h>

#include "task.h"

__global__ void add_kernel(const __half *a, const __half *b, __half *out,
			   size_t n)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = __hadd(a[i], b[i]);
}

extern "C" void custom_kernel(const __half *a, const __half *b, __half *out,
			      size_t n)
{
	static cudaStream_t side;
	const unsigned threads = 256;
	if (!side)
		cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
	add_kernel<<<(unsigned)((n + threads - 1) / threads), threads, 0, side>>>(
		a, b, out, n);
}
