// Hostile: a background thread that keeps summing every work slot it has
// seen, so that a call whose inputs were already summed returns at once.
// Inputs are staged into the shared slots before "go"; the harness stops
// the submission's process while it stages, so the thread can start only
// when the call does, and the time it gets ahead of the call proper lies
// inside the harness's own measurement of the call. The test expects the
// thread to lose the race (hits, counted on stderr at each call) or its
// wins to be scored from that measurement (a mean no better than the
// honest submission's best by more than the calibrated handoff).
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>

#define SLOTS 8

struct entry {
	const float *p;
	size_t n;
	_Atomic float first, last; /* data seen when the sum was taken */
	_Atomic float sum;
	_Atomic int valid;
};

static struct entry cache[SLOTS];
static _Atomic int nslots;
static unsigned long calls, hits;

static float sum_of(const float *p, size_t n)
{
	float s = 0.0f;
	for (size_t i = 0; i < n; i++)
		s += p[i];
	return s;
}

static void *worker(void *arg)
{
	(void)arg;
	for (;;) {
		int k = atomic_load(&nslots);
		for (int i = 0; i < k; i++) {
			struct entry *e = &cache[i];
			float f = e->p[0], l = e->p[e->n - 1];
			if (atomic_load(&e->valid) &&
			    f == atomic_load(&e->first) &&
			    l == atomic_load(&e->last))
				continue;
			atomic_store(&e->valid, 0);
			float s = sum_of(e->p, e->n);
			atomic_store(&e->first, f);
			atomic_store(&e->last, l);
			atomic_store(&e->sum, s);
			atomic_store(&e->valid, 1);
		}
	}
	return NULL;
}

float custom_kernel(const float *data, size_t n)
{
	static int started;
	calls++;
	int k = atomic_load(&nslots);
	for (int i = 0; i < k; i++) {
		struct entry *e = &cache[i];
		if (e->p == data && e->n == n && atomic_load(&e->valid) &&
		    data[0] == atomic_load(&e->first) &&
		    data[n - 1] == atomic_load(&e->last)) {
			float s = atomic_load(&e->sum);
			/* only a hit if it is the right answer (first and last
			 * elements can repeat by chance) */
			if (s == sum_of(data, n)) {
				hits++;
				fprintf(stderr,
					"precompute: %lu hits of %lu calls\n",
					hits, calls);
				return s;
			}
		}
	}
	if (k < SLOTS && n > 1) {
		cache[k].p = data;
		cache[k].n = n;
		atomic_store(&nslots, k + 1);
	}
	if (!started && n > 1) {
		started = 1;
		pthread_t t;
		pthread_create(&t, NULL, worker, NULL);
	}
	fprintf(stderr, "precompute: %lu hits of %lu calls\n", hits, calls);
	return sum_of(data, n);
}
