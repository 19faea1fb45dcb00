// vectorsum. thrust::reduce, which returns the sum to the host (a
// synchronous call), then a copy to out.
#include <thrust/device_ptr.h>
#include <thrust/reduce.h>

#include "task.h"

extern "C" void custom_kernel(const float *data, float *out, size_t n)
{
	thrust::device_ptr<const float> p(data);
	float s = thrust::reduce(p, p + n, 0.0f);

	cudaMemcpy(out, &s, sizeof(s), cudaMemcpyHostToDevice);
}
