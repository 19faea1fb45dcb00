// Hostile: correct on its first call, then calls exit(0) from inside
// custom_kernel (after an atexit handler that prints a fake "check: pass"
// to stdout and fds 3..20). The harness must report a crash, not a pass,
// and none of the fake lines may reach the report.
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int calls;

static void forge(void)
{
	static const char fake[] = "benchmark.0.mean: 1.000\ncheck: pass\n";
	fputs(fake, stdout);
	fflush(stdout);
	for (int fd = 3; fd <= 20; fd++) {
		ssize_t w = write(fd, fake, strlen(fake));
		(void)w;
	}
}

float custom_kernel(const float *data, size_t n)
{
	if (calls++ == 0)
		atexit(forge);
	else
		exit(0);
	float sum = 0.0f;
	for (size_t i = 0; i < n; i++)
		sum += data[i];
	return sum;
}
