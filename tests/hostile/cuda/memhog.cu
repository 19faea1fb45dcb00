// memhog (vectoradd, test mode).
//
// Attempts: to take every byte of device memory (cudaMalloc in 1 GiB, then
// 64 MiB chunks until it fails; never freed), then host memory: malloc'd
// and touched in 256 MiB chunks (progress printed every GiB, so the
// output survives an OOM kill), up to a self-imposed cap of 40 GiB so a
// host without a memory limit survives the test.
//
// Expected: verdict crashed (the run's memory limit: "ran out of memory")
// or failed (nothing computed); not ranked. "ACHIEVED" (more than 24 GiB
// of host memory: no memory limit for the run -- KB_MEMORY_LIMIT_MB) fails
// the expectation. Afterwards GPU memory must be back to its baseline and
// the next honest run must pass normally.
#include <cuda_fp16.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "task.h"

#define SAY(...)                                                               \
	do {                                                                   \
		printf(__VA_ARGS__);                                           \
		printf("\n");                                                  \
		fflush(stdout);                                                \
	} while (0)

static const size_t kGiB = (size_t)1 << 30;

extern "C" void custom_kernel(const __half *a, const __half *b, __half *out,
			      size_t n)
{
	static int done;
	(void)a, (void)b, (void)out, (void)n;
	if (done++)
		return;

	size_t free_b = 0, total_b = 0, dev = 0;
	cudaMemGetInfo(&free_b, &total_b);
	SAY("device memory: %.1f GiB free of %.1f GiB", (double)free_b / kGiB,
	    (double)total_b / kGiB);
	for (size_t chunk = kGiB; chunk >= ((size_t)64 << 20); chunk /= 16) {
		void *p;
		while (cudaMalloc(&p, chunk) == cudaSuccess) {
			dev += chunk;
			cudaMemset(p, 0x5a, chunk); /* make it real */
		}
		(void)cudaGetLastError();
	}
	cudaDeviceSynchronize();
	(void)cudaGetLastError();
	cudaMemGetInfo(&free_b, &total_b);
	SAY("took %.2f GiB of device memory; %.0f MiB left", (double)dev / kGiB,
	    (double)free_b / (1 << 20));

	const size_t chunk = (size_t)256 << 20, cap = (size_t)40 * kGiB;
	size_t host = 0;
	while (host < cap) {
		char *p = (char *)malloc(chunk);
		if (!p) {
			SAY("blocked: malloc failed after %.2f GiB of host memory",
			    (double)host / kGiB);
			break;
		}
		memset(p, 0x5a, chunk);
		host += chunk;
		if (host % kGiB == 0)
			SAY("host memory: %zu GiB", host / kGiB);
	}
	if (host > (size_t)24 * kGiB)
		SAY("ACHIEVED: %.1f GiB of host memory: the run has no memory limit",
		    (double)host / kGiB);
	/* Nothing is computed: the output stays poisoned. */
}
