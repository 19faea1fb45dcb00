/* kb_gw_gauges: the gateway's gauges, read at scrape time from the
 * modules that keep them (never on a request path), beside the API's
 * counters (http/metrics.h) on the metrics listener:
 *
 *   kb_gateway_sse_clients{kind}        open streams: submission
 *                                       (POST /{lb}/{gpu}/{mode}), board
 *                                       (GET /web/events)
 *   kb_gateway_requests_in_flight
 *   kb_queue_depth{gpu}                 consumer lag of kb-worker.<gpu>
 *                                       (queued and running jobs; -1 when
 *                                       the broker cannot say)
 *   kb_queue_running{gpu}               jobs a worker reported working on
 *   kb_gateway_workers_seen{gpu,state}  workers heard of on kb.results
 *                                       within KB_WORKER_STALE_S, idle or
 *                                       busy
 *
 * They read the hub, the web feed, the events thread, the queue and the
 * store, so they are the program's rather than any one module's.
 * Thread-safety: kb_gw_gauges_init() runs once in main() before the
 * daemon starts; the collector runs on the scraping thread.
 */
#ifndef KB_GW_GAUGES_H
#define KB_GW_GAUGES_H

#include "base/gateway.h"

/* Registers the gauges and their collector when g->cfg.metrics is set
 * (else does nothing). Returns 0, or -ENOMEM. */
int kb_gw_gauges_init(struct kb_gw *g);

#endif
