// Hold check: the work on a non-blocking stream, synchronised before
// returning (allowed; must be timed at its real cost, not hidden behind
// the hold).
#include <cuda_fp16.h>
#include <stddef.h>

#include "task.h"

__global__ void add8(const uint4 *a, const uint4 *b, uint4 *out, size_t n8)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n8;
	     i += (size_t)gridDim.x * blockDim.x) {
		uint4 x = __ldcs(a + i), y = __ldcs(b + i), r;
		const __half2 *hx = (const __half2 *)&x,
			      *hy = (const __half2 *)&y;
		__half2 *hr = (__half2 *)&r;
		for (int k = 0; k < 4; k++)
			hr[k] = __hadd2(hx[k], hy[k]);
		__stcs(out + i, r);
	}
}

__global__ void add_tail(const __half *a, const __half *b, __half *out,
			 size_t from, size_t n)
{
	size_t i = from + threadIdx.x;
	if (i < n)
		out[i] = __hadd(a[i], b[i]);
}

extern "C" void custom_kernel(const __half *a, const __half *b, __half *out,
			      size_t n)
{
	static cudaStream_t s;
	if (!s)
		cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
	size_t n8 = n / 8;
	if (n8)
		add8<<<132 * 8, 256, 0, s>>>((const uint4 *)a, (const uint4 *)b,
					     (uint4 *)out, n8);
	if (n % 8)
		add_tail<<<1, 8, 0, s>>>(a, b, out, n8 * 8, n);
	cudaStreamSynchronize(s);
}
