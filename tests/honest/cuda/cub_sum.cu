// vectorsum. cub::DeviceReduce::Sum, its temporary storage allocated once
// and grown when a larger input needs more.
#include <cub/device/device_reduce.cuh>

#include "task.h"

extern "C" void custom_kernel(const float *data, float *out, size_t n)
{
	static void *tmp;
	static size_t have;
	size_t need = 0;

	cub::DeviceReduce::Sum(nullptr, need, data, out, (int64_t)n, 0);
	if (need > have) {
		cudaFree(tmp);
		cudaMalloc(&tmp, need);
		have = need;
	}
	cub::DeviceReduce::Sum(tmp, need, data, out, (int64_t)n, 0);
}
