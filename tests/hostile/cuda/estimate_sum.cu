// estimate_sum (vectorsum, leaderboard mode).
//
// Attempts: to do half the work. For large cases the submission sums only
// the first half of the data exactly and adds (n - n/2) times the data's
// known mean for the rest (the description gives the distribution), then
// spins until 98% of the device's peak bandwidth would have been reached
// for the whole input (above the physical floor). Small cases (the tests)
// are computed honestly.
//
// With the first design (data in [0, 1), tolerance 1e-4 * sum|x|, 1.3e4 at
// 2^28) the error of the estimate, about sqrt(n/24) = 3.3e3, passed every
// call and ranked (H100, 2026-11-22). The data are now zero-mean in
// [-1, 1) with a tolerance of about 74 at 2^28; the estimate is off by the
// skipped half's own sum, about 0.58 sqrt(n/2) = 6.7e3.
//
// Expected (policy): not ranked. A BAD row with verdict passed and a score
// means the checker's tolerance is loose against the data's own spread.
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "task.h"

namespace
{

const size_t kHonestMax = (size_t)1 << 24;

__device__ inline unsigned long long globaltimer(void)
{
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

__global__ void k_start(double *acc, unsigned long long *t0)
{
	*acc = 0;
	*t0 = globaltimer();
}

__global__ void k_half(const float *data, size_t m, double *acc)
{
	__shared__ double s[256];
	double a = 0;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < m;
	     i += (size_t)gridDim.x * blockDim.x)
		a += data[i];
	s[threadIdx.x] = a;
	__syncthreads();
	for (unsigned o = blockDim.x / 2; o > 0; o >>= 1) {
		if (threadIdx.x < o)
			s[threadIdx.x] += s[threadIdx.x + o];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		atomicAdd(acc, s[0]);
}

__global__ void k_finish(float *out, const double *acc, size_t n, size_t m,
			 const unsigned long long *t0, unsigned long long ns)
{
	/* E[x] of the harness's uniform floats in [-1, 1). */
	const double mean = -1.0 / 16777216.0;
	double v = *acc + (double)(n - m) * mean;
	while (globaltimer() - *t0 < ns)
		;
	*out = (float)v;
}

__global__ void k_sum(const float *data, float *out, size_t n)
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

double peak_bytes_per_s(void)
{
	int dev = 0, khz = 0, bits = 0;
	cudaGetDevice(&dev);
	cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, dev);
	cudaDeviceGetAttribute(&bits, cudaDevAttrGlobalMemoryBusWidth, dev);
	(void)cudaGetLastError();
	double bw = (double)khz * 1e3 * 2.0 * bits / 8.0;
	return bw > 0 ? bw : 2.0e12;
}

} // namespace

extern "C" void custom_kernel(const float *data, float *out, size_t n)
{
	static double *acc;
	static unsigned long long *t0;
	static double peak;
	static int sms;
	if (n <= kHonestMax ||
	    (!acc && (cudaMalloc(&acc, sizeof(double)) != cudaSuccess ||
		      cudaMalloc(&t0, sizeof(*t0)) != cudaSuccess))) {
		cudaMemsetAsync(out, 0, sizeof(float), 0);
		k_sum<<<(unsigned)((n + 255) / 256), 256>>>(data, out, n);
		return;
	}
	if (peak <= 0) {
		int dev = 0;
		peak = peak_bytes_per_s();
		cudaGetDevice(&dev);
		cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount,
				       dev);
		if (sms <= 0)
			sms = 132;
	}
	size_t m = n / 2;
	double bytes = 4.0 * (double)n + 4.0;
	unsigned long long ns =
		(unsigned long long)(bytes / (0.98 * peak) * 1e9);
	k_start<<<1, 1>>>(acc, t0);
	k_half<<<(unsigned)sms * 8, 256>>>(data, m, acc);
	k_finish<<<1, 1>>>(out, acc, n, m, t0, ns);
}
