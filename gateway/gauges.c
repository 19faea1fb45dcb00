/* kb_gw_gauges: see gauges.h. */
#include "gauges.h"

#include <errno.h>
#include <stdatomic.h>

#include "base/hub.h"
#include "base/queue.h"
#include "core/events.h"
#include "kb_metrics.h"
#include "kb_util.h"
#include "store/store.h"
#include "web/web.h"

#define MAX_GPUS 64

static struct {
	kb_metric_family *sse, *inflight, *depth, *running, *workers;
} gauges;

/* At scrape time: streams, requests in flight, and per gpu the queue, the
 * running jobs and the workers heard of. */
static void collect(kb_metrics *m, void *ctx)
{
	struct kb_gw *g = ctx;
	const char *gpus[MAX_GPUS];
	struct kb_gw_worker_info w[64];
	int64_t now = kb_now_ms();

	(void)m;
	kb_gauge_set(kb_metric_get1(gauges.sse, "submission"),
		     (double)kb_gw_hub_count(g->hub));
	kb_gauge_set(kb_metric_get1(gauges.sse, "board"),
		     (double)kb_gw_web_streams(g));
	/* API requests only: this scrape comes through the metrics
	 * listener, which the count does not include. */
	kb_gauge_set(kb_metric_get0(gauges.inflight),
		     (double)atomic_load(&g->inflight));
	size_t n = kb_gw_live_gpus(g, gpus, MAX_GPUS);
	for (size_t i = 0; i < n; i++) {
		char err[256];
		long lag = -1, running = 0;
		if (!g->queue || kb_gw_queue_lag(g->queue, gpus[i], &lag, err,
						 sizeof(err)) < 0)
			lag = -1;
		kb_gauge_set(kb_metric_get1(gauges.depth, gpus[i]),
			     (double)lag);
		if (kb_gw_running_count(g, gpus[i], &running) == 0)
			kb_gauge_set(kb_metric_get1(gauges.running, gpus[i]),
				     (double)running);
		size_t nw = kb_gw_events_workers(g->events, gpus[i], now,
						 g->cfg.worker_stale_s * 1000,
						 w, 64);
		size_t busy = 0;
		for (size_t k = 0; k < nw; k++)
			busy += w[k].busy_with != 0;
		kb_gauge_set(kb_metric_get2(gauges.workers, gpus[i], "idle"),
			     (double)(nw - busy));
		kb_gauge_set(kb_metric_get2(gauges.workers, gpus[i], "busy"),
			     (double)busy);
	}
}

int kb_gw_gauges_init(struct kb_gw *g)
{
	kb_metrics *m = kb_metrics_default();

	if (!g->cfg.metrics)
		return 0;
	gauges.sse = kb_metrics_gauge(m, "kb_gateway_sse_clients",
				      "Open server-sent event streams.",
				      "kind");
	gauges.inflight = kb_metrics_gauge(
		m, "kb_gateway_requests_in_flight",
		"Requests being served (not counting the scrape).", NULL);
	gauges.depth = kb_metrics_gauge(
		m, "kb_queue_depth",
		"Consumer lag of kb-worker.<gpu>: queued and running "
		"jobs (-1: the broker cannot say).",
		"gpu");
	gauges.running = kb_metrics_gauge(m, "kb_queue_running",
					  "Jobs a worker reported working on.",
					  "gpu");
	gauges.workers =
		kb_metrics_gauge(m, "kb_gateway_workers_seen",
				 "Workers heard of on kb.results within "
				 "KB_WORKER_STALE_S.",
				 "gpu,state");
	if (!gauges.sse || !gauges.inflight || !gauges.depth ||
	    !gauges.running || !gauges.workers ||
	    kb_metrics_on_collect(m, collect, g) < 0)
		return -ENOMEM;
	return 0;
}
