/* kb_metrics_http: a tiny HTTP listener that serves one registry on
 * GET /metrics, apart from any public port: kb-worker, kb-ranker, and
 * kb-gateway, whose API port does not serve it (metrics show admin
 * activity, queues and workers).
 *
 * libmicrohttpd with one internal thread: a scrape renders the registry
 * (kb_metrics_render) on that thread, so the service's own threads never
 * wait for a scraper, and a slow scraper delays only other scrapes.
 * GET /metrics answers 200 with the text exposition; GET /health 200
 * "ok"; any other path 404, any other method 405.
 *
 * Thread-safety: start and stop from one thread (main()).
 */
#ifndef KB_METRICS_HTTP_H
#define KB_METRICS_HTTP_H

#include <stddef.h>

#include "kb_metrics.h"

typedef struct kb_metrics_server kb_metrics_server;

/* Listens on addr (an IPv4 or IPv6 literal) and port (1..65535) and serves
 * m, which must outlive the server. Returns NULL with errstr set (bad
 * address, port in use, out of memory). */
kb_metrics_server *kb_metrics_serve(kb_metrics *m, const char *addr, int port,
				    char *errstr, size_t errstr_size);

/* Stops listening, waits for a scrape in progress, frees. NULL is a
 * no-op. */
void kb_metrics_server_stop(kb_metrics_server *s);

#endif
