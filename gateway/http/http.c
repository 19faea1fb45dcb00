/* kb_gw_http: see http.h. */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/limiter.h"
#include "base/pool.h"
#include "kb_log.h"
#include "kb_util.h"
#include "metrics.h"

/* Bytes of a refused body we still read (and drop) so that the client can
 * read our answer; past this the connection is closed instead. */
#define DRAIN_MAX (4u << 20)
/* Longest path we route (longer is 414). */
#define URL_MAX 2048

struct kb_gw_http {
	struct kb_gw *g;
	struct MHD_Daemon *daemon;
	int fd; /* bound, not yet the daemon's; -1 after kb_gw_http_start */
	const struct kb_gw_handler *routes; /* by route id */
	struct MHD_Response *health;
	pthread_mutex_t shared_mu; /* the shared bodies (kb_gw_reply_shared) */
	unsigned shared_gen[KB_GW_SHARED_MAX];
	struct MHD_Response *shared_resp[KB_GW_SHARED_MAX];
	atomic_int closing; /* kb_gw_http_quiesce() was called */
};

struct MHD_Response *kb_gw_json_response(const char *s, size_t len,
					 enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *resp =
		MHD_create_response_from_buffer(len, (void *)s, mode);

	if (resp)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
					"application/json");
	return resp;
}

static void queue(struct kb_gw_req *r, int status, struct MHD_Response *resp)
{
	if (r->status) /* one response per request */
		return;
	if (!resp) {
		r->queued = MHD_NO;
		r->status = 500;
		return;
	}
	r->queued = MHD_queue_response(r->conn, (unsigned)status, resp);
	r->status = status;
}

void kb_gw_reply_response(struct kb_gw_req *r, int status,
			  struct MHD_Response *resp)
{
	queue(r, status, resp);
}

void kb_gw_reply_json(struct kb_gw_req *r, int status, json_t *body)
{
	char *s = body ? json_dumps(body, JSON_COMPACT) : NULL;

	json_decref(body);
	if (!s) {
		kb_gw_reply_error(r, 500, "internal error");
		return;
	}
	struct MHD_Response *resp =
		kb_gw_json_response(s, strlen(s), MHD_RESPMEM_MUST_FREE);
	if (!resp)
		free(s);
	queue(r, status, resp);
	if (resp)
		MHD_destroy_response(resp);
}

static int is_admin_route(enum kb_route_id id)
{
	return strncmp(kb_route_name(id), "admin", 5) == 0;
}

static void reply_error_v(struct kb_gw_req *r, int status, long retry_s,
			  const char *fmt, va_list ap)
{
	char detail[512];
	size_t n;

	if (r->submission && !r->sub_counted && status >= 400) {
		r->sub_counted = 1;
		kb_gw_metrics_submission(status);
	}
	vsnprintf(detail, sizeof(detail), fmt, ap);
	/* Details may quote a client's path segment; JSON needs UTF-8. */
	char *clean = kb_gw_utf8_sanitize(detail, strlen(detail), &n);
	json_t *o = json_object();
	json_object_set_new(o, "detail",
			    json_stringn(clean ? clean : "error",
					 clean ? n : 5));
	free(clean);
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!s) {
		queue(r, status, NULL);
		return;
	}
	struct MHD_Response *resp =
		kb_gw_json_response(s, strlen(s), MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(s);
	} else {
		if (status == 405 && r->route.allow)
			MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW,
						r->route.allow);
		if (status == 401 && is_admin_route(r->route.id))
			MHD_add_response_header(
				resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
				"Bearer");
		if (retry_s > 0) {
			char v[32];
			snprintf(v, sizeof(v), "%ld", retry_s);
			MHD_add_response_header(resp,
						MHD_HTTP_HEADER_RETRY_AFTER, v);
		}
	}
	queue(r, status, resp);
	if (resp)
		MHD_destroy_response(resp);
}

void kb_gw_reply_error(struct kb_gw_req *r, int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	reply_error_v(r, status, 0, fmt, ap);
	va_end(ap);
}

