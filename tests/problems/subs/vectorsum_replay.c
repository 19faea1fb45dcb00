// Hostile: replays the result of the previous call, keyed by call count
// rather than by address (computes for real only every fourth call). Fresh
// data on every timed call must expose it.
#include <stddef.h>

static unsigned long calls;
static float last;

float custom_kernel(const float *data, size_t n)
{
	if (calls++ % 4 != 0)
		return last;
	float sum = 0.0f;
	for (size_t i = 0; i < n; i++)
		sum += data[i];
	last = sum;
	return sum;
}
