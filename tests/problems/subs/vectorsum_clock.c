// Hostile: a correct sum, plus its own clock_gettime that freezes time.
// The harness resolves clock_gettime from libc, so its timings must stay
// real.
#include <stddef.h>
#include <time.h>

int clock_gettime(clockid_t id, struct timespec *ts)
{
	(void)id;
	ts->tv_sec = 0;
	ts->tv_nsec = 0;
	return 0;
}

float custom_kernel(const float *data, size_t n)
{
	float sum = 0.0f;
	for (size_t i = 0; i < n; i++)
		sum += data[i];
	return sum;
}
