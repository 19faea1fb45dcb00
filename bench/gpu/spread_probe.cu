/* spread_probe: where does the between-process spread of a memory-bound
 * submission's score come from? A diagnostic for bench/gpu (not part of
 * the harness). Staging per sample as the harness does it: the inputs
 * copied (device to device) from pristine copies, the output poisoned, L2
 * flushed by reading 4 x L2, events on the legacy stream around the same
 * 16-byte-vector fp16 add as bench/gpu/vectoradd_fast.cu.
 *
 *   spread_probe N K ROUNDS CSV
 *
 * N halves per vector; K work slots (a, b, out: each its own cudaMalloc,
 * with 4 MiB of slack so sub-allocation offsets can be tried). Parts, all
 * samples appended to CSV (part,round,a,b,out,offa,offb,offo,ns):
 *   A  slots: ROUNDS rounds over the K slots in order (per-slot means:
 *      does an allocation have its own speed?);
 *   B  mix: ROUNDS*K samples with a, b, out drawn independently from the
 *      K slots (are per-buffer effects additive, or pairwise?);
 *   C  offsets: slot 0 with `out` (then `b`) moved by 0..4 MiB inside its
 *      allocation (does the relative offset of the streams matter?);
 *   D  random offsets: like A, every buffer at a random 256-byte multiple
 *      offset in [0, 2 MiB) per sample.
 * Prints a per-part summary.
 */
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x)                                                              \
	do {                                                               \
		cudaError_t e_ = (x);                                      \
		if (e_ != cudaSuccess) {                                   \
			fprintf(stderr, "probe: %s: %s\n", #x,             \
				cudaGetErrorString(e_));                   \
			exit(110);                                         \
		}                                                          \
	} while (0)

static const size_t kSlack = (size_t)4 << 20;

static __global__ void k_flush(const uint4 *p, size_t n16, unsigned *sink)
{
	unsigned acc = 0;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n16;
	     i += (size_t)gridDim.x * blockDim.x) {
		uint4 v = __ldcg(p + i);
		acc ^= v.x ^ v.y ^ v.z ^ v.w;
	}
	if (acc == 0x9e3779b9u)
		*sink = acc;
}

static __global__ void k_gen(uint32_t *p, size_t n, uint32_t seed)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		uint32_t h = (uint32_t)i * 0x9e3779b1u ^ seed;
		h ^= h >> 15;
		h *= 0x85ebca6bu;
		h ^= h >> 13;
		/* two halves in [-1, 1): exponent bits of 0.x */
		p[i] = (h & 0x03ff03ffu) | 0x38003800u | (h & 0x80008000u);
	}
}

static __global__ void add8(const uint4 *a, const uint4 *b, uint4 *out,
			    size_t n8)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n8;
	     i += (size_t)gridDim.x * blockDim.x) {
		uint4 x = __ldcs(a + i), y = __ldcs(b + i), r;
		const __half2 *hx = (const __half2 *)&x, *hy = (const __half2 *)&y;
		__half2 *hr = (__half2 *)&r;
		for (int k = 0; k < 4; k++)
			hr[k] = __hadd2(hx[k], hy[k]);
		__stcs(out + i, r);
	}
}

struct slot {
	char *a, *b, *o;
};

static size_t g_n, g_bytes, g_flush;
static int g_sms;
static char *g_pa, *g_pb, *g_fl;
static unsigned *g_sink;
static cudaEvent_t g_e0, g_e1;
static FILE *g_csv;
static uint64_t g_rng = 0x243f6a8885a308d3ull;

static uint64_t rnd(void)
{
	g_rng ^= g_rng << 13;
	g_rng ^= g_rng >> 7;
	g_rng ^= g_rng << 17;
	return g_rng;
}

static double sample(const char *part, int round, struct slot *s, int ia,
		     int ib, int io, size_t offa, size_t offb, size_t offo)
{
	char *a = s[ia].a + offa, *b = s[ib].b + offb, *o = s[io].o + offo;
	float ms;

	CK(cudaMemcpyAsync(a, g_pa, g_bytes, cudaMemcpyDeviceToDevice,
			   cudaStreamLegacy));
	CK(cudaMemcpyAsync(b, g_pb, g_bytes, cudaMemcpyDeviceToDevice,
			   cudaStreamLegacy));
	CK(cudaMemsetAsync(o, 0xff, g_bytes, cudaStreamLegacy));
	k_flush<<<g_sms * 8, 256>>>((const uint4 *)g_fl, g_flush / 16, g_sink);
	CK(cudaDeviceSynchronize());
	CK(cudaEventRecord(g_e0, cudaStreamLegacy));
	add8<<<g_sms * 8, 256>>>((const uint4 *)a, (const uint4 *)b,
				 (uint4 *)o, g_n / 8);
	CK(cudaEventRecord(g_e1, cudaStreamLegacy));
	CK(cudaDeviceSynchronize());
	CK(cudaGetLastError());
	CK(cudaEventElapsedTime(&ms, g_e0, g_e1));
	fprintf(g_csv, "%s,%d,%d,%d,%d,%zu,%zu,%zu,%.0f\n", part, round, ia, ib,
		io, offa, offb, offo, ms * 1e6);
	return ms * 1e6;
}

