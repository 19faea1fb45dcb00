// spin_kernel (vectoradd, test mode, short timeout).
//
// Attempts: an infinite GPU kernel. custom_kernel launches, on the legacy
// stream, a grid filling every SM with threads that spin on a flag that
// is never set; the harness's cudaDeviceSynchronize never returns.
//
// Expected: verdict timeout (the sandbox kills the run at its wall-clock
// limit); not ranked. The GPU must be usable by the very next run: the
// script's honest control right after must pass with a normal score, and
// GPU memory must return to its baseline.
#include <cuda_fp16.h>
#include <stddef.h>
#include <stdio.h>

#include "task.h"

__global__ void spin_forever(volatile unsigned *flag, unsigned long long *sink)
{
	unsigned long long n = 0;
	while (*flag == 0u)
		n++;
	sink[threadIdx.x] = n; /* never reached; keeps the loop alive */
}

extern "C" void custom_kernel(const __half *a, const __half *b, __half *out,
			      size_t n)
{
	static unsigned *flag;
	static unsigned long long *sink;
	int sms = 132, dev = 0;
	(void)a, (void)b, (void)out, (void)n;

	if (!flag) {
		cudaMalloc(&flag, sizeof(*flag));
		cudaMalloc(&sink, 1024 * sizeof(*sink));
		cudaMemset(flag, 0, sizeof(*flag));
	}
	cudaGetDevice(&dev);
	cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
	printf("launching a kernel that never ends on %d SMs\n", sms);
	fflush(stdout);
	spin_forever<<<sms * 8, 256>>>(flag, sink);
}
