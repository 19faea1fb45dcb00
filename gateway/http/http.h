/* kb_gw_http: libmicrohttpd glue. Owns the daemon, the per-request state,
 * the request log and the shared response bodies, and says what a handler
 * may ask of its request (request.c). The endpoints are not here: the
 * route table, one handler per route id (router.h), comes from main()
 * (the API's routes/, the web pages, Discord) through kb_gw_http_bind().
 *
 * Threading: MHD runs an internal pool of cfg.http_threads threads (one
 * per CPU by default), each with its own epoll set; a connection stays on
 * the thread that accepted it, and its handler runs there from first call
 * to completion. Handlers do Redis round trips (sub-millisecond) on these
 * threads but never wait longer: the synchronous Kafka delivery of a
 * submission and an OAuth code exchange run on the gateway's pool of
 * blocking threads (kb_gw_defer, pool.h) while the connection is
 * suspended. A streaming response (SSE) does not hold its thread either:
 * its connection is suspended while it waits for events and resumed when
 * one arrives (routes/stream.c).
 *
 * Request lifecycle: on the first call the URL length, the size of the
 * headers (431), the route (404/405) and the query parameters (400 for
 * unknown ones) are checked, then the handler's begin() runs with the
 * headers only. It either queues a response at once (every GET, and every
 * refusal that the headers decide: auth, unknown board, unknown mode,
 * Content-Length over the cap), so MHD never reads the body; or it
 * declares the body it accepts. The body is then streamed into the
 * multipart parser (or a small JSON buffer), never beyond its cap. MHD
 * 0.9.x cannot answer in the middle of an upload, so a body found invalid
 * while streaming is drained and answered at its end, and one that keeps
 * coming far past the cap is cut off by closing the connection.
 */
#ifndef KB_GW_HTTP_H
#define KB_GW_HTTP_H

#include <jansson.h>
#include <microhttpd.h>
#include <stdint.h>

#include "base/gateway.h"
#include "multipart.h"
#include "router.h"
#include "rules.h"
#include "store/store.h"

struct kb_gw_http;
struct kb_gw_stream;

enum kb_gw_body { KB_GW_BODY_NONE = 0, KB_GW_BODY_MULTIPART, KB_GW_BODY_JSON };

struct kb_gw_req {
	struct kb_gw *g;
	struct kb_gw_http *http;
	struct MHD_Connection *conn;
	double t0;
	char method[16];
	char path[160]; /* for the log line: control characters replaced, cut */
	struct kb_route route;
	int status; /* the status queued; 0 before */
	enum MHD_Result queued;
	uint64_t sub_id; /* for the log line, when one was made */
	/* A submission route: its refusal, whichever check makes it (auth,
	 * board, size, body, policy), is counted once in
	 * kb_gateway_submissions_total (sub_counted: already). */
	int submission, sub_counted;

	/* The body begin() accepted. */
	enum kb_gw_body body;
	uint64_t body_cap; /* bytes of body accepted in all */
	uint64_t received;
	int body_status; /* first refusal found while streaming */
	char body_why[160];
	kb_multipart *mp;
	char *json; /* raw body bytes (NUL-terminated) */
	size_t json_len;

	/* Filled by begin() for finish(). */
	struct kb_gw_user user;
	int has_user;
	const struct kb_gw_lb *lb;
	enum kb_mode mode;
	struct kb_gw_stream *stream; /* an SSE answer in progress */

	/* A step deferred to the pool (kb_gw_defer). */
	void (*defer_work)(struct kb_gw_req *r);
	void (*defer_done)(struct kb_gw_req *r);
	atomic_int defer_state; /* 0 none, 1 running, 2 finished */
	int begin_later;        /* no body: handle on the second callback */
	void *pending;          /* the handler's state across the step */
	void (*pending_free)(void *pending); /* if the request ends first */

	/* A slot of slot_key taken in slot (limiter.h), given back when the
	 * request ends; slot_key "" when none. */
	struct kb_gw_limiter *slot;
	char slot_key[96];
};

/* Runs work(r) on the gateway's pool (pool.h) while r's connection is
 * suspended, then done(r) back on the connection's thread; done() must
 * reply. Call at the end of begin() or finish(), and touch r no more
 * until done(r). Keeps libmicrohttpd's threads from waiting on the broker
 * or an OAuth provider. */
void kb_gw_defer(struct kb_gw_req *r, void (*work)(struct kb_gw_req *r),
		 void (*done)(struct kb_gw_req *r));
/* The same on another pool (logins have their own, so that they cannot
 * hold up submissions). When the pool is full or stopping, done() answers
 * 503 instead. */
struct kb_gw_pool;
void kb_gw_defer_to(struct kb_gw_req *r, struct kb_gw_pool *pool,
		    void (*work)(struct kb_gw_req *r),
		    void (*done)(struct kb_gw_req *r));

/* The client's address as text (IPv4 dotted, IPv6 cut to its /64 so that
 * one host cannot pose as many): from the header KB_HTTP_CLIENT_IP_HEADER
 * names when set and present (a proxy in front sets it), else the TCP
 * peer. "unknown" when neither is known. */
