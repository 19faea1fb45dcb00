/* Hostile (pmpp/vectoradd): an honest kernel, and on each run's first
 * call every attack of attacks.h's crossrun_links() on what the worker
 * uses next. crossrun.sh defines VICTIM and checks that the victim is
 * untouched and the ranked score honest (GPU host only). */
#include <cuda_fp16.h>
#include <stddef.h>

#include "attacks.h"

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
	static int once;

	if (!once++)
		crossrun_links();
	add<<<1024, 256>>>(a, b, out, n);
}
