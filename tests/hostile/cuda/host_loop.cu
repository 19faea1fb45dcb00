// host_loop (vectoradd, test mode, short timeout).
//
// Attempts: an infinite loop on the host inside custom_kernel (no system
// calls, so only a signal can end it).
//
// Expected: verdict timeout; not ranked; nothing left running.
#include <cuda_fp16.h>
#include <stddef.h>
#include <stdio.h>

#include "task.h"

extern "C" void custom_kernel(const __half *a, const __half *b, __half *out,
			      size_t n)
{
	volatile unsigned long long spins = 0;
	(void)a, (void)b, (void)out, (void)n;
	printf("spinning on the host forever\n");
	fflush(stdout);
	for (;;)
		spins = spins + 1;
}
