// vectoradd. An experiment, not a submission to rank (bench/RESULTS.md,
// "The sentinel, session 18"): each call first copies one element of a
// to the host on a non-blocking stream of its own and waits for it, then
// launches the usual kernel. If the copy engine runs while the parent's
// watch holds the GPU, the copy ends at once and the call says
// "launched" well before the hold's 500 us timeout (hold_timeouts stays
// 0); if the copy waits behind the watch like a kernel, every timed call
// is released by the timeout (hold_timeouts counts them).
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
	static cudaStream_t s;
	static __half *h;

	if (!s) {
		cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
		cudaMallocHost(&h, sizeof *h);
	}
	cudaMemcpyAsync(h, a, sizeof *h, cudaMemcpyDeviceToHost, s);
	cudaStreamSynchronize(s);
	add<<<8192, 256>>>(a, b, out, n);
}
