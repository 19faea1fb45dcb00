/* An honest vectorsum_cpu submission that is slow on its first call, so a
 * test can kill the worker while this submission is being evaluated (long
 * enough for the "testing" stage to reach Redis on a loaded machine). */
#include <stddef.h>
#include <unistd.h>

float custom_kernel(const float *data, size_t n)
{
	static int calls;
	double s = 0;

	if (calls++ == 0)
		sleep(10);
	for (size_t i = 0; i < n; i++)
		s += data[i];
	return (float)s;
}
