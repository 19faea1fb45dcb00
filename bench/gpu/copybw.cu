/* copybw: device-to-device copy time for the same traffic as a benchmark,
 * measured the way the harness measures a call (L2 flushed by reading
 * 4 x L2 before each sample, CUDA events on the legacy stream).
 *
 *   copybw BYTES [REPS]
 *
 * Copies BYTES (so 2 x BYTES cross the memory interface: read + write)
 * REPS times (default 30) after 3 warm-ups; prints
 *   copy_bytes <BYTES> copy_ns <median> copy_gbps <2*BYTES/median>
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(x)                                                                  \
	do {                                                                   \
		cudaError_t e_ = (x);                                          \
		if (e_ != cudaSuccess) {                                       \
			fprintf(stderr, "copybw: %s: %s\n", #x,                \
				cudaGetErrorString(e_));                       \
			return 110;                                            \
		}                                                              \
	} while (0)

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

static int cmp(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	size_t bytes, flush;
	int reps, l2 = 0, sms = 0;
	void *src, *dst, *fl;
	unsigned *sink;
	cudaEvent_t a, b;
	float *ms;

	if (argc < 2) {
		fprintf(stderr, "usage: copybw BYTES [REPS]\n");
		return 2;
	}
	bytes = strtoull(argv[1], NULL, 10);
	reps = argc > 2 ? atoi(argv[2]) : 30;
	if (!bytes || reps < 1)
		return 2;
	CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
	CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	flush = (size_t)l2 * 4 < ((size_t)64 << 20) ? (size_t)64 << 20
						    : (size_t)l2 * 4;
	CK(cudaMalloc(&src, bytes));
	CK(cudaMalloc(&dst, bytes));
	CK(cudaMalloc(&fl, flush));
	CK(cudaMalloc(&sink, sizeof *sink));
	CK(cudaMemset(src, 1, bytes));
	CK(cudaMemset(dst, 2, bytes));
	CK(cudaMemset(fl, 3, flush));
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	ms = (float *)calloc((size_t)reps, sizeof *ms);
	for (int i = -3; i < reps; i++) {
		k_flush<<<sms * 8, 256>>>((const uint4 *)fl, flush / 16, sink);
		CK(cudaEventRecord(a, cudaStreamLegacy));
		CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice,
				   cudaStreamLegacy));
		CK(cudaEventRecord(b, cudaStreamLegacy));
		CK(cudaEventSynchronize(b));
		if (i >= 0)
			CK(cudaEventElapsedTime(&ms[i], a, b));
	}
	qsort(ms, (size_t)reps, sizeof *ms, cmp);
	double med_ns = ms[reps / 2] * 1e6;
	printf("copy_bytes %zu copy_ns %.0f copy_gbps %.1f\n", bytes, med_ns,
	       2.0 * (double)bytes / med_ns);
	return 0;
}
