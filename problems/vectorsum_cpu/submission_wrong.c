// A wrong vectorsum_cpu submission (for the tests): unrolled by 8 and
// forgets the last n % 8 elements.
#include <stddef.h>

float custom_kernel(const float *data, size_t n)
{
	float acc[8] = {0};
	for (size_t i = 0; i + 8 <= n; i += 8)
		for (int k = 0; k < 8; k++)
			acc[k] += data[i + k];
	float s = 0.0f;
	for (int k = 0; k < 8; k++)
		s += acc[k];
	return s;
}
