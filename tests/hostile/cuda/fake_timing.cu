// fake_timing (vectoradd, leaderboard mode).
//
// Attempts: to fake the clock. Besides a correct kernel, the submission
// defines cudaEventElapsedTime (every interval 1 ns), cudaEventRecord and
// cudaEventSynchronize (do nothing) and clock_gettime (time stands still),
// hoping the harness's calls land in its copies.
//
// Expected: no effect. The submission is a shared object that only the
// harness's child loads (RTLD_LOCAL); the parent, which times every call
// with its own events and clock, never maps it. Verdict passed with a
// normal score (within the script's tolerance of the honest baseline,
// never much faster).
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <time.h>

#include "task.h"

extern "C" cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t, cudaEvent_t)
{
	*ms = 1e-6f;
	return cudaSuccess;
}

/* cuda_device_runtime_api.h already defines a device-side
 * cudaEventRecord in every .cu file, so the host definition takes the
 * symbol name through an asm label. */
extern "C" cudaError_t
	fake_event_record(cudaEvent_t, cudaStream_t) __asm__("cudaEventRecord");
extern "C" cudaError_t fake_event_record(cudaEvent_t, cudaStream_t)
{
	return cudaSuccess;
}

extern "C" cudaError_t cudaEventSynchronize(cudaEvent_t)
{
	return cudaSuccess;
}

extern "C" int clock_gettime(clockid_t, struct timespec *ts) throw()
{
	ts->tv_sec = 0;
	ts->tv_nsec = 0;
	return 0;
}

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
	const unsigned threads = 256;
	add_kernel<<<(unsigned)((n + threads - 1) / threads), threads>>>(
		a, b, out, n);
}
