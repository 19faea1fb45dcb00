// A vectoradd submission that is correct but also defines libc and CUDA
// runtime functions the harness relies on, each "helpfully" wrong. It must
// build, and the harness (built without it, and loading it only in its
// child, RTLD_LOCAL) must still reach the real ones: cuda_tests.sh hostile
// checks that eval.out takes memcmp, write and clock_gettime from glibc.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "task.h"

extern "C" int memcmp(const void *, const void *, size_t) throw()
{
	return 0; /* everything is equal */
}

extern "C" ssize_t write(int, const void *, size_t n)
{
	return (ssize_t)n; /* the report vanishes */
}

extern "C" int clock_gettime(clockid_t, struct timespec *ts) throw()
{
	ts->tv_sec = 0; /* time stands still */
	ts->tv_nsec = 0;
	return 0;
}

extern "C" cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t, cudaEvent_t)
{
	*ms = 1e-6f; /* everything is fast */
	return cudaSuccess;
}

int main(void)
{
	return 0;
} // and we are the program now

__global__ void add_kernel(const __half *a, const __half *b, __half *out,
			   size_t n)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = __hadd(a[i], b[i]);
}

extern "C" void custom_kernel(const __half *a, const __half *b, __half *out,
			      size_t n)
{
	add_kernel<<<(unsigned)((n + 255) / 256), 256>>>(a, b, out, n);
}