struct acc {
	double n, s, ss, lo;
};
static void acc_add(struct acc *x, double v)
{
	if (x->n == 0 || v < x->lo)
		x->lo = v;
	x->n++;
	x->s += v;
	x->ss += v * v;
}
static double acc_mean(const struct acc *x) { return x->n ? x->s / x->n : 0; }
static double acc_sd(const struct acc *x)
{
	if (x->n < 2)
		return 0;
	double m = acc_mean(x);
	return sqrt(fmax(0, (x->ss - x->n * m * m) / (x->n - 1)));
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: spread_probe N K ROUNDS CSV\n");
		return 2;
	}
	g_n = strtoull(argv[1], NULL, 10) / 8 * 8;
	int k = atoi(argv[2]), rounds = atoi(argv[3]);
	g_csv = fopen(argv[4], "a");
	if (!g_csv || k < 1 || k > 64 || rounds < 1)
		return 2;
	g_bytes = g_n * 2;
	int l2 = 0;
	CK(cudaSetDevice(0));
	CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
	CK(cudaDeviceGetAttribute(&g_sms, cudaDevAttrMultiProcessorCount, 0));
	g_flush = (size_t)l2 * 4;
	CK(cudaMalloc(&g_fl, g_flush));
	CK(cudaMemset(g_fl, 0x5a, g_flush));
	CK(cudaMalloc(&g_sink, 4));
	CK(cudaMalloc(&g_pa, g_bytes));
	CK(cudaMalloc(&g_pb, g_bytes));
	k_gen<<<g_sms * 8, 256>>>((uint32_t *)g_pa, g_bytes / 4, 1);
	k_gen<<<g_sms * 8, 256>>>((uint32_t *)g_pb, g_bytes / 4, 2);
	struct slot *s = (struct slot *)calloc(k, sizeof *s);
	for (int i = 0; i < k; i++) {
		CK(cudaMalloc(&s[i].a, g_bytes + kSlack));
		CK(cudaMalloc(&s[i].b, g_bytes + kSlack));
		CK(cudaMalloc(&s[i].o, g_bytes + kSlack));
	}
	CK(cudaEventCreate(&g_e0));
	CK(cudaEventCreate(&g_e1));
	for (int w = 0; w < 10; w++)
		sample("W", w, s, w % k, w % k, w % k, 0, 0, 0);

	/* A */
	struct acc *pa = (struct acc *)calloc(k, sizeof *pa), all = {0};
	for (int r = 0; r < rounds; r++)
		for (int i = 0; i < k; i++) {
			double v = sample("A", r, s, i, i, i, 0, 0, 0);
			acc_add(&pa[i], v);
			acc_add(&all, v);
		}
	printf("A slots (N %zu, K %d, rounds %d): all mean %.0f sd %.0f (%.2f%%)\n",
	       g_n, k, rounds, acc_mean(&all), acc_sd(&all),
	       100 * acc_sd(&all) / acc_mean(&all));
	double lo = 1e30, hi = 0;
	for (int i = 0; i < k; i++) {
		double m = acc_mean(&pa[i]);
		printf("  slot %2d: mean %.0f sd %.0f min %.0f (%+.2f%%)\n", i,
		       m, acc_sd(&pa[i]), pa[i].lo,
		       100 * (m / acc_mean(&all) - 1));
		lo = fmin(lo, m);
		hi = fmax(hi, m);
	}
	printf("  slot means spread %.2f%%; slots 0+1 mean %.0f\n",
	       100 * (hi / lo - 1),
	       k > 1 ? (acc_mean(&pa[0]) + acc_mean(&pa[1])) / 2 : acc_mean(&pa[0]));

	/* B */
	struct acc bm = {0};
	for (int r = 0; r < rounds * k; r++) {
		int ia = (int)(rnd() % k), ib = (int)(rnd() % k),
		    io = (int)(rnd() % k);
		acc_add(&bm, sample("B", r, s, ia, ib, io, 0, 0, 0));
	}
	printf("B mix: mean %.0f sd %.0f (%.2f%%)\n", acc_mean(&bm), acc_sd(&bm),
	       100 * acc_sd(&bm) / acc_mean(&bm));

	/* C */
	static const size_t offs[] = {0, 256, 4096, 65536, 1 << 20,
				      (2 << 20) - 256, 2 << 20, 3 << 20};
	const int no = sizeof offs / sizeof offs[0];
	struct acc co[2][16];
	memset(co, 0, sizeof co);
	for (int r = 0; r < 12; r++)
		for (int which = 0; which < 2; which++)
			for (int j = 0; j < no; j++)
				acc_add(&co[which][j],
					sample("C", r, s, 0, 0, 0, 0,
					       which ? offs[j] : 0,
					       which ? 0 : offs[j]));
	for (int which = 0; which < 2; which++) {
		printf("C %s offset:", which ? "b" : "out");
		for (int j = 0; j < no; j++)
			printf(" %zu:%.0f", offs[j], acc_mean(&co[which][j]));
		printf("\n");
	}

	/* D */
	struct acc dm = {0};
	for (int r = 0; r < rounds; r++)
		for (int i = 0; i < k; i++) {
			size_t oa = (rnd() % 8192) * 256, ob = (rnd() % 8192) * 256,
			       oo = (rnd() % 8192) * 256;
			acc_add(&dm, sample("D", r, s, i, i, i, oa, ob, oo));
		}
	printf("D random offsets: mean %.0f sd %.0f (%.2f%%)\n", acc_mean(&dm),
	       acc_sd(&dm), 100 * acc_sd(&dm) / acc_mean(&dm));
	fclose(g_csv);
	return 0;
}
