// vectoradd. thrust::transform with an extended __device__ lambda, on the
// legacy default stream.
#include <thrust/execution_policy.h>
#include <thrust/transform.h>

#include "task.h"

extern "C" void custom_kernel(const __half *a, const __half *b, __half *out,
			      size_t n)
{
	thrust::transform(thrust::cuda::par_nosync.on(0), a, a + n, b, out,
			  [] __device__(__half x, __half y) {
				  return __hadd(x, y);
			  });
}