void kb_gw_reply_error_retry(struct kb_gw_req *r, int status, long retry_s,
			     const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	reply_error_v(r, status, retry_s, fmt, ap);
	va_end(ap);
}

void kb_gw_response_destroy(void *resp)
{
	if (resp)
		MHD_destroy_response(resp);
}

void kb_gw_reply_health(struct kb_gw_req *r)
{
	queue(r, 200, r->http->health);
}

void kb_gw_reply_shared(struct kb_gw_req *r, unsigned slot, unsigned gen,
			char *(*render)(void *ctx), void *ctx)
{
	struct kb_gw_http *h = r->http;

	if (slot >= KB_GW_SHARED_MAX) {
		kb_gw_reply_error(r, 500, "internal error");
		return;
	}
	pthread_mutex_lock(&h->shared_mu);
	if (!h->shared_resp[slot] || h->shared_gen[slot] != gen) {
		char *body = render(ctx);
		struct MHD_Response *resp =
			body ? kb_gw_json_response(body, strlen(body),
						   MHD_RESPMEM_MUST_FREE)
			     : NULL;
		if (resp) {
			if (h->shared_resp[slot])
				MHD_destroy_response(h->shared_resp[slot]);
			h->shared_resp[slot] = resp;
			h->shared_gen[slot] = gen;
		} else {
			free(body);
		}
	}
	if (h->shared_resp[slot])
		queue(r, 200, h->shared_resp[slot]);
	pthread_mutex_unlock(&h->shared_mu);
	if (!r->status)
		kb_gw_reply_error(r, 500, "internal error");
}

const char *kb_gw_header(struct kb_gw_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const char *kb_gw_query(struct kb_gw_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND,
					   name);
}

static void copy_for_log(char *dst, size_t size, const char *src)
{
	size_t i = 0;

	for (; src && src[i] && i + 1 < size; i++) {
		unsigned char c = (unsigned char)src[i];
		dst[i] = (c < 0x21 || c >= 0x7f || c == '"' || c == '\\')
				 ? '?'
				 : (char)c;
	}
	dst[i] = '\0';
}

static struct kb_gw_req *req_new(struct kb_gw_http *h,
				 struct MHD_Connection *conn,
				 const char *method, const char *url)
{
	struct kb_gw_req *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->g = h->g;
	r->http = h;
	r->conn = conn;
	r->t0 = kb_mono_s();
	copy_for_log(r->method, sizeof(r->method), method);
	copy_for_log(r->path, sizeof(r->path), url);
	atomic_fetch_add(&h->g->inflight, 1);
	return r;
}

struct header_sum {
	size_t total;
};

static enum MHD_Result sum_headers(void *cls, enum MHD_ValueKind kind,
				   const char *key, const char *value)
{
	struct header_sum *s = cls;

	(void)kind;
	s->total += (key ? strlen(key) : 0) + (value ? strlen(value) : 0) + 4;
	return MHD_YES;
}

struct query_check {
	enum kb_route_id id;
	int found;
	char bad[96];
};

static enum MHD_Result check_query(void *cls, enum MHD_ValueKind kind,
				   const char *key, const char *value)
{
	struct query_check *q = cls;

	(void)kind;
	(void)value;
	if (kb_route_query_ok(q->id, key))
		return MHD_YES;
	q->found = 1;
	snprintf(q->bad, sizeof(q->bad), "%s", key ? key : "");
	return MHD_NO;
}

static void no_handler(struct kb_gw_req *r)
{
	kb_gw_reply_error(r, 500, "internal error");
}

/* The route's handler; one that is missing answers 500 (a table bug: the
 * router matched a route nobody serves). */
static const struct kb_gw_handler *handler_of(const struct kb_gw_req *r)
{
	static const struct kb_gw_handler none = {no_handler, no_handler};

	if ((size_t)r->route.id >= KB_ROUTE_COUNT ||
	    !r->http->routes[r->route.id].begin)
		return &none;
	return &r->http->routes[r->route.id];
}

