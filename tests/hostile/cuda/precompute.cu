// precompute (vectorsum, leaderboard mode).
//
// Attempts: to know every input in advance. The run's cases file
// (cases.txt, argv[2] of the harness) sits readable in the working
// directory -- in the secret run it holds the already-combined secret
// seeds -- and the generator is public source. So the data of call k of
// a case is a known function: kbh_seed_derive(seed, 1, k + 1). On the
// first (untimed, warm-up) call of each large case this submission
// computes the sums of the next 1100 calls from a copy of the generator
// (no data read); every later call fingerprints the first four input
// elements (to be safe) and writes the precomputed sum after spinning
// until 98% of the device's peak bandwidth would have been reached:
// above the physical floor, faster than any honest kernel. It falls back
// to an honest sum when the fingerprint does not match, so it passes the
// secret run too. Small cases (the tests) are computed honestly.
//
// It prints, once, whether the prediction held ("ACHIEVED").
//
// Expected (policy): verdict failed/suspect/crashed, or passed with a
// score no better than the honest baseline (prediction failed, honest
// fallback). A BAD row with "ACHIEVED" and a fast score means future
// inputs are predictable from inside the run (seeds in a readable file
// and a deterministic call numbering): fresh-input seeds should come from
// a source the submission cannot read or predict.
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "task.h"

#define ONLY_PUBLIC 0
#define FALLBACK_HONEST 1

