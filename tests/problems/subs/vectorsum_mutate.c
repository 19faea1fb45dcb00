// Hostile: returns the right sum but reduces in place, overwriting its
// (read-only) input. The harness must fail it.
#include <stddef.h>

float custom_kernel(const float *data, size_t n)
{
	float *x = (float *)data;
	for (size_t w = 1; w < n; w *= 2)
		for (size_t i = 0; i + w < n; i += 2 * w)
			x[i] += x[i + w];
	return x[0];
}
