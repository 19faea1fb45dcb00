// return_early (vectoradd, leaderboard mode).
//
// Attempts: to return before the work is even launched: custom_kernel
// starts a detached host thread and returns; the thread waits about 20 us
// and then launches the (correct, naive) kernel on the legacy stream --
// after the harness has recorded its end event. The harness's
// cudaDeviceSynchronize then either waits for the kernel (its time lands
// in the end->tail gap) or returns before the launch (the output is still
// poisoned when checked).
//
// Expected: verdict suspect or failed; never passed with a better score
// than the same kernel honestly timed.
#include <cuda_fp16.h>
#include <pthread.h>
#include <stddef.h>
#include <time.h>

#include "task.h"

__global__ void add_kernel(const __half *a, const __half *b, __half *out,
			   size_t n)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = __hadd(a[i], b[i]);
}

namespace
{

struct job {
	const __half *a, *b;
	__half *out;
	size_t n;
};

void *late_launch(void *p)
{
	struct job j = *(struct job *)p;
	delete (struct job *)p;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) <
	       20000);
	const unsigned threads = 256;
	add_kernel<<<(unsigned)((j.n + threads - 1) / threads), threads>>>(
		j.a, j.b, j.out, j.n);
	return NULL;
}

} // namespace

extern "C" void custom_kernel(const __half *a, const __half *b, __half *out,
			      size_t n)
{
	pthread_t t;
	struct job *j = new job{a, b, out, n};
	if (pthread_create(&t, NULL, late_launch, j) == 0)
		pthread_detach(t);
	else
		late_launch(j);
}
