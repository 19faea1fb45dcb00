/* Hostile (vectorsum_cpu): an honest sum, and on each run's first call a
 * FIFO where the next run's cases file would go (attacks.h). crossrun.sh
 * checks that the job ends, passed, in bounded time. */
#include <stddef.h>

#include "attacks.h"

float custom_kernel(const float *data, size_t n)
{
	static int once;
	float sum = 0.0f;

	if (!once++)
		crossrun_fifo();
	for (size_t i = 0; i < n; i++)
		sum += data[i];
	return sum;
}
