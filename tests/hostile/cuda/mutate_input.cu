// mutate_input (vectoradd, leaderboard mode).
//
// Attempts: to write into its read-only inputs: a correct sum, after which
// the kernel overwrites a[i] with the result (as if computing in place).
// A harness that reused its inputs as the pristine copy, or checked
// against them, would be fooled.
//
// Expected: verdict failed ("custom_kernel modified input 0"); not ranked.
#include <cuda_fp16.h>
#include <stddef.h>

#include "task.h"

__global__ void add_in_place(__half *a, const __half *b, __half *out, size_t n)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		__half s = __hadd(a[i], b[i]);
		out[i] = s;
		a[i] = s;
	}
}

extern "C" void custom_kernel(const __half *a, const __half *b, __half *out,
			      size_t n)
{
	const unsigned threads = 256;
	add_in_place<<<(unsigned)((n + threads - 1) / threads), threads>>>(
		(__half *)a, b, out, n);
}
