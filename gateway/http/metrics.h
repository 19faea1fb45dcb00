/* kb_gw_metrics: the API's Prometheus counters, served with the rest of
 * the gateway's metrics on the metrics listener (KB_METRICS=0 turns the
 * counting off; GET /metrics on the API port answers 404 either way):
 *
 *   kb_gateway_http_requests_total{route,code}      every request, once,
 *                                                   when it completes
 *   kb_gateway_http_request_duration_seconds{route} first byte to completion
 *                                                   (for a stream: its life)
 *   kb_gateway_submissions_total{result,reason}     kb_gw_submit's outcome:
 *       accepted, or refused with reason invalid (400), unauthenticated
 *       (401), forbidden (403: banned, deadline, closed), unknown_board
 *       (404), too_large (413), rate_limited (429), unavailable (503),
 *       error (other)
 *
 * plus the process's own and the Kafka client errors every service
 * counts (kb_kafka.h). The gauges read at scrape time are the program's
 * (gauges.h). Request counting is two relaxed atomic additions and a
 * histogram bucket; the series of a (route, status) pair is looked up
 * once and kept in a table indexed by both.
 *
 * Thread-safety: all calls are thread-safe; kb_gw_metrics_init() runs once
 * in main() before the daemon starts.
 */
#ifndef KB_GW_METRICS_H
#define KB_GW_METRICS_H

#include "base/gateway.h"
#include "router.h"

/* Registers the families when g->cfg.metrics is set (else every call
 * below does nothing). Returns 0, or -ENOMEM. */
int kb_gw_metrics_init(const struct kb_gw *g);

/* A request completed with status after seconds. */
void kb_gw_metrics_request(enum kb_route_id route, int status, double seconds);

/* kb_gw_submit's outcome: status 0 accepted, else the refusal's status. */
void kb_gw_metrics_submission(int status);

#endif
