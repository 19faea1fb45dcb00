// Wrong: never zeroes the bins. The harness fills them with 0xFFFFFFFF
// before every call, so every count is off by 2^32 - 1 (i.e. by -1).
#include <hip/hip_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "task.h"

__global__ void hist_kernel(const uint8_t *data, uint32_t *bins, size_t n)
{
	__shared__ uint32_t h[256];
	for (int b = threadIdx.x; b < 256; b += blockDim.x)
		h[b] = 0;
	__syncthreads();
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		atomicAdd(&h[data[i]], 1u);
	__syncthreads();
	for (int b = threadIdx.x; b < 256; b += blockDim.x)
		if (h[b])
			atomicAdd(&bins[b], h[b]);
}

extern "C" void custom_kernel(const uint8_t *data, uint32_t *bins, size_t n)
{
	size_t blocks = (n + 255) / 256;
	if (blocks > 4096)
		blocks = 4096;
	hist_kernel<<<(unsigned)blocks, 256>>>(data, bins, n);
}
