/* kb_gw_http: see http.h. */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kb_log.h"
#include "kb_util.h"

/* Bytes of a refused body we still read (and drop) so that the client can
 * read our answer; past this the connection is closed instead. */
#define DRAIN_MAX (4u << 20)

struct kb_gw_http {
	struct kb_gw *g;
	struct MHD_Daemon *daemon;
	struct MHD_Response *health;
	struct MHD_Response *leaderboards;
	struct MHD_Response **gpus; /* parallel to g->lbs */
};

static struct MHD_Response *json_buffer(const char *s, size_t len,
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

void kb_gw_reply_json(struct kb_gw_req *r, int status, json_t *body)
{
	char *s = body ? json_dumps(body, JSON_COMPACT) : NULL;

	json_decref(body);
	if (!s) {
		kb_gw_reply_error(r, 500, "internal error");
		return;
	}
	struct MHD_Response *resp = json_buffer(s, strlen(s), MHD_RESPMEM_MUST_FREE);
	if (!resp)
		free(s);
	queue(r, status, resp);
	if (resp)
		MHD_destroy_response(resp);
}

void kb_gw_reply_error(struct kb_gw_req *r, int status, const char *fmt, ...)
{
	char detail[512];
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	/* Details may quote a client's path segment; JSON needs UTF-8. */
	char *clean = kb_gw_utf8_sanitize(detail, strlen(detail), &n);
	json_t *o = json_object();
	json_object_set_new(o, "detail", json_stringn(clean ? clean : "error",
						      clean ? n : 5));
	free(clean);
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!s) {
		queue(r, status, NULL);
		return;
	}
	struct MHD_Response *resp = json_buffer(s, strlen(s), MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(s);
	} else {
		if (status == 405 && r->route.allow)
			MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW,
						r->route.allow);
		if (status == 401 && r->route.id == KB_ROUTE_ADMIN_USERS)
			MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
						"Bearer");
	}
	queue(r, status, resp);
	if (resp)
		MHD_destroy_response(resp);
}

void kb_gw_reply_cached(struct kb_gw_req *r, const char *which_lb)
{
	struct kb_gw_http *h = r->http;

	if (!which_lb) {
		queue(r, 200, r->route.id == KB_ROUTE_HEALTH ? h->health
							     : h->leaderboards);
		return;
	}
	for (size_t i = 0; i < h->g->nlbs; i++)
		if (strcmp(h->g->lbs[i].task->name, which_lb) == 0) {
			queue(r, 200, h->gpus[i]);
			return;
		}
	kb_gw_reply_error(r, 404, "unknown leaderboard");
}