/* Rewrites the route's board and gpu parameters (kb_route_param_kinds) to
 * their canonical spelling where they name one; others stay as sent. */
static void canon_route(const struct kb_gw *g, struct kb_route *route)
{
	const char *kinds = kb_route_param_kinds(route->id);
	const struct kb_gw_lb *lb = NULL;

	for (size_t i = 0; kinds[i] && i < route->nparams; i++) {
		const char *canon = NULL;
		if (kinds[i] == 'l')
			canon = (lb = kb_gw_lb_find(g, route->params[i]))
					? lb->task->name
					: NULL;
		else if (kinds[i] == 'g')
			canon = lb ? kb_gw_lb_gpu(lb, route->params[i])
				   : kb_gw_gpu_canon(g, route->params[i]);
		if (canon && strlen(canon) < KB_ROUTE_PARAM_MAX)
			snprintf(route->params[i], KB_ROUTE_PARAM_MAX, "%s",
				 canon);
	}
}

static void begin(struct kb_gw_req *r, const char *method, const char *url)
{
	struct header_sum hs = {0};
	int rc;

	if (strlen(url) > URL_MAX) {
		kb_gw_reply_error(r, 414, "URI too long");
		return;
	}
	MHD_get_connection_values(r->conn, MHD_HEADER_KIND, sum_headers, &hs);
	if (hs.total > (size_t)r->g->cfg.headers_max) {
		kb_gw_reply_error(r, 431,
				  "request header fields too large (limit %ld "
				  "bytes)",
				  r->g->cfg.headers_max);
		return;
	}
	rc = kb_route_match(method, url, &r->route);
	if (rc == 404) {
		kb_gw_reply_error(r, 404, "Not Found");
		return;
	}
	if (rc == 405) {
		kb_gw_reply_error(r, 405, "Method Not Allowed");
		return;
	}
	canon_route(r->g, &r->route);
	struct query_check q = {.id = r->route.id};
	MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, check_query,
				  &q);
	if (q.found) {
		kb_gw_reply_error(r, 400, "unknown query parameter '%s'",
				  q.bad);
		return;
	}
	handler_of(r)->begin(r);
	if (!r->status && r->body == KB_GW_BODY_NONE &&
	    !atomic_load(&r->defer_state))
		kb_gw_reply_error(r, 500, "internal error"); /* a handler bug */
}

static void defer_job(void *arg)
{
	struct kb_gw_req *r = arg;

	r->defer_work(r);
	atomic_store(&r->defer_state, 2);
	/* The connection was suspended before this job was queued. */
	MHD_resume_connection(r->conn);
}

static void defer_refused(struct kb_gw_req *r)
{
	kb_gw_reply_error(r, 503, "the gateway is shutting down, retry later");
}

static void defer_busy(struct kb_gw_req *r)
{
	kb_gw_reply_error_retry(r, 503, 5,
				"too many requests of this kind in "
				"progress, retry later");
}

void kb_gw_defer_to(struct kb_gw_req *r, struct kb_gw_pool *pool,
		    void (*work)(struct kb_gw_req *r),
		    void (*done)(struct kb_gw_req *r))
{
	int rc;

	r->defer_work = work;
	r->defer_done = done;
	atomic_store(&r->defer_state, 1);
	MHD_suspend_connection(r->conn);
	rc = kb_gw_pool_run(pool, defer_job, r);
	if (rc != 0) {
		r->defer_done = rc == -EAGAIN ? defer_busy : defer_refused;
		atomic_store(&r->defer_state, 2);
		MHD_resume_connection(r->conn);
	}
}

void kb_gw_defer(struct kb_gw_req *r, void (*work)(struct kb_gw_req *r),
		 void (*done)(struct kb_gw_req *r))
{
	kb_gw_defer_to(r, r->g->pool, work, done);
}

