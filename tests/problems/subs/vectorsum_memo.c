// Hostile: caches the result per buffer address and returns the cached
// value when the same address comes back. Fresh data per call must expose
// it in the timed modes.
#include <stddef.h>

#define SLOTS 8
static const float *seen[SLOTS];
static float value[SLOTS];

float custom_kernel(const float *data, size_t n)
{
	for (int s = 0; s < SLOTS; s++)
		if (seen[s] == data)
			return value[s];
	float sum = 0.0f;
	for (size_t i = 0; i < n; i++)
		sum += data[i];
	for (int s = 0; s < SLOTS; s++)
		if (!seen[s]) {
			seen[s] = data;
			value[s] = sum;
			break;
		}
	return sum;
}
