// Hostile: reads 64 bytes past the end of its input. The guard page after
// every work buffer must turn this into a crash (SIGSEGV).
#include <stddef.h>

float custom_kernel(const float *data, size_t n)
{
	volatile float past = data[n + 16];
	float sum = past * 0.0f;
	for (size_t i = 0; i < n; i++)
		sum += data[i];
	return sum;
}