const char *kb_gw_header(struct kb_gw_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const char *kb_gw_query(struct kb_gw_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

static void copy_for_log(char *dst, size_t size, const char *src)
{
	size_t i = 0;

	for (; src && src[i] && i + 1 < size; i++) {
		unsigned char c = (unsigned char)src[i];
		dst[i] = (c < 0x21 || c == 0x7f || c == '"' || c == '\\') ? '?' : (char)c;
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

static void begin(struct kb_gw_req *r, const char *method, const char *url)
{
	int rc = kb_route_match(method, url, &r->route);

	if (rc == 404) {
		kb_gw_reply_error(r, 404, "Not Found");
		return;
	}
	if (rc == 405) {
		kb_gw_reply_error(r, 405, "Method Not Allowed");
		return;
	}
	kb_gw_handler_for(r->route.id)->begin(r);
	if (!r->status && r->body == KB_GW_BODY_NONE)
		kb_gw_reply_error(r, 500, "internal error"); /* a handler bug */
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
			snprintf(r->body_why, sizeof(r->body_why), "out of memory");
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

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
				  const char *url, const char *method,
				  const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	struct kb_gw_http *h = cls;
	struct kb_gw_req *r = *con_cls;

	if (!r) {
		r = req_new(h, conn, method, url);
		if (!r)
			return MHD_NO;
		*con_cls = r;
		begin(r, method, url);
		return r->status ? r->queued : MHD_YES;
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
	if (r->body_status)
		kb_gw_reply_error(r, r->body_status, "%s", r->body_why);
	else
		kb_gw_handler_for(r->route.id)->finish(r);
	if (!r->status)
		kb_gw_reply_error(r, 500, "internal error");
	return r->queued;
}

static void on_completed(void *cls, struct MHD_Connection *conn,
			 void **con_cls, enum MHD_RequestTerminationCode toe)
{
	struct kb_gw_http *h = cls;
	struct kb_gw_req *r = *con_cls;

	if (!r)
		return;
	kb_info("method=%s path=%s status=%d ms=%.2f%s", r->method, r->path,
		r->status, (kb_mono_s() - r->t0) * 1e3,
		toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " aborted=1");
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

	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	kb_warn("libmicrohttpd: %s", msg);
}

static int make_cached(struct kb_gw_http *h)
{
	static const char health[] = "{\"status\":\"ok\"}";
	struct kb_gw *g = h->g;

	h->health = json_buffer(health, sizeof(health) - 1, MHD_RESPMEM_PERSISTENT);
	h->leaderboards = json_buffer(g->leaderboards_json,
				      strlen(g->leaderboards_json),
				      MHD_RESPMEM_PERSISTENT);
	h->gpus = calloc(g->nlbs ? g->nlbs : 1, sizeof(*h->gpus));
	if (!h->health || !h->leaderboards || !h->gpus)
		return -ENOMEM;
	for (size_t i = 0; i < g->nlbs; i++) {
		h->gpus[i] = json_buffer(g->lbs[i].gpus_json,
					 strlen(g->lbs[i].gpus_json),
					 MHD_RESPMEM_PERSISTENT);
		if (!h->gpus[i])
			return -ENOMEM;
	}
	return 0;
}

struct kb_gw_http *kb_gw_http_start(struct kb_gw *g, char *errstr,
				    size_t errstr_size)
{
	struct kb_gw_http *h = calloc(1, sizeof(*h));
	struct sockaddr_storage ss;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
			 MHD_USE_ITC | MHD_USE_ERROR_LOG;

	if (!h) {
		snprintf(errstr, errstr_size, "out of memory");
		return NULL;
	}
	h->g = g;
	memset(&ss, 0, sizeof(ss));
	struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
	if (inet_pton(AF_INET, g->cfg.http_addr, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons((uint16_t)g->cfg.http_port);
	} else if (inet_pton(AF_INET6, g->cfg.http_addr, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)g->cfg.http_port);
		flags |= MHD_USE_IPv6;
	} else {
		snprintf(errstr, errstr_size,
			 "KB_HTTP_ADDR '%s' is not an IPv4 or IPv6 address",
			 g->cfg.http_addr);
		free(h);
		return NULL;
	}
	if (make_cached(h) < 0) {
		snprintf(errstr, errstr_size, "out of memory");
		kb_gw_http_stop(h);
		return NULL;
	}
	h->daemon = MHD_start_daemon(
		flags, (uint16_t)g->cfg.http_port, NULL, NULL, on_request, h,
		MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
		MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
		MHD_OPTION_THREAD_POOL_SIZE, (unsigned)g->cfg.http_threads,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
		MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)1024,
		MHD_OPTION_END);
	if (!h->daemon) {
		snprintf(errstr, errstr_size, "cannot listen on %s:%ld: %s",
			 g->cfg.http_addr, g->cfg.http_port, strerror(errno));
		kb_gw_http_stop(h);
		return NULL;
	}
	return h;
}

void kb_gw_http_quiesce(struct kb_gw_http *h)
{
	if (!h || !h->daemon)
		return;
	MHD_socket fd = MHD_quiesce_daemon(h->daemon);
	if (fd != MHD_INVALID_SOCKET)
		close(fd);
}

void kb_gw_http_stop(struct kb_gw_http *h)
{
	if (!h)
		return;
	if (h->daemon)
		MHD_stop_daemon(h->daemon);
	if (h->health)
		MHD_destroy_response(h->health);
	if (h->leaderboards)
		MHD_destroy_response(h->leaderboards);
	for (size_t i = 0; h->gpus && i < h->g->nlbs; i++)
		if (h->gpus[i])
			MHD_destroy_response(h->gpus[i]);
	free(h->gpus);
	free(h);
}
