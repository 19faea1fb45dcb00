/* kb_gw_metrics: see gw_metrics.h; GET /metrics is served here too. */
#include "gw_metrics.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "http.h"
#include "hub.h"
#include "kb_metrics.h"
#include "kb_metrics_process.h"
#include "kb_util.h"
#include "queue.h"
#include "store.h"
#include "web/web.h"

#define STATUS_MIN 100
#define STATUS_MAX 599
#define MAX_GPUS 64

static struct {
	int on;
	struct kb_gw *g;
	kb_metric_family *requests, *latency, *submissions;
	kb_metric_family *sse, *inflight, *depth, *running, *workers;
	/* Series by (route, status) and by route, filled on first use. */
	_Atomic(kb_series *) req[KB_ROUTE_COUNT][STATUS_MAX - STATUS_MIN + 1];
	_Atomic(kb_series *) lat[KB_ROUTE_COUNT];
} M;

/* At scrape time: streams, requests in flight, and per gpu the queue, the
 * running jobs and the workers heard of. */
static void collect(kb_metrics *m, void *ctx)
{
	struct kb_gw *g = ctx;
	const char *gpus[MAX_GPUS];
	struct kb_gw_worker_info w[64];
	int64_t now = kb_now_ms();

	(void)m;
	kb_gauge_set(kb_metric_get1(M.sse, "submission"), (double)kb_gw_hub_count(g->hub));
	kb_gauge_set(kb_metric_get1(M.sse, "board"), (double)kb_gw_web_streams(g));
	/* API requests only: this scrape comes through the metrics
	 * listener, which the count does not include. */
	kb_gauge_set(kb_metric_get0(M.inflight), (double)atomic_load(&g->inflight));
	size_t n = kb_gw_live_gpus(g, gpus, MAX_GPUS);
	for (size_t i = 0; i < n; i++) {
		char err[256];
		long lag = -1, running = 0;
		if (!g->queue || kb_gw_queue_lag(g->queue, gpus[i], &lag, err, sizeof(err)) < 0)
			lag = -1;
		kb_gauge_set(kb_metric_get1(M.depth, gpus[i]), (double)lag);
		if (kb_gw_running_count(g, gpus[i], &running) == 0)
			kb_gauge_set(kb_metric_get1(M.running, gpus[i]), (double)running);
		size_t nw = kb_gw_events_workers(g->events, gpus[i], now,
						 g->cfg.worker_stale_s * 1000, w, 64);
		size_t busy = 0;
		for (size_t k = 0; k < nw; k++)
			busy += w[k].busy_with != 0;
		kb_gauge_set(kb_metric_get2(M.workers, gpus[i], "idle"), (double)(nw - busy));
		kb_gauge_set(kb_metric_get2(M.workers, gpus[i], "busy"), (double)busy);
	}
}

int kb_gw_metrics_init(struct kb_gw *g)
{
	kb_metrics *m = kb_metrics_default();

	if (!g->cfg.metrics)
		return 0;
	M.g = g;
	kb_metrics_process(m, "gateway");
	M.requests = kb_metrics_counter(m, "kb_gateway_http_requests_total",
					"HTTP requests by route and status.", "route,code");
	M.latency = kb_metrics_histogram(m, "kb_gateway_http_request_duration_seconds",
					 "Time from a request's first byte to its "
					 "completion (a stream: its whole life).",
					 "route", kb_metrics_latency_bounds,
					 KB_METRICS_LATENCY_NBOUNDS);
	M.submissions = kb_metrics_counter(m, "kb_gateway_submissions_total",
					   "Submissions accepted, or refused by reason.",
					   "result,reason");
	M.sse = kb_metrics_gauge(m, "kb_gateway_sse_clients",
				 "Open server-sent event streams.", "kind");
	M.inflight = kb_metrics_gauge(m, "kb_gateway_requests_in_flight",
				      "Requests being served (not counting the scrape).",
				      NULL);
	M.depth = kb_metrics_gauge(m, "kb_queue_depth",
				   "Consumer lag of kb-worker.<gpu>: queued and running "
				   "jobs (-1: the broker cannot say).", "gpu");
	M.running = kb_metrics_gauge(m, "kb_queue_running",
				     "Jobs a worker reported working on.", "gpu");
	M.workers = kb_metrics_gauge(m, "kb_gateway_workers_seen",
				     "Workers heard of on kb.results within "
				     "KB_WORKER_STALE_S.", "gpu,state");
	if (!M.requests || !M.latency || !M.submissions || !M.sse || !M.inflight ||
	    !M.depth || !M.running || !M.workers ||
	    kb_metrics_on_collect(m, collect, g) < 0)
		return -ENOMEM;
	kb_metric_get2(M.submissions, "accepted", "");
	atomic_thread_fence(memory_order_release);
	M.on = 1;
	return 0;
}

void kb_gw_metrics_request(enum kb_route_id route, int status, double seconds)
{
	char code[16];
	kb_series *s;

	if (!M.on || (unsigned)route >= KB_ROUTE_COUNT)
		return;
	/* Admin routes count as one, "admin" (in the slots of one of them):
	 * which admin action ran when is the admins' business only. */
	const char *name = kb_route_name(route);
	if (name && strncmp(name, "admin_", 6) == 0) {
		name = "admin";
		route = KB_ROUTE_ADMIN_USERS;
	}
	snprintf(code, sizeof(code), "%d", status);
	if (status >= STATUS_MIN && status <= STATUS_MAX) {
		_Atomic(kb_series *) *slot = &M.req[route][status - STATUS_MIN];
		s = atomic_load_explicit(slot, memory_order_acquire);
		if (!s) {
			s = kb_metric_get2(M.requests, name, code);
			atomic_store_explicit(slot, s, memory_order_release);
		}
	} else {
		s = kb_metric_get2(M.requests, name, code);
	}
	kb_counter_inc(s);
	s = atomic_load_explicit(&M.lat[route], memory_order_acquire);
	if (!s) {
		s = kb_metric_get1(M.latency, name);
		atomic_store_explicit(&M.lat[route], s, memory_order_release);
	}
	kb_histogram_observe(s, seconds);
}

void kb_gw_metrics_submission(int status)
{
	const char *reason;

	if (!M.on)
		return;
	switch (status) {
	case 0: reason = ""; break;
	case 400: reason = "invalid"; break;
	case 401: reason = "unauthenticated"; break;
	case 403: reason = "forbidden"; break;
	case 404: reason = "unknown_board"; break;
	case 413: reason = "too_large"; break;
	case 429: reason = "rate_limited"; break;
	case 503: reason = "unavailable"; break;
	default: reason = "error"; break;
	}
	kb_counter_inc(kb_metric_get2(M.submissions, status ? "refused" : "accepted",
				      reason));
}

/* ---- GET /metrics on the API port ---- */

/* Not served here: the metrics show admin activity, per-GPU queues and
 * busy workers, so they have a listener of their own (KB_METRICS_PORT,
 * loopback by default; main.c). */
static void metrics_begin(struct kb_gw_req *r)
{
	kb_gw_reply_error(r, 404,
			  "metrics are served on their own listener "
			  "(KB_METRICS_ADDR:KB_METRICS_PORT), not here");
}

static void no_body(struct kb_gw_req *r)
{
	kb_gw_reply_error(r, 500, "internal error");
}

const struct kb_gw_handler kb_gw_metrics_handlers[KB_ROUTE_COUNT] = {
	[KB_ROUTE_METRICS] = {metrics_begin, no_body},
};
