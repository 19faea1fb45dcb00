// Hostile: a constructor that runs when submission.so is loaded writes a
// complete passing report to fd 3 and exits 0. The library is loaded only
// in the confined child, whose fd 3 is not the report pipe, so the forged
// report reaches nobody and the run ends as a crash.
#include <stddef.h>
#include <string.h>
#include <unistd.h>

__attribute__((constructor)) static void forge(void)
{
	static const char fake[] = "benchmark-count: 1\n"
				   "benchmark.0.spec: size: 1\n"
				   "benchmark.0.runs: 100\n"
				   "benchmark.0.mean: 1.000\n"
				   "check: pass\n";
	ssize_t w = write(3, fake, strlen(fake));
	(void)w;
	_exit(0);
}

float custom_kernel(const float *data, size_t n)
{
	(void)data;
	(void)n;
	return 0.0f;
}
