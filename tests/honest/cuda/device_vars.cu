// vectoradd. A __constant__ scale and a __device__ launch counter, set
// with cudaMemcpyToSymbol on the first call.
#include "task.h"

__constant__ float scale;
__device__ unsigned long long launches;

__global__ static void add(const __half *a, const __half *b, __half *out,
			   size_t n)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;

	if (i == 0)
		atomicAdd(&launches, 1ull);
	for (; i < n; i += (size_t)gridDim.x * blockDim.x)
		out[i] = __float2half(
			scale * (__half2float(a[i]) + __half2float(b[i])));
}

extern "C" void custom_kernel(const __half *a, const __half *b, __half *out,
			      size_t n)
{
	static int set;

	if (!set) {
		const float one = 1.0f;
		const unsigned long long zero = 0;

		cudaMemcpyToSymbol(scale, &one, sizeof(one));
		cudaMemcpyToSymbol(launches, &zero, sizeof(zero));
		set = 1;
	}
	add<<<8192, 256>>>(a, b, out, n);
}
