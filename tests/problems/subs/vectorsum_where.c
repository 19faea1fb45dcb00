// Says which process it is loaded into: its constructor prints its pid
// and its parent's. The harness must load it only in its child (the
// test compares both with the harness's own pid).
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>

__attribute__((constructor)) static void where(void)
{
	fprintf(stderr, "where: pid=%ld ppid=%ld\n", (long)getpid(),
		(long)getppid());
}

float custom_kernel(const float *data, size_t n)
{
	float sum = 0.0f;
	for (size_t i = 0; i < n; i++)
		sum += data[i];
	return sum;
}
