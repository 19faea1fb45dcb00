// histogram template: bins[v] = count of data[i] == v, 256 bins (uint32).
// bins holds 0xFFFFFFFF on entry. Device pointers; launch on the default
// stream (0); data is read-only.
#include <stddef.h>
#include <stdint.h>

#include "task.h"

__global__ void histogram_kernel(const uint8_t *data, uint32_t *bins, size_t n)
{
	// TODO: your kernel
}

extern "C" void custom_kernel(const uint8_t *data, uint32_t *bins, size_t n)
{
	// TODO: zero bins and launch your kernel
}
