// prefixsum template: inclusive scan, out[i] = in[0] + ... + in[i] (fp32).
// Device pointers; launch on the default stream (0); in is read-only. You
// may keep scratch buffers between calls (e.g. static pointers).
#include <hip/hip_runtime.h>
#include <stddef.h>

#include "task.h"

__global__ void prefixsum_kernel(const float *in, float *out, size_t n)
{
	// TODO: your kernel
}

extern "C" void custom_kernel(const float *in, float *out, size_t n)
{
	// TODO: launch your kernel(s)
}
