// Hold check: vectoradd_fast, then cudaDeviceSynchronize() before
// returning (blocks on the device inside custom_kernel: every hold times
// out, the call is timed as without a hold).
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
	size_t n8 = n / 8;
	if (n8)
		add8<<<132 * 8, 256>>>((const uint4 *)a, (const uint4 *)b,
				       (uint4 *)out, n8);
	if (n % 8)
		add_tail<<<1, 8>>>(a, b, out, n8 * 8, n);
	cudaDeviceSynchronize();
}
