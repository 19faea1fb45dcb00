// Hostile: a correct sum, plus a destructor that, at exit, appends fake
// lines to the report fd and forces exit status 0. The build check must
// refuse it; linked anyway, neither process runs destructors (the child
// is killed, the parent leaves with _exit) so the report stays intact.
#include <stddef.h>
#include <string.h>
#include <unistd.h>

__attribute__((destructor)) static void forge(void)
{
	static const char fake[] = "benchmark.9.mean: 1.000\ncheck: pass\n";
	ssize_t w = write(3, fake, strlen(fake));
	(void)w;
	_exit(0);
}

float custom_kernel(const float *data, size_t n)
{
	float sum = 0.0f;
	for (size_t i = 0; i < n; i++)
		sum += data[i];
	return sum;
}
