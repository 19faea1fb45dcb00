/* bench/web/metrics_cost.c: what the gateway's per-request counting costs,
 * measured on its own (no HTTP, no wrk): per request kb_gw_metrics_request
 * does one counter increment and one histogram observation on series it
 * keeps in a table, from every HTTP thread at once. THREADS threads do that
 * N times on shared series (the contended case: every request on one
 * route). Prints ns per request.
 *
 *   cc -O2 -Iservices bench/web/metrics_cost.c build/services/libkbpure.a \
 *      -lyaml -lsodium -lm -lpthread -o /tmp/metrics_cost && /tmp/metrics_cost
 */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "kb_metrics.h"

#define N 20000000L

static kb_series *req, *lat;

static void *run(void *arg)
{
	(void)arg;
	for (long i = 0; i < N; i++) {
		kb_counter_inc(req);
		kb_histogram_observe(lat, 0.00002 + (double)(i & 7) * 1e-6);
	}
	return NULL;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(void)
{
	kb_metrics *m = kb_metrics_new();
	req = kb_metric_get2(kb_metrics_counter(m, "r_total", "x",
						"route,code"),
			     "ranking", "200");
	lat = kb_metric_get1(kb_metrics_histogram(m, "r_seconds", "x", "route",
						  kb_metrics_latency_bounds,
						  KB_METRICS_LATENCY_NBOUNDS),
			     "ranking");
	for (int threads = 1; threads <= 2; threads++) {
		pthread_t th[2];
		double t0 = now();
		for (int i = 0; i < threads; i++)
			pthread_create(&th[i], NULL, run, NULL);
		for (int i = 0; i < threads; i++)
			pthread_join(th[i], NULL);
		double dt = now() - t0;
		printf("%d thread(s): %.1f ns per request (wall per thread)\n",
		       threads, dt * 1e9 / N);
	}
	kb_metrics_destroy(m);
	return 0;
}
