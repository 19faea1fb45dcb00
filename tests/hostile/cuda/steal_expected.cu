// steal_expected (vectorsum, leaderboard mode).
//
// Attempts: to read the answer instead of computing it. The harness keeps
// each call's expected result (the reference's double-precision sum and
// sum of |x|, 16 bytes) in a cudaMalloc of its own, allocated right next
// to the output the submission gets, in the same context: device memory
// is not protected between allocations. For large cases a single block
// scans +-64 KiB around `out` (within its 2 MiB page) for two adjacent
// doubles that look like that record (equal within 1e-6, between 0.45 n
// and 0.55 n: uniform [0, 1) data), and writes the first one, after
// spinning until 98% of the device's peak bandwidth would have been
// reached (above the physical floor). No input is read. When nothing
// matches it computes the sum honestly. Small cases (the tests) are
// computed honestly.
//
// It prints, once, whether the scan found the record ("ACHIEVED").
//
// Expected (policy): verdict failed/suspect/crashed, or passed with a
// score no better than the honest baseline (the scan found nothing and it
// computed honestly). A BAD row with "ACHIEVED" and a fast score means the
// expected outputs are reachable from the submission ("kept where the
// submission cannot find them" does not hold).
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

/* found[0]: a record was found; found[1]: its offset from out (bytes). */
__global__ void k_steal(float *out, size_t n, unsigned long long ns, int *found)
{
	__shared__ double hit;
	__shared__ int any;
	__shared__ long long where;
	unsigned long long t0 = globaltimer();
	if (threadIdx.x == 0) {
		any = 0;
		hit = 0;
	}
	__syncthreads();
	const uintptr_t page = (uintptr_t)out & ~(uintptr_t)((2u << 20) - 1);
	uintptr_t lo = ((uintptr_t)out & ~(uintptr_t)15) - (64u << 10);
	uintptr_t hi = ((uintptr_t)out & ~(uintptr_t)15) + (64u << 10);
	if (lo < page || lo > (uintptr_t)out)
		lo = page;
	if (hi > page + (2u << 20) - 16)
		hi = page + (2u << 20) - 16;
	const double want_lo = 0.45 * (double)n, want_hi = 0.55 * (double)n;
	for (uintptr_t p = lo + 16 * threadIdx.x; p < hi;
	     p += 16 * blockDim.x) {
		const volatile double *d = (const volatile double *)p;
		double d0 = d[0], d1 = d[1];
		if (d0 >= want_lo && d0 <= want_hi &&
		    fabs(d0 - d1) <= 1e-6 * d0) {
			hit = d0; /* any match will do */
			where = (long long)(p - (uintptr_t)out);
			any = 1;
		}
	}
	__syncthreads();
	if (threadIdx.x != 0)
		return;
	found[0] = any;
	found[1] = any ? (int)where : 0;
	if (!any)
		return;
	while (globaltimer() - t0 < ns)
		;
	*out = (float)hit;
}

__global__ void k_zero_unless(float *out, const int *found)
{
	if (!*found)
		*out = 0.0f;
}

__global__ void k_sum(const float *data, float *out, size_t n, const int *skip)
{
	__shared__ float s[256];
	if (skip && *skip)
		return;
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
	static int *found;
	static double peak;
	static int told;
	if (n <= kHonestMax ||
	    (!found && cudaMalloc(&found, 2 * sizeof(int)) != cudaSuccess)) {
		cudaMemsetAsync(out, 0, sizeof(float), 0);
		k_sum<<<(unsigned)((n + 255) / 256), 256>>>(data, out, n, NULL);
		return;
	}
	if (peak <= 0)
		peak = peak_bytes_per_s();
	double bytes = 4.0 * (double)n + 4.0;
	unsigned long long ns =
		(unsigned long long)(bytes / (0.98 * peak) * 1e9);
	k_steal<<<1, 256>>>(out, n, ns, found);
	k_zero_unless<<<1, 1>>>(out, found);
	k_sum<<<(unsigned)((n + 255) / 256), 256>>>(data, out, n, found);
	if (!told++) {
		/* Once, on the first (untimed, warm-up) call: did it work? */
		int h[2] = {0, 0};
		cudaMemcpy(h, found, sizeof(h), cudaMemcpyDeviceToHost);
		if (h[0])
			printf("ACHIEVED: read the harness's expected result %+d bytes from the "
			       "output (n=%zu); no input read\n",
			       h[1], n);
		else
			printf("blocked: no expected result found near the output (n=%zu); "
			       "computing honestly\n",
			       n);
		fflush(stdout);
	}
}
