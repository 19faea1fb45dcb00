// vectoradd. Scratch memory from the stream-ordered allocator every call:
// a + b into the scratch, then copied to out, then freed.
#include "task.h"

__global__ static void add(const __half *a, const __half *b, __half *out,
			   size_t n)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;

	for (; i < n; i += (size_t)gridDim.x * blockDim.x)
		out[i] = __hadd(a[i], b[i]);
}

extern "C" void custom_kernel(const __half *a, const __half *b, __half *out,
			      size_t n)
{
	__half *tmp = nullptr;

	cudaMallocAsync((void **)&tmp, n * sizeof(__half), 0);
	add<<<8192, 256>>>(a, b, tmp, n);
	cudaMemcpyAsync(out, tmp, n * sizeof(__half), cudaMemcpyDeviceToDevice,
			0);
	cudaFreeAsync(tmp, 0);
}
