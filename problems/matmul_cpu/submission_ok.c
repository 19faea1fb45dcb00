// A correct matmul_cpu submission: rows split over the OpenMP threads,
// i-k-j loop order so the inner loop streams rows of b and c (vectorised
// by the compiler), k blocked so a panel of b stays in cache.
#include <stddef.h>

#define KB 128

void custom_kernel(const float *a, const float *b, float *c, int n)
{
#pragma omp parallel for schedule(static) if (n >= 64)
	for (int i = 0; i < n; i++) {
		float *restrict ci = c + (size_t)i * n;
		for (int j = 0; j < n; j++)
			ci[j] = 0.0f;
		for (int k0 = 0; k0 < n; k0 += KB) {
			int k1 = k0 + KB < n ? k0 + KB : n;
			for (int k = k0; k < k1; k++) {
				float aik = a[(size_t)i * n + k];
				const float *restrict bk = b + (size_t)k * n;
				for (int j = 0; j < n; j++)
					ci[j] += aik * bk[j];
			}
		}
	}
}
