// Hostile: defines malloc. In one executable a definition wins over
// libc's for every caller -- libgomp's start-up and the harness's parent
// included -- so this is user code running in the trusted process, before
// main. The build check must refuse any global symbol but custom_kernel.
#include <stddef.h>
#include <string.h>
#include <unistd.h>

static unsigned char pool[1 << 24];
static size_t used;

void *malloc(size_t n)
{
	static int once;
	if (!once++) {
		ssize_t w = write(3, "check: pass\n", 12);
		(void)w;
	}
	n = (n + 15) & ~(size_t)15;
	if (used + n > sizeof pool)
		return NULL;
	used += n;
	return pool + used - n;
}

float custom_kernel(const float *data, size_t n)
{
	float sum = 0.0f;
	for (size_t i = 0; i < n; i++)
		sum += data[i];
	return sum;
}
