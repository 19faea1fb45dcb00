// A correct, reasonably fast vectorsum_cpu submission: 32 independent
// accumulators (vectorised by the compiler, enough to hide the add
// latency), split over the OpenMP threads for large inputs, partial sums
// combined in double.
#include <stddef.h>
#include <omp.h>

#define LANES 32

static float partial_sum(const float *restrict x, size_t n)
{
	float acc[LANES] = {0};
	size_t i = 0;
	for (; i + LANES <= n; i += LANES)
		for (int k = 0; k < LANES; k++)
			acc[k] += x[i + k];
	float tail = 0.0f;
	for (; i < n; i++)
		tail += x[i];
	for (int w = LANES / 2; w > 0; w /= 2)
		for (int k = 0; k < w; k++)
			acc[k] += acc[k + w];
	return acc[0] + tail;
}

float custom_kernel(const float *data, size_t n)
{
	if (n < ((size_t)1 << 17))
		return partial_sum(data, n);
	double total = 0.0;
#pragma omp parallel reduction(+ : total)
	{
		size_t t = (size_t)omp_get_thread_num();
		size_t nt = (size_t)omp_get_num_threads();
		/* chunks of whole cache lines */
		size_t chunk = (n / nt + 15) / 16 * 16;
		size_t lo = t * chunk;
		size_t hi = lo + chunk < n ? lo + chunk : n;
		if (lo < n)
			total += partial_sum(data + lo, hi - lo);
	}
	return (float)total;
}
