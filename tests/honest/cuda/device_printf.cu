// vectoradd. printf from a kernel, on the first call only.
#include <cstdio>

#include "task.h"

__global__ static void add(const __half *a, const __half *b, __half *out,
			   size_t n, int say)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;

	if (say && i == 0)
		printf("device_printf: n = %llu\n", (unsigned long long)n);
	for (; i < n; i += (size_t)gridDim.x * blockDim.x)
		out[i] = __hadd(a[i], b[i]);
}

extern "C" void custom_kernel(const __half *a, const __half *b, __half *out,
			      size_t n)
{
	static int calls;

	add<<<8192, 256>>>(a, b, out, n, calls++ == 0);
}
