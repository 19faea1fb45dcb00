// replay (vectoradd, leaderboard mode).
//
// Attempts: to replay earlier results instead of computing. The first two
// calls for each (output pointer, n) -- the harness alternates two work
// slots -- are computed honestly and their results kept in a cache
// buffer of the submission's own; every later call with the same output
// pointer just copies the cached result back (a device-to-device copy:
// 4n bytes moved instead of 6n, and no arithmetic). A harness that reused
// its inputs between calls, or checked only the first call, would rank it.
//
// Expected: verdict failed (fresh inputs every call, every call checked);
// not ranked.
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

namespace
{
struct entry {
	__half *out;
	size_t n;
	__half *cache;
	unsigned calls;
};
entry table[16];
} // namespace

extern "C" void custom_kernel(const __half *a, const __half *b, __half *out,
			      size_t n)
{
	const unsigned threads = 256;
	entry *e = NULL;
	for (int i = 0; i < 16 && !e; i++)
		if (table[i].out == out && table[i].n == n)
			e = &table[i];
	for (int i = 0; i < 16 && !e; i++)
		if (!table[i].out) {
			e = &table[i];
			e->out = out;
			e->n = n;
			if (cudaMalloc(&e->cache, n * sizeof(__half)) !=
			    cudaSuccess)
				e->cache = NULL;
		}
	if (e && e->cache && e->calls++ > 0) {
		cudaMemcpyAsync(out, e->cache, n * sizeof(__half),
				cudaMemcpyDeviceToDevice, 0);
		return;
	}
	add_kernel<<<(unsigned)((n + threads - 1) / threads), threads>>>(
		a, b, out, n);
	if (e && e->cache)
		cudaMemcpyAsync(e->cache, out, n * sizeof(__half),
				cudaMemcpyDeviceToDevice, 0);
}
