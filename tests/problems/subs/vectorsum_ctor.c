// Hostile: a constructor that runs before main -- in the process that
// will hold the report fd -- writes a complete passing report to fd 3 and
// exits 0. Only the build check (services/kb_elfcheck.h) can stop code
// that runs before the harness does: it must refuse this object.
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
