// Hostile: an IFUNC whose resolver runs inside the dynamic loader, before
// any constructor and long before main. The build check must refuse it.
#include <stddef.h>
#include <unistd.h>

static float sum_impl(const float *data, size_t n)
{
	float sum = 0.0f;
	for (size_t i = 0; i < n; i++)
		sum += data[i];
	return sum;
}

static void *resolve(void)
{
	ssize_t w = write(3, "check: pass\n", 12);
	(void)w;
	return (void *)sum_impl;
}

float custom_kernel(const float *data, size_t n)
	__attribute__((ifunc("resolve")));
