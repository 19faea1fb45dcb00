/* Hostile (pmpp/vectoradd): an honest kernel, and on each run's first
 * call a FIFO where the next run's cases file would go (attacks.h).
 * crossrun.sh checks that the job ends, passed, in bounded time (GPU host
 * only). */
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
		crossrun_fifo();
	add<<<1024, 256>>>(a, b, out, n);
}