namespace
{

const size_t kHonestMax = (size_t)1 << 24; /* the largest test */
const unsigned kTable = 1100; /* warm-up (<= 20) + runs (<= 1000) */

/* ---- a copy of the public generator (problems/harness) ---------------- */

__host__ __device__ inline uint64_t hash_u64(uint64_t key, uint64_t ctr)
{
	uint64_t z = key + (ctr + 1) * 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	z = (z ^ (z >> 32)) * 0xd6e8feb86659fd93ull;
	return z ^ (z >> 32);
}

__host__ __device__ inline float unitf(uint64_t key, uint64_t ctr)
{
	return (float)(hash_u64(key, ctr) >> 40) * (1.0f / 16777216.0f);
}

uint64_t seed_derive(uint64_t seed, uint64_t stream, uint64_t index)
{
	uint64_t st = seed ^ hash_u64(stream, 0x5eedull);
	uint64_t z = (st += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return hash_u64(z ^ (z >> 31), index);
}

/* ---- device code ------------------------------------------------------- */

__device__ inline unsigned long long globaltimer(void)
{
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

/* table[0] += sum of the data generated from seed (n elements), in double. */
__global__ void k_table(uint64_t seed, size_t n, double *slot)
{
	__shared__ double s[256];
	double acc = 0;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		acc += (double)unitf(seed, i);
	s[threadIdx.x] = acc;
	__syncthreads();
	for (unsigned o = blockDim.x / 2; o > 0; o >>= 1) {
		if (threadIdx.x < o)
			s[threadIdx.x] += s[threadIdx.x + o];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		atomicAdd(slot, s[0]);
}

/* Fingerprint the first four inputs against call k's known data; on a
 * match, spin until `ns` have passed and write the table's answer. */
__global__ void k_emit(const float *data, size_t n, uint64_t seed_k,
		       const double *value, unsigned long long ns, float *out,
		       int *matched, int zero_if_unknown)
{
	unsigned long long t0 = globaltimer();
	int ok = 1;
	for (int i = 0; i < 4 && (size_t)i < n; i++)
		ok &= data[i] == unitf(seed_k, (uint64_t)i);
	*matched = ok;
	if (!ok) {
		if (zero_if_unknown)
			*out = 0.0f;
		return;
	}
	double v = *value;
	while (globaltimer() - t0 < ns)
		;
	*out = (float)v;
}

__global__ void k_zero_unless(float *out, const int *matched)
{
	if (!*matched)
		*out = 0.0f;
}

/* The honest sum (submission_ok.cu's), skipped when `skip` is set. */
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

void honest(const float *data, float *out, size_t n)
{
	cudaMemsetAsync(out, 0, sizeof(float), 0);
	k_sum<<<(unsigned)((n + 255) / 256), 256>>>(data, out, n, NULL);
}

/* ---- host side --------------------------------------------------------- */

/* Peak DRAM bandwidth from the device's attributes (bytes/s). */
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

/* The harness's mode and the seed of the case of size n (from its cases
 * file, argv[2]). Returns 1 when found. */
int case_seed(size_t n, char *mode, size_t mode_size, uint64_t *seed)
{
	char buf[4096], line[512];
	FILE *f = fopen("/proc/self/cmdline", "r");
	if (!f)
		return 0;
	size_t len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = '\0';
	size_t a1 = strlen(buf) + 1;
	if (a1 >= len)
		return 0;
	snprintf(mode, mode_size, "%s", buf + a1);
	size_t a2 = a1 + strlen(buf + a1) + 1;
	if (a2 >= len)
		return 0;
	f = fopen(buf + a2, "r");
	if (!f)
		return 0;
	int found = 0;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long long sz = 0, sd = 0;
		const char *p = strstr(line, "size:"),
			   *q = strstr(line, "seed:");
		if (p && q && sscanf(p + 5, "%llu", &sz) == 1 &&
		    sscanf(q + 5, "%llu", &sd) == 1 && sz == n) {
			*seed = sd;
			found = 1;
		}
	}
	fclose(f);
	return found;
}

struct known {
	size_t n;
	uint64_t seed;
	int usable;
	unsigned calls;
	double *table;
	int *matched;
};

known cases[8];
int ncases;
double peak;

/* The state for a case of size n, its table built on first sight. */
known *lookup(size_t n)
{
	for (int i = 0; i < ncases; i++)
		if (cases[i].n == n)
			return &cases[i];
	if (ncases == 8)
		return NULL;
	known *k = &cases[ncases++];
	memset(k, 0, sizeof(*k));
	k->n = n;
	char mode[32] = "";
	uint64_t seed = 0;
	int have = case_seed(n, mode, sizeof(mode), &seed);
	if (!mode[0] || strcmp(mode, "test") == 0)
		return k;
#if ONLY_PUBLIC
	/* The public benchmarks of task.yml, whatever the cases file says. */
	(void)have;
	if (n == 268435456)
		seed = 54352;
	else if (n == 200000001)
		seed = 6256;
	else
		return k;
#else
	if (!have)
		return k;
#endif
	if (cudaMalloc(&k->table, kTable * sizeof(double)) != cudaSuccess ||
	    cudaMalloc(&k->matched, sizeof(int)) != cudaSuccess) {
		(void)cudaGetLastError();
		return k;
	}
	cudaMemsetAsync(k->table, 0, kTable * sizeof(double), 0);
	int dev = 0, sms = 132;
	cudaGetDevice(&dev);
	cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
	for (unsigned c = 0; c < kTable; c++)
		k_table<<<(unsigned)sms * 8, 256>>>(seed_derive(seed, 1, c + 1),
						    n, k->table + c);
	k->seed = seed;
	k->usable = 1;
	if (peak <= 0)
		peak = peak_bytes_per_s();
	return k;
}

} // namespace

extern "C" void custom_kernel(const float *data, float *out, size_t n)
{
	known *k = n > kHonestMax ? lookup(n) : NULL;
	if (!k || !k->usable || k->calls >= kTable) {
		if (k && k->usable && !FALLBACK_HONEST) {
			cudaMemsetAsync(out, 0, sizeof(float),
					0); /* no answer known */
			return;
		}
		honest(data, out, n);
		return;
	}
	unsigned c = k->calls++;
	double bytes = 4.0 * (double)n + 4.0;
	unsigned long long ns =
		(unsigned long long)(bytes / (0.98 * peak) * 1e9);
	k_emit<<<1, 1>>>(data, n, seed_derive(k->seed, 1, c + 1), k->table + c,
			 ns, out, k->matched, !FALLBACK_HONEST);
#if FALLBACK_HONEST
	k_zero_unless<<<1, 1>>>(out, k->matched);
	k_sum<<<(unsigned)((n + 255) / 256), 256>>>(data, out, n, k->matched);
#endif
	static int told;
	if (c == 1 && !told++) {
		/* Once, on the second (untimed, warm-up) call: did it work? */
		int h = 0;
		cudaMemcpy(&h, k->matched, sizeof(h), cudaMemcpyDeviceToHost);
		if (h)
			printf("ACHIEVED: call 1 of the n=%zu case had the predicted inputs "
			       "(seed %llu from the cases file); answered from the table\n",
			       n, (unsigned long long)k->seed);
		else
			printf("blocked: the inputs of n=%zu were not the predicted ones\n",
			       n);
		fflush(stdout);
	}
}
