/* fake_http: a tiny HTTP/1.1 server on a loopback port, for testing kb.
 *
 * It runs in a thread of the test process, serves one connection at a
 * time (kb makes one request at a time), answers each request through a
 * route table and closes the connection afterwards. Every request is
 * logged so a test can check what kb sent. A handler writes the whole
 * response itself, so it can stream server-sent events in pieces and with
 * pauses, as a real server's network writes arrive.
 *
 * Test code only: errors abort the test (Check's ck_abort).
 */
#ifndef FAKE_HTTP_H
#define FAKE_HTTP_H

#include <stddef.h>

struct fake_req {
	char method[16];
	char path[512];   /* without the query */
	char query[512];  /* after '?', or "" */
	char cli_id[256]; /* X-Popcorn-Cli-Id, or "" */
	char content_type[256];
	char *body; /* NUL-terminated */
	size_t body_len;
};

/* Writes the response to fd. calls counts this route's earlier calls. */
typedef void (*fake_handler)(int fd, const struct fake_req *rq, int calls,
			     void *arg);

struct fake_route {
	const char *method;
	const char *path; /* exact path, without query */
	fake_handler fn;
	void *arg;
};

struct fake_server;

/* Starts serving routes[0..n) (the array must outlive the server). An
 * unmatched request gets 404 {"detail":"Not Found"}, as FastAPI answers. */
struct fake_server *fake_start(const struct fake_route *routes, size_t n);
int fake_port(const struct fake_server *s);
void fake_stop(struct fake_server *s);

/* The requests so far; the pointer stays valid until fake_stop. */
size_t fake_nreq(struct fake_server *s);
const struct fake_req *fake_req_at(struct fake_server *s, size_t i);

/* Response helpers. */
void fake_write(int fd, const char *s);
void fake_reply(int fd, int status, const char *content_type, const char *body);
void fake_sse_begin(int fd);
void fake_pause_ms(int ms);

#endif