void kb_gw_client_addr(struct kb_gw_req *r, char *out, size_t out_size)
{
	const char *hdr =
		*r->g->cfg.http_client_ip_header
			? kb_gw_header(r, r->g->cfg.http_client_ip_header)
			: NULL;
	const union MHD_ConnectionInfo *ci;
	struct in6_addr a6;
	struct in_addr a4;

	snprintf(out, out_size, "unknown");
	if (hdr) {
		/* The proxy's own header: one address, trimmed. */
		char buf[INET6_ADDRSTRLEN + 1];
		size_t n;
		hdr += strspn(hdr, " \t");
		n = strcspn(hdr, " \t,");
		if (n >= sizeof(buf))
			return;
		memcpy(buf, hdr, n);
		buf[n] = '\0';
		if (inet_pton(AF_INET, buf, &a4) == 1)
			inet_ntop(AF_INET, &a4, out, (socklen_t)out_size);
		else if (inet_pton(AF_INET6, buf, &a6) == 1)
			goto v6;
		return;
	}
	ci = MHD_get_connection_info(r->conn,
				     MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (!ci || !ci->client_addr)
		return;
	if (ci->client_addr->sa_family == AF_INET) {
		a4 = ((const struct sockaddr_in *)ci->client_addr)->sin_addr;
		inet_ntop(AF_INET, &a4, out, (socklen_t)out_size);
		return;
	}
	if (ci->client_addr->sa_family != AF_INET6)
		return;
	a6 = ((const struct sockaddr_in6 *)ci->client_addr)->sin6_addr;
v6:
	if (IN6_IS_ADDR_V4MAPPED(&a6)) {
		memcpy(&a4, &a6.s6_addr[12], 4);
		inet_ntop(AF_INET, &a4, out, (socklen_t)out_size);
		return;
	}
	memset(&a6.s6_addr[8], 0, 8);
	inet_ntop(AF_INET6, &a6, out, (socklen_t)out_size);
}

/* Takes one piece of the body. Returns MHD_NO to close the connection. */
static enum MHD_Result body_piece(struct kb_gw_req *r, const char *data,
				  size_t n)
{
	r->received += n;
	if (r->body_status)
		return r->received > r->body_cap + DRAIN_MAX ? MHD_NO : MHD_YES;
	if (r->received > r->body_cap) {
		r->body_status = 413;
		snprintf(r->body_why, sizeof(r->body_why),
			 "request body too large");
		return MHD_YES;
	}
	if (r->body == KB_GW_BODY_MULTIPART) {
		int rc = kb_multipart_feed(r->mp, data, n);
		if (rc == -EFBIG) {
			r->body_status = 413;
			snprintf(r->body_why, sizeof(r->body_why),
				 "file too large (limit %ld bytes)",
				 r->g->cfg.max_file_bytes);
		} else if (rc == -ENOMEM) {
			r->body_status = 500;
			snprintf(r->body_why, sizeof(r->body_why),
				 "out of memory");
		} else if (rc < 0) {
			r->body_status = 400;
			snprintf(r->body_why, sizeof(r->body_why),
				 "malformed multipart body: %s",
				 kb_multipart_error(r->mp));
		}
		return MHD_YES;
	}
	/* JSON: body_cap is small, so the buffer stays small. */
	char *j = realloc(r->json, r->json_len + n + 1);
	if (!j) {
		r->body_status = 500;
		snprintf(r->body_why, sizeof(r->body_why), "out of memory");
		return MHD_YES;
	}
	memcpy(j + r->json_len, data, n);
	r->json = j;
	r->json_len += n;
	r->json[r->json_len] = '\0';
	return MHD_YES;
}

/* 1 when the request announces a body (a Content-Length above 0, or a
 * Transfer-Encoding). */
static int has_body(struct MHD_Connection *conn)
{
	const char *cl = MHD_lookup_connection_value(
		conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	const char *te = MHD_lookup_connection_value(
		conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);

	if (te)
		return 1;
	if (!cl)
		return 0;
	while (*cl == ' ' || *cl == '\t' || *cl == '0')
		cl++;
	return *cl != '\0';
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
				  const char *url, const char *method,
				  const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	struct kb_gw_http *h = cls;
	struct kb_gw_req *r = *con_cls;

	(void)version;
	if (!r) {
		r = req_new(h, conn, method, url);
		if (!r)
			return MHD_NO;
		*con_cls = r;
		/* libmicrohttpd treats a response queued in this first call as
		 * an early answer to an upload and closes the connection after
		 * it. That is right for refusing a body (413 before reading it),
		 * but a request without a body is answered on the next call, so
		 * keep-alive connections stay open. */
		if (!has_body(conn)) {
			r->begin_later = 1;
			return MHD_YES;
		}
		begin(r, method, url);
		return r->status ? r->queued : MHD_YES; /* deferred: not yet */
	}
	if (r->begin_later) {
		r->begin_later = 0;
		begin(r, method, url);
		if (r->status)
			return r->queued;
		if (atomic_load(&r->defer_state))
			return MHD_YES;
	}
	switch (atomic_load(&r->defer_state)) {
	case 1: /* not resumed yet (should not be called): wait */
		*upload_data_size = 0;
		return MHD_YES;
	case 2:
		atomic_store(&r->defer_state, 0);
		r->defer_done(r);
		if (!r->status)
			kb_gw_reply_error(r, 500, "internal error");
		return r->queued;
	default:
		break;
	}
	if (r->status) { /* answered already; nothing more to read */
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (*upload_data_size) {
		size_t n = *upload_data_size;
		*upload_data_size = 0;
		return body_piece(r, upload_data, n);
	}
	const struct kb_gw_handler *hd = handler_of(r);
	if (r->body_status)
		kb_gw_reply_error(r, r->body_status, "%s", r->body_why);
	else if (hd->finish)
		hd->finish(r);
	if (atomic_load(&r->defer_state))
		return MHD_YES; /* answered by its done() after the pool */
	if (!r->status)
		kb_gw_reply_error(r, 500, "internal error");
	return r->queued;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct kb_gw_http *h = cls;
	struct kb_gw_req *r = *con_cls;
	char sub[48] = "";

	(void)conn;
	if (!r)
		return;
	kb_gw_metrics_request(r->route.id, r->status, kb_mono_s() - r->t0);
	if (r->sub_id)
		snprintf(sub, sizeof(sub), " sub=%" PRIu64, r->sub_id);
	kb_info("method=%s path=%s status=%d ms=%.2f%s%s", r->method, r->path,
		r->status, (kb_mono_s() - r->t0) * 1e3, sub,
		toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " aborted=1");
	if (r->pending && r->pending_free)
		r->pending_free(r->pending);
	if (r->slot_key[0])
		kb_gw_limiter_release(r->slot, r->slot_key);
	kb_multipart_destroy(r->mp);
	free(r->json);
	free(r);
	*con_cls = NULL;
	atomic_fetch_sub(&h->g->inflight, 1);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];
	size_t n;

	(void)cls;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	kb_warn("libmicrohttpd: %s", msg);
}

/* Once closing, a new connection is closed as soon as it is accepted.
 * MHD_quiesce_daemon() is not used: with epoll and a thread pool it races
 * the workers' own removal of the listening socket and can abort the
 * process (an open libmicrohttpd defect). */
static enum MHD_Result accept_policy(void *cls, const struct sockaddr *addr,
				     socklen_t addrlen)
{
	struct kb_gw_http *h = cls;

	(void)addr;
	(void)addrlen;
	return atomic_load(&h->closing) ? MHD_NO : MHD_YES;
}

struct kb_gw_http *kb_gw_http_bind(struct kb_gw *g,
				   const struct kb_gw_handler *routes,
				   char *errstr, size_t errstr_size)
{
	struct kb_gw_http *h = calloc(1, sizeof(*h));
	struct sockaddr_storage ss;
	socklen_t len;
	int one = 1;

	if (!h) {
		snprintf(errstr, errstr_size, "out of memory");
		return NULL;
	}
	h->g = g;
	h->routes = routes;
	h->fd = -1;
	pthread_mutex_init(&h->shared_mu, NULL);
	memset(&ss, 0, sizeof(ss));
	struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
	if (inet_pton(AF_INET, g->cfg.http_addr, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons((uint16_t)g->cfg.http_port);
		len = sizeof(*in4);
	} else if (inet_pton(AF_INET6, g->cfg.http_addr, &in6->sin6_addr) ==
		   1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)g->cfg.http_port);
		len = sizeof(*in6);
	} else {
		snprintf(errstr, errstr_size,
			 "KB_HTTP_ADDR '%s' is not an IPv4 or IPv6 address",
			 g->cfg.http_addr);
		kb_gw_http_stop(h);
		return NULL;
	}
	/* As libmicrohttpd binds its own: address reuse on, IPv6 only. */
	h->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		       0);
	if (h->fd < 0 ||
	    setsockopt(h->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) <
		    0 ||
	    (ss.ss_family == AF_INET6 &&
	     setsockopt(h->fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) <
		     0) ||
	    bind(h->fd, (struct sockaddr *)&ss, len) < 0 ||
	    getsockname(h->fd, (struct sockaddr *)&ss, &len) < 0) {
		snprintf(errstr, errstr_size, "cannot listen on %s:%ld: %s",
			 g->cfg.http_addr, g->cfg.http_port, strerror(errno));
		kb_gw_http_stop(h);
		return NULL;
	}
	g->cfg.http_port =
		ntohs(ss.ss_family == AF_INET ? in4->sin_port : in6->sin6_port);
	return h;
}