void kb_gw_client_addr(struct kb_gw_req *r, char *out, size_t out_size);

/* Binds cfg.http_addr:http_port and sets cfg.http_port to the port bound
 * (KB_HTTP_PORT=0: one the kernel picks), so that whatever is derived from
 * the port is right before the first request. Serves nothing yet: a
 * connection is refused until kb_gw_http_start(). routes: the handler of
 * each route id, KB_ROUTE_COUNT of them (a route without begin() answers
 * 500), kept until kb_gw_http_stop(). Returns NULL with errstr set. */
struct kb_gw_handler;
struct kb_gw_http *kb_gw_http_bind(struct kb_gw *g,
				   const struct kb_gw_handler *routes,
				   char *errstr, size_t errstr_size);

/* Listens on h's socket and starts the daemon. Returns 0, or -1 with
 * errstr set (h is then only for kb_gw_http_stop). */
int kb_gw_http_start(struct kb_gw_http *h, char *errstr, size_t errstr_size);

/* Stops serving new connections (each is closed as soon as accepted);
 * requests in flight, and later requests on open connections, go on. */
void kb_gw_http_quiesce(struct kb_gw_http *h);

/* Stops the daemon (closing idle connections), or closes the socket of
 * one never started, and frees. NULL is a no-op.
 * Every stream must have ended (kb_gw_hub_close_all, then drain). */
void kb_gw_http_stop(struct kb_gw_http *h);

/* For handlers: each queues one response and records its status. body is
 * stolen. detail is sanitised to UTF-8. */
void kb_gw_reply_json(struct kb_gw_req *r, int status, json_t *body);
void kb_gw_reply_error(struct kb_gw_req *r, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The same with a Retry-After header (seconds). */
void kb_gw_reply_error_retry(struct kb_gw_req *r, int status, long retry_s,
			     const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Queues a prepared response (the caller keeps its reference). */
void kb_gw_reply_response(struct kb_gw_req *r, int status,
			  struct MHD_Response *resp);
/* A JSON response over a buffer (mode as MHD's); NULL when out of memory. */
struct MHD_Response *kb_gw_json_response(const char *s, size_t len,
					 enum MHD_ResponseMemoryMode mode);

/* Releases a struct MHD_Response * (the ranking cache's destructor). */
void kb_gw_response_destroy(void *resp);

/* GET /health. */
void kb_gw_reply_health(struct kb_gw_req *r);

/* Bodies that requests share until their generation moves (the
 * /leaderboards lists): KB_GW_SHARED_MAX slots, each holding the response
 * made at some generation. */
#define KB_GW_SHARED_MAX 2
/* Replies 200 with slot's body when it was made at gen, else with one
 * made now from render(ctx) (a malloc'd JSON text), which later requests
 * at gen then share; when render fails, with the slot's older body, or
 * 500 when it has none. */
void kb_gw_reply_shared(struct kb_gw_req *r, unsigned slot, unsigned gen,
			char *(*render)(void *ctx), void *ctx);

/* Request header / query argument, or NULL. */
const char *kb_gw_header(struct kb_gw_req *r, const char *name);
const char *kb_gw_query(struct kb_gw_req *r, const char *name);

/* handlers: begin() runs on the headers; finish() after the body begin()
 * accepted. Either may reply. */
struct kb_gw_handler {
	void (*begin)(struct kb_gw_req *r);
	void (*finish)(struct kb_gw_req *r);
};

/* What a handler asks of its request (request.c). */

/* Resolves X-Popcorn-Cli-Id into r->user. Returns 0, or replies (400
 * missing, 401 unknown, 403 banned, 503) and returns -1. */
int kb_gw_authenticate(struct kb_gw_req *r);
/* Like kb_gw_authenticate() when the header is present; 0 and no user
 * when absent. */
int kb_gw_authenticate_optional(struct kb_gw_req *r);
/* Checks the bearer token of /admin routes. Returns 0 or replies. */
int kb_gw_require_admin(struct kb_gw_req *r);
/* 1 if the request carries a valid admin bearer token (no reply). */
int kb_gw_is_admin(struct kb_gw_req *r);
/* Resolves {lb} (and {gpu} when not NULL) into r->lb; replies 404. */
int kb_gw_board_and_gpu(struct kb_gw_req *r, const char *lb, const char *gpu);
/* For reads of closed boards: needs a user with access (or an admin).
 * Returns 0 or replies (401/403/503). */
int kb_gw_board_access(struct kb_gw_req *r);
/* Answers a store error: 503 for -EIO, else 500. */
void kb_gw_store_failed(struct kb_gw_req *r, int rc);
/* Declares a JSON body of at most cap bytes; replies 413/400 on a bad
 * Content-Length and returns -1. */
int kb_gw_expect_json(struct kb_gw_req *r, uint64_t cap);
/* Declares the multipart body of a submission (one "file" field). */
int kb_gw_expect_file(struct kb_gw_req *r);
/* After the multipart body: checks it and returns the file (or replies
 * and returns NULL). */
const char *kb_gw_take_file(struct kb_gw_req *r, size_t *len,
			    const char **file_name);

#endif
