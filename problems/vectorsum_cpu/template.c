// vectorsum_cpu: return the sum of n floats (n >= 1).
// data is 64-byte aligned and read-only; see the task description.
#include <stddef.h>

float custom_kernel(const float *data, size_t n)
{
	float sum = 0.0f;
	for (size_t i = 0; i < n; i++)
		sum += data[i];
	return sum;
}
