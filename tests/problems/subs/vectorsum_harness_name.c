// Hostile: a correct sum, plus its own definition of a harness function
// (the report writer). The build check must refuse it before anything is
// linked; linked anyway, the harness's own definition clashes with it.
#include <stddef.h>

int kbh_report_kv(void *r, const char *key, const char *fmt, ...);
int kbh_report_kv(void *r, const char *key, const char *fmt, ...)
{
	(void)r;
	(void)key;
	(void)fmt;
	return 0;
}

float custom_kernel(const float *data, size_t n)
{
	float sum = 0.0f;
	for (size_t i = 0; i < n; i++)
		sum += data[i];
	return sum;
}
