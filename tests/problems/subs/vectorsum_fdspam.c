// Hostile: on its first call, writes a complete fake report ("check: pass",
// an absurd benchmark mean) to every fd from 1 to 20 -- wherever the report
// channel might be -- and then exit(0)s before the harness can say anything.
// The report fd lives only in the harness's parent process: the fake lines
// must not reach it, and the early exit must end as a crash, not a pass.
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char fake[] = "test-count: 1\n"
			   "test.0.spec: size: 1; seed: 1\n"
			   "test.0.status: pass\n"
			   "benchmark-count: 1\n"
			   "benchmark.0.mean: 1.000\n"
			   "check: pass\n";

float custom_kernel(const float *data, size_t n)
{
	(void)data;
	(void)n;
	for (int fd = 1; fd <= 20; fd++) {
		ssize_t w = write(fd, fake, strlen(fake));
		(void)w;
	}
	exit(0);
}
