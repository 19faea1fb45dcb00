// Hostile: computes the first half of the rows, returns, and lets a
// background thread finish the second half after the call has "ended".
// The harness stops the submission's process as soon as the call is done
// and only then reads the output: the late rows are still NaN.
#define _GNU_SOURCE
#include <pthread.h>
#include <stddef.h>

struct job {
	const float *a, *b;
	float *c;
	int n, lo, hi;
};

static void rows(const struct job *j)
{
	int n = j->n;
	for (int i = j->lo; i < j->hi; i++)
		for (int jj = 0; jj < n; jj++) {
			float s = 0.0f;
			for (int k = 0; k < n; k++)
				s += j->a[i * n + k] * j->b[k * n + jj];
			j->c[i * n + jj] = s;
		}
}

static void *late(void *arg)
{
	rows(arg);
	return NULL;
}

void custom_kernel(const float *a, const float *b, float *c, int n)
{
	static struct job second;
	struct job first = {a, b, c, n, 0, n / 2};
	rows(&first);
	second = (struct job){a, b, c, n, n / 2, n};
	pthread_t t;
	if (pthread_create(&t, NULL, late, &second) == 0)
		pthread_detach(t);
	else
		rows(&second);
}