int kb_gw_http_start(struct kb_gw_http *h, char *errstr, size_t errstr_size)
{
	static const char health[] = "{\"status\":\"ok\"}";
	struct kb_gw *g = h->g;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
			 MHD_USE_ITC | MHD_USE_ERROR_LOG |
			 MHD_ALLOW_SUSPEND_RESUME;

	h->health = kb_gw_json_response(health, sizeof(health) - 1,
					MHD_RESPMEM_PERSISTENT);
	if (!h->health) {
		snprintf(errstr, errstr_size, "out of memory");
		return -1;
	}
	if (listen(h->fd, 1024) < 0) {
		snprintf(errstr, errstr_size, "cannot listen on %s:%ld: %s",
			 g->cfg.http_addr, g->cfg.http_port, strerror(errno));
		return -1;
	}
	h->daemon = MHD_start_daemon(
		flags, 0, accept_policy, h, on_request, h,
		MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
		MHD_OPTION_LISTEN_SOCKET, (MHD_socket)h->fd,
		MHD_OPTION_THREAD_POOL_SIZE, (unsigned)g->cfg.http_threads,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT,
		(size_t)g->cfg.http_conn_memory, MHD_OPTION_CONNECTION_LIMIT,
		(unsigned)g->cfg.http_max_connections,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT,
		(unsigned)g->cfg.http_per_ip_connections, MHD_OPTION_END);
	if (!h->daemon) {
		snprintf(errstr, errstr_size, "cannot serve on %s:%ld: %s",
			 g->cfg.http_addr, g->cfg.http_port, strerror(errno));
		return -1;
	}
	h->fd = -1; /* the daemon's now: closed by MHD_stop_daemon */
	return 0;
}

void kb_gw_http_quiesce(struct kb_gw_http *h)
{
	if (h)
		atomic_store(&h->closing, 1);
}

void kb_gw_http_stop(struct kb_gw_http *h)
{
	if (!h)
		return;
	if (h->daemon)
		MHD_stop_daemon(h->daemon);
	if (h->fd >= 0)
		close(h->fd);
	if (h->health)
		MHD_destroy_response(h->health);
	for (int i = 0; i < KB_GW_SHARED_MAX; i++)
		if (h->shared_resp[i])
			MHD_destroy_response(h->shared_resp[i]);
	pthread_mutex_destroy(&h->shared_mu);
	free(h);
}
