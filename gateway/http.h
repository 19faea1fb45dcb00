/* kb_gw_http: libmicrohttpd glue. Owns the daemon, the per-request state
 * and the request log; the endpoints themselves live in handlers.c.
 *
 * Threading: MHD runs an internal pool of cfg.http_threads threads, each
 * with its own epoll set; a connection stays on the thread that accepted
 * it, and its handler runs there from first call to completion. Handlers
 * may block (Redis round trips, the synchronous Kafka delivery of a
 * submission); the pool is sized so that a few blocked submissions do not
 * starve reads.
 *
 * Request lifecycle: on the first call the route is matched and the
 * handler's begin() runs with the headers only. It either queues a
 * response at once (every GET, and every refusal that the headers decide:
 * auth, unknown board, unknown mode, Content-Length over the cap), so
 * MHD never reads the body; or it declares the body it accepts. The body
 * is then streamed into the multipart parser (or a small JSON buffer),
 * never beyond its cap. MHD 0.9.x cannot answer in the middle of an
 * upload, so a body found invalid while streaming is drained and answered
 * at its end, and one that keeps coming far past the cap is cut off by
 * closing the connection.
 */
#ifndef KB_GW_HTTP_H
#define KB_GW_HTTP_H

#include <jansson.h>
#include <microhttpd.h>
#include <stdint.h>

#include "gateway.h"
#include "multipart.h"
#include "router.h"
#include "rules.h"
#include "store.h"

struct kb_gw_http;

enum kb_gw_body { KB_GW_BODY_NONE = 0, KB_GW_BODY_MULTIPART, KB_GW_BODY_JSON };

struct kb_gw_req {
	const struct kb_gw *g;
	struct kb_gw_http *http;
	struct MHD_Connection *conn;
	double t0;
	char method[16];
	char path[160]; /* for the log line: control characters replaced, cut */
	struct kb_route route;
	int status;            /* the status queued; 0 before */
	enum MHD_Result queued;

	/* The body begin() accepted. */
	enum kb_gw_body body;
	uint64_t body_cap;     /* bytes of body accepted in all */
	uint64_t received;
	int body_status;       /* first refusal found while streaming */
	char body_why[160];
	kb_multipart *mp;
	char *json;
	size_t json_len;

	/* Filled by begin() for finish(). */
	struct kb_gw_user user;
	const struct kb_gw_lb *lb;
	enum kb_mode mode;
};

/* Starts the daemon on cfg.http_addr:http_port. Returns NULL with errstr
 * set. */
struct kb_gw_http *kb_gw_http_start(struct kb_gw *g, char *errstr,
				    size_t errstr_size);

/* Stops accepting connections; requests in flight go on. */
void kb_gw_http_quiesce(struct kb_gw_http *h);

/* Stops the daemon (closing idle connections) and frees. NULL is a no-op. */
void kb_gw_http_stop(struct kb_gw_http *h);

/* For handlers: each queues one response and records its status. body is
 * stolen. detail is sanitised to UTF-8. */
void kb_gw_reply_json(struct kb_gw_req *r, int status, json_t *body);
void kb_gw_reply_error(struct kb_gw_req *r, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Answers with one of the bodies rendered at startup. */
void kb_gw_reply_cached(struct kb_gw_req *r, const char *which_lb);

/* Request header / query argument, or NULL. */
const char *kb_gw_header(struct kb_gw_req *r, const char *name);
const char *kb_gw_query(struct kb_gw_req *r, const char *name);

/* handlers.c: the endpoints. begin() runs on the headers; finish() after
 * the body begin() accepted. Either may reply. */
struct kb_gw_handler {
	void (*begin)(struct kb_gw_req *r);
	void (*finish)(struct kb_gw_req *r);
};
const struct kb_gw_handler *kb_gw_handler_for(enum kb_route_id id);

#endif
