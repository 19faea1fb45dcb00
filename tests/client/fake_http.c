/* fake_http: see fake_http.h. */
#include "fake_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <check.h>

#define MAX_REQS 64
#define HEAD_MAX 16384
#define BODY_MAX (4u << 20)

struct fake_server {
	int lfd, port;
	int stop_pipe[2];
	pthread_t thread;
	pthread_mutex_t mu;
	const struct fake_route *routes;
	size_t nroutes;
	int calls[32];
	struct fake_req reqs[MAX_REQS];
	size_t nreqs;
};

void fake_pause_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

void fake_write(int fd, const char *s)
{
	size_t n = strlen(s);
	while (n > 0) {
		ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return; /* the client went away: fine for a test server */
		}
		s += w;
		n -= (size_t)w;
	}
}

static const char *reason(int status)
{
	switch (status) {
	case 200:
		return "OK";
	case 202:
		return "Accepted";
	case 400:
		return "Bad Request";
	case 401:
		return "Unauthorized";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 500:
		return "Internal Server Error";
	case 503:
		return "Service Unavailable";
	default:
		return "Status";
	}
}

void fake_reply(int fd, int status, const char *content_type, const char *body)
{
	char head[512];

	snprintf(head, sizeof(head),
		 "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		 "Connection: close\r\n\r\n",
		 status, reason(status), content_type, strlen(body));
	fake_write(fd, head);
	fake_write(fd, body);
}

void fake_sse_begin(int fd)
{
	fake_write(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; "
		       "charset=utf-8\r\nCache-Control: no-cache\r\n"
		       "Connection: close\r\n\r\n");
}

/* Reads one request from fd into *rq. Returns 0 or -1. */
static int read_request(int fd, struct fake_req *rq)
{
	char head[HEAD_MAX + 1];
	size_t got = 0, clen = 0;
	char *end = NULL, *line, *save;

	memset(rq, 0, sizeof(*rq));
	while (!end) {
		if (got == HEAD_MAX)
			return -1;
		ssize_t n = recv(fd, head + got, HEAD_MAX - got, 0);
		if (n <= 0)
			return -1;
		got += (size_t)n;
		head[got] = '\0';
		end = strstr(head, "\r\n\r\n");
	}
	size_t head_len = (size_t)(end - head) + 4;
	size_t extra = got - head_len;
	*end = '\0';

	line = strtok_r(head, "\r\n", &save);
	char target[sizeof(rq->path)] = "";
	if (!line || sscanf(line, "%15s %511s", rq->method, target) != 2)
		return -1;
	char *q = strchr(target, '?');
	if (q) {
		*q = '\0';
		snprintf(rq->query, sizeof(rq->query), "%s", q + 1);
	}
	snprintf(rq->path, sizeof(rq->path), "%s", target);
	int expect = 0;
	while ((line = strtok_r(NULL, "\r\n", &save))) {
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		*colon = '\0';
		char *v = colon + 1;
		while (*v == ' ')
			v++;
		if (strcasecmp(line, "Content-Length") == 0)
			clen = strtoul(v, NULL, 10);
		else if (strcasecmp(line, "X-Popcorn-Cli-Id") == 0)
			snprintf(rq->cli_id, sizeof(rq->cli_id), "%s", v);
		else if (strcasecmp(line, "Content-Type") == 0)
			snprintf(rq->content_type, sizeof(rq->content_type),
				 "%s", v);
		else if (strcasecmp(line, "Expect") == 0 &&
			 strcasestr(v, "100-continue"))
			expect = 1;
	}
	if (clen > BODY_MAX)
		return -1;
	rq->body = malloc(clen + 1);
	if (!rq->body)
		return -1;
	if (extra > clen)
		extra = clen;
	memcpy(rq->body, head + head_len, extra);
	if (expect && extra < clen)
		fake_write(fd, "HTTP/1.1 100 Continue\r\n\r\n");
	while (extra < clen) {
		ssize_t n = recv(fd, rq->body + extra, clen - extra, 0);
		if (n <= 0)
			return -1;
		extra += (size_t)n;
	}
	rq->body[clen] = '\0';
	rq->body_len = clen;
	return 0;
}

static void serve(struct fake_server *s, int fd)
{
	struct fake_req rq;
	size_t i;

	if (read_request(fd, &rq) < 0) {
		free(rq.body);
		return;
	}
	pthread_mutex_lock(&s->mu);
	if (s->nreqs < MAX_REQS)
		s->reqs[s->nreqs++] = rq;
	else
		free(rq.body);
	pthread_mutex_unlock(&s->mu);
	for (i = 0; i < s->nroutes; i++) {
		const struct fake_route *r = &s->routes[i];
		if (strcmp(r->method, rq.method) == 0 &&
		    strcmp(r->path, rq.path) == 0) {
			int calls = i < 32 ? s->calls[i]++ : 0;
			r->fn(fd, &rq, calls, r->arg);
			return;
		}
	}
	fake_reply(fd, 404, "application/json", "{\"detail\":\"Not Found\"}");
}

static void *loop(void *arg)
{
	struct fake_server *s = arg;

	for (;;) {
		struct pollfd p[2] = {{s->lfd, POLLIN, 0},
				      {s->stop_pipe[0], POLLIN, 0}};
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents)
			break;
		int fd = accept(s->lfd, NULL, NULL);
		if (fd < 0)
			continue;
		serve(s, fd);
		shutdown(fd, SHUT_WR);
		close(fd);
	}
	return NULL;
}

struct fake_server *fake_start(const struct fake_route *routes, size_t n)
{
	struct fake_server *s = calloc(1, sizeof(*s));
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t alen = sizeof(a);
	int one = 1;

	ck_assert_ptr_nonnull(s);
	s->routes = routes;
	s->nroutes = n;
	pthread_mutex_init(&s->mu, NULL);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(s->lfd, 0);
	setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	ck_assert_int_eq(bind(s->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(s->lfd, 16), 0);
	ck_assert_int_eq(getsockname(s->lfd, (struct sockaddr *)&a, &alen), 0);
	s->port = ntohs(a.sin_port);
	ck_assert_int_eq(pipe2(s->stop_pipe, O_CLOEXEC), 0);
	ck_assert_int_eq(pthread_create(&s->thread, NULL, loop, s), 0);
	return s;
}

int fake_port(const struct fake_server *s)
{
	return s->port;
}

void fake_stop(struct fake_server *s)
{
	if (!s)
		return;
	ck_assert_int_eq(write(s->stop_pipe[1], "x", 1), 1);
	pthread_join(s->thread, NULL);
	close(s->lfd);
	close(s->stop_pipe[0]);
	close(s->stop_pipe[1]);
	for (size_t i = 0; i < s->nreqs; i++)
		free(s->reqs[i].body);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

size_t fake_nreq(struct fake_server *s)
{
	size_t n;

	pthread_mutex_lock(&s->mu);
	n = s->nreqs;
	pthread_mutex_unlock(&s->mu);
	return n;
}

const struct fake_req *fake_req_at(struct fake_server *s, size_t i)
{
	const struct fake_req *r;

	pthread_mutex_lock(&s->mu);
	r = i < s->nreqs ? &s->reqs[i] : NULL;
	pthread_mutex_unlock(&s->mu);
	return r;
}
