/* kb_gw_metrics: see metrics.h. */
#include "metrics.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb_metrics.h"
#include "kb_metrics_process.h"

#define STATUS_MIN 100
#define STATUS_MAX 599

static struct {
	int on;
	kb_metric_family *requests, *latency, *submissions;
	/* Series by (route, status) and by route, filled on first use. */
	_Atomic(kb_series *) req[KB_ROUTE_COUNT][STATUS_MAX - STATUS_MIN + 1];
	_Atomic(kb_series *) lat[KB_ROUTE_COUNT];
} M;

int kb_gw_metrics_init(const struct kb_gw *g)
{
	kb_metrics *m = kb_metrics_default();

	if (!g->cfg.metrics)
		return 0;
	kb_metrics_process(m, "gateway");
	M.requests = kb_metrics_counter(m, "kb_gateway_http_requests_total",
					"HTTP requests by route and status.",
					"route,code");
	M.latency = kb_metrics_histogram(
		m, "kb_gateway_http_request_duration_seconds",
		"Time from a request's first byte to its "
		"completion (a stream: its whole life).",
		"route", kb_metrics_latency_bounds, KB_METRICS_LATENCY_NBOUNDS);
	M.submissions = kb_metrics_counter(
		m, "kb_gateway_submissions_total",
		"Submissions accepted, or refused by reason.", "result,reason");
	if (!M.requests || !M.latency || !M.submissions)
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
	case 0:
		reason = "";
		break;
	case 400:
		reason = "invalid";
		break;
	case 401:
		reason = "unauthenticated";
		break;
	case 403:
		reason = "forbidden";
		break;
	case 404:
		reason = "unknown_board";
		break;
	case 413:
		reason = "too_large";
		break;
	case 429:
		reason = "rate_limited";
		break;
	case 503:
		reason = "unavailable";
		break;
	default:
		reason = "error";
		break;
	}
	kb_counter_inc(kb_metric_get2(M.submissions,
				      status ? "refused" : "accepted", reason));
}
