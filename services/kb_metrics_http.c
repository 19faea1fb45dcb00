/* kb_metrics_http: see kb_metrics_http.h. */
#include "kb_metrics_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct kb_metrics_server {
	kb_metrics *m;
	struct MHD_Daemon *d;
};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status,
			     const char *type, char *body, size_t len,
			     enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result rc;

	if (!r) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == 405)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	rc = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return rc;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
				  const char *url, const char *method,
				  const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct kb_metrics_server *s = cls;
	static char notfound[] = "not found\n",
		    badmethod[] = "method not allowed\n", ok[] = "ok\n";

	(void)version;
	(void)upload;
	(void)upload_size;
	/* Answer on the second call, when the (empty) body is known. */
	if (!*con_cls) {
		*con_cls = s;
		return MHD_YES;
	}
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return reply(c, 405, "text/plain", badmethod,
			     sizeof(badmethod) - 1, MHD_RESPMEM_PERSISTENT);
	if (strcmp(url, "/health") == 0)
		return reply(c, 200, "text/plain", ok, sizeof(ok) - 1,
			     MHD_RESPMEM_PERSISTENT);
	if (strcmp(url, "/metrics") != 0)
		return reply(c, 404, "text/plain", notfound,
			     sizeof(notfound) - 1, MHD_RESPMEM_PERSISTENT);
	size_t len = 0;
	char *text = kb_metrics_render(s->m, &len);
	if (!text)
		return MHD_NO;
	return reply(c, 200, KB_METRICS_CONTENT_TYPE, text, len,
		     MHD_RESPMEM_MUST_FREE);
}

kb_metrics_server *kb_metrics_serve(kb_metrics *m, const char *addr, int port,
				    char *errstr, size_t errstr_size)
{
	struct kb_metrics_server *s;
	struct sockaddr_storage ss;
	struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;

	if (!m || port < 1 || port > 65535) {
		snprintf(errstr, errstr_size,
			 "metrics: bad registry or port %d", port);
		return NULL;
	}
	memset(&ss, 0, sizeof(ss));
	if (addr && inet_pton(AF_INET, addr, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons((uint16_t)port);
	} else if (addr && inet_pton(AF_INET6, addr, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		flags |= MHD_USE_IPv6;
	} else {
		snprintf(errstr, errstr_size,
			 "metrics: '%s' is not an IPv4 or IPv6 address",
			 addr ? addr : "");
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(errstr, errstr_size, "out of memory");
		return NULL;
	}
	s->m = m;
	s->d = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, on_request,
				s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)64,
				MHD_OPTION_END);
	if (!s->d) {
		snprintf(errstr, errstr_size,
			 "metrics: cannot listen on %s:%d: %s", addr, port,
			 strerror(errno));
		free(s);
		return NULL;
	}
	return s;
}

void kb_metrics_server_stop(kb_metrics_server *s)
{
	if (!s)
		return;
	MHD_stop_daemon(s->d);
	free(s);
}
