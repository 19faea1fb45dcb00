// Hostile (vectorsum): a correct sum, but on a stream of its own that
// carries an access-policy window marking the input persisting, with the
// device's whole persisting set-aside: lines in the set-aside survive a
// streaming flush (pygpubench#49), so inputs at the same address could
// stay in L2 from one timed call to the next. The harness makes
// persisting lines normal before every flush (problems/harness/cuda/
// README.md, "One call", step 3): the window must buy nothing. bench/gpu/persist_l2.sh measures it against
// itself built with KBH_NO_WINDOW defined (the same kernel and stream, no
// window), with and without that reset, on a case that fits the set-aside.
#include <stddef.h>

#include "task.h"

__global__ static void sum(const float *data, float *out, size_t n)
{
	__shared__ float s[256];
	float v = 0.0f;

	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		v += data[i];
	s[threadIdx.x] = v;
	__syncthreads();
	for (unsigned o = blockDim.x / 2; o > 0; o >>= 1) {
		if (threadIdx.x < o)
			s[threadIdx.x] += s[threadIdx.x + o];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		atomicAdd(out, s[0]);
}

extern "C" void custom_kernel(const float *data, float *out, size_t n)
{
	static cudaStream_t st;
	static size_t window_max;
	cudaStreamAttrValue a = {};

	if (!st) {
		cudaDeviceProp p;
		cudaGetDeviceProperties(&p, 0);
		cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize,
				   (size_t)p.persistingL2CacheMaxSize);
		window_max = (size_t)p.accessPolicyMaxWindowSize;
		/* blocking: ordered with the legacy stream the harness times */
		cudaStreamCreateWithFlags(&st, cudaStreamDefault);
	}
#ifndef KBH_NO_WINDOW
	a.accessPolicyWindow.base_ptr = (void *)data;
	a.accessPolicyWindow.num_bytes =
		n * sizeof(float) < window_max ? n * sizeof(float) : window_max;
	a.accessPolicyWindow.hitRatio = 1.0f;
	a.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
	a.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
	cudaStreamSetAttribute(st, cudaStreamAttributeAccessPolicyWindow, &a);
#else
	(void)a;
#endif
	cudaMemsetAsync(out, 0, sizeof(float), st);
	sum<<<1024, 256, 0, st>>>(data, out, n);
}
