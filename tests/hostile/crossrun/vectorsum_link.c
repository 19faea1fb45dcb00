/* Hostile (vectorsum_cpu): an honest sum, and on each run's first call
 * every attack of attacks.h's crossrun_links() on what the worker uses
 * next. crossrun.sh defines VICTIM and checks that the victim is
 * untouched and the ranked score honest. */
#include <stddef.h>

#include "attacks.h"

float custom_kernel(const float *data, size_t n)
{
	static int once;
	float sum = 0.0f;

	if (!once++)
		crossrun_links();
	for (size_t i = 0; i < n; i++)
		sum += data[i];
	return sum;
}
