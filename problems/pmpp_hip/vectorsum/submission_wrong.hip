// Wrong: accumulates into *out without initialising it. The harness fills
// out with NaN before every call, so the sum is NaN.
#include <hip/hip_runtime.h>
#include <stddef.h>

#include "task.h"

__global__ void sum_kernel(const float *data, float *out, size_t n)
{
	__shared__ float s[256];
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	s[threadIdx.x] = i < n ? data[i] : 0.0f;
	__syncthreads();
	for (unsigned o = blockDim.x / 2; o > 0; o >>= 1) {
		if (threadIdx.x < o)
			s[threadIdx.x] += s[threadIdx.x + o];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		atomicAdd(out, s[0]);
}

extern "C" void custom_kernel(const float *data, float *out, size_t n)
{
	sum_kernel<<<(unsigned)((n + 255) / 256), 256>>>(data, out, n);
}
