// Wrong: accumulates in fp16. Fine for short dot products, off by several
// 1e-3 of |c| once k reaches the thousands (the tests include k = 1024).
#include <cuda_fp16.h>

#include "task.h"

#define T 32

__global__ void mm_kernel(const __half *a, const __half *b, __half *c, int m,
			  int n, int k)
{
	__shared__ __half sa[T][T], sb[T][T + 1];
	int row = blockIdx.y * T + threadIdx.y;
	int col = blockIdx.x * T + threadIdx.x;
	__half acc = __float2half(0.0f);
	for (int t = 0; t < k; t += T) {
		int ka = t + threadIdx.x, kb = t + threadIdx.y;
		sa[threadIdx.y][threadIdx.x] = row < m && ka < k
						       ? a[(size_t)row * k + ka]
						       : __float2half(0.0f);
		sb[threadIdx.y][threadIdx.x] = kb < k && col < n
						       ? b[(size_t)kb * n + col]
						       : __float2half(0.0f);
		__syncthreads();
		for (int i = 0; i < T; i++)
			acc = __hfma(sa[threadIdx.y][i], sb[i][threadIdx.x],
				     acc);
		__syncthreads();
	}
	if (row < m && col < n)
		c[(size_t)row * n + col] = acc;
}

extern "C" void custom_kernel(const __half *a, const __half *b, __half *c,
			      int m, int n, int k)
{
	dim3 block(T, T), grid((n + T - 1) / T, (m + T - 1) / T);
	mm_kernel<<<grid, block>>>(a, b, c, m, n, k);
}
