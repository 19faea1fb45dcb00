#include "fake_discord.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http/multipart.h"
#include "kb_util.h"

#define CALLS_MAX 4096
#define RULES_MAX 32
#define SERVED_MAX 16

struct rule {
	char method[8];
	char prefix[512];
	int status;
	char *body;
	char headers[512];
	int times;
};

struct served {
	char path[512];
	char *data;
	size_t len;
};

struct fake_discord {
	struct MHD_Daemon *d;
	char url[64];
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct fd_call *calls[CALLS_MAX];
	size_t ncalls;
	struct rule rules[RULES_MAX];
	size_t nrules;
	struct served served[SERVED_MAX];
	size_t nserved;
	unsigned long next_id;
};

struct conn {
	struct kb_buf body;
};

static char *dupn(const char *s, size_t n)
{
	char *d = malloc(n + 1);

	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

/* Splits a multipart body into payload_json and files[i]. */
static void split_multipart(struct fd_call *c, const char *content_type)
{
	char boundary[KB_MULTIPART_BOUNDARY_MAX + 1];

	if (!content_type || kb_multipart_boundary(content_type, boundary,
						   sizeof(boundary)) != 0)
		return;
	for (int i = -1; i < FD_FILES_MAX; i++) {
		char field[32];
		size_t len;
		if (i < 0)
			snprintf(field, sizeof(field), "payload_json");
		else
			snprintf(field, sizeof(field), "files[%d]", i);
		kb_multipart *mp = kb_multipart_new(boundary, field, 64u << 20);
		if (!mp)
			return;
		if (kb_multipart_feed(mp, c->body, c->len) == 0 &&
		    kb_multipart_finish(mp) == 0 && kb_multipart_found(mp)) {
			const char *data = kb_multipart_data(mp, &len);
			if (i < 0) {
				free(c->payload);
				c->payload = dupn(data, len);
			} else {
				const char *fn = kb_multipart_filename(mp);
				snprintf(c->file_name[c->nfiles],
					 sizeof(c->file_name[0]), "%s",
					 fn ? fn : "");
				c->file[c->nfiles] = dupn(data, len);
				c->file_len[c->nfiles] = len;
				c->nfiles++;
			}
		}
		kb_multipart_destroy(mp);
	}
}

static enum MHD_Result answer(struct MHD_Connection *conn, int status,
			      const char *body, const struct rule *r)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(
		strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result rc;

	MHD_add_response_header(resp, "Content-Type", "application/json");
	for (const char *h = r ? r->headers : ""; *h;) {
		size_t n = strcspn(h, "\n");
		char line[256];
		snprintf(line, sizeof(line), "%.*s", (int)n, h);
		char *colon = strchr(line, ':');
		if (colon) {
			*colon = '\0';
			MHD_add_response_header(
				resp, line, colon + 1 + strspn(colon + 1, " "));
		}
		h += n + (h[n] == '\n');
	}
	rc = MHD_queue_response(conn, (unsigned)status, resp);
	MHD_destroy_response(resp);
	return rc;
}

static int starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
				  const char *url, const char *method,
				  const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct fake_discord *fd = cls;
	struct conn *cc = *con_cls;

	if (!cc) {
		cc = calloc(1, sizeof(*cc));
		kb_buf_append(&cc->body, "", 0);
		*con_cls = cc;
		return MHD_YES;
	}
	if (*upload_size) {
		kb_buf_append(&cc->body, upload, *upload_size);
		*upload_size = 0;
		return MHD_YES;
	}
	struct fd_call *c = calloc(1, sizeof(*c));
	const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						       "Authorization");
	const char *ctype = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							"Content-Type");
	snprintf(c->method, sizeof(c->method), "%s", method);
	snprintf(c->path, sizeof(c->path), "%s", url);
	snprintf(c->auth, sizeof(c->auth), "%s", auth ? auth : "");
	c->body = dupn(cc->body.data ? cc->body.data : "", cc->body.len);
	c->len = cc->body.len;
	c->at = kb_mono_s();
	if (ctype && starts(ctype, "multipart/"))
		split_multipart(c, ctype);
	else
		c->payload = dupn(c->body, c->len);
	if (!c->payload)
		c->payload = dupn("", 0);

	int status = 404;
	char *body = NULL;
	const struct served *sv = NULL;
	struct rule rule_copy, *rule = NULL;

	pthread_mutex_lock(&fd->mu);
	for (size_t i = 0; i < fd->nrules; i++) {
		struct rule *r = &fd->rules[i];
		if (r->times > 0 &&
		    (!r->method[0] || strcmp(r->method, method) == 0) &&
		    starts(url, r->prefix)) {
			r->times--;
			rule_copy = *r;
			rule_copy.body = strdup(r->body ? r->body : "{}");
			rule = &rule_copy;
			break;
		}
	}
	for (size_t i = 0; !rule && i < fd->nserved; i++)
		if (strcmp(method, "GET") == 0 &&
		    strcmp(fd->served[i].path, url) == 0)
			sv = &fd->served[i];
	unsigned long id = ++fd->next_id;
	if (rule) {
		status = rule->status;
		body = rule->body;
	} else if (sv) {
		status = 200;
	} else if (strcmp(method, "PATCH") == 0 && starts(url, "/webhooks/") &&
		   strstr(url, "/messages/")) {
		status = 200;
	} else if (strcmp(method, "POST") == 0 && starts(url, "/webhooks/")) {
		status = 200;
	} else if (strcmp(method, "POST") == 0 && starts(url, "/channels/")) {
		status = starts(c->auth, "Bot ") ? 200 : 401;
	} else if (strcmp(method, "PUT") == 0 &&
		   starts(url, "/applications/")) {
		status = starts(c->auth, "Bot ") ? 200 : 401;
		if (status == 200)
			body = strdup(c->payload);
	}
	if (!body) {
		if (status == 200 && !sv) {
			if (asprintf(&body, "{\"id\":\"%lu\",\"content\":\"\"}",
				     1000000 + id) < 0)
				body = NULL;
		} else if (!sv) {
			body = strdup("{\"message\":\"Unknown\",\"code\":0}");
		}
	}
	c->status = status;
	if (fd->ncalls < CALLS_MAX)
		fd->calls[fd->ncalls++] = c;
	else
		fd_call_free(c), free(c);
	pthread_cond_broadcast(&fd->cv);
	enum MHD_Result rc;
	if (sv) {
		struct MHD_Response *resp = MHD_create_response_from_buffer(
			sv->len, sv->data, MHD_RESPMEM_MUST_COPY);
		rc = MHD_queue_response(conn, 200, resp);
		MHD_destroy_response(resp);
		pthread_mutex_unlock(&fd->mu);
	} else {
		pthread_mutex_unlock(&fd->mu);
		rc = answer(conn, status, body ? body : "{}", rule);
	}
	free(body);
	return rc;
}

static void on_done(void *cls, struct MHD_Connection *conn, void **con_cls,
		    enum MHD_RequestTerminationCode toe)
{
	struct conn *cc = *con_cls;

	if (cc) {
		kb_buf_free(&cc->body);
		free(cc);
		*con_cls = NULL;
	}
}

struct fake_discord *fd_start(void)
{
	struct fake_discord *fd = calloc(1, sizeof(*fd));
	struct sockaddr_in a = {.sin_family = AF_INET};

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&fd->mu, NULL);
	pthread_cond_init(&fd->cv, &ca);
	pthread_condattr_destroy(&ca);
	fd->d = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION,
		0, NULL, NULL, on_request, fd, MHD_OPTION_SOCK_ADDR,
		(struct sockaddr *)&a, MHD_OPTION_NOTIFY_COMPLETED, on_done, fd,
		MHD_OPTION_END);
	if (!fd->d) {
		free(fd);
		return NULL;
	}
	const union MHD_DaemonInfo *info =
		MHD_get_daemon_info(fd->d, MHD_DAEMON_INFO_BIND_PORT);
	snprintf(fd->url, sizeof(fd->url), "http://127.0.0.1:%u",
		 (unsigned)info->port);
	return fd;
}

void fd_stop(struct fake_discord *fd)
{
	if (!fd)
		return;
	MHD_stop_daemon(fd->d);
	for (size_t i = 0; i < fd->ncalls; i++) {
		fd_call_free(fd->calls[i]);
		free(fd->calls[i]);
	}
	for (size_t i = 0; i < fd->nrules; i++)
		free(fd->rules[i].body);
	for (size_t i = 0; i < fd->nserved; i++)
		free(fd->served[i].data);
	free(fd);
}

const char *fd_url(const struct fake_discord *fd)
{
	return fd->url;
}

void fd_serve(struct fake_discord *fd, const char *path, const void *data,
	      size_t len)
{
	pthread_mutex_lock(&fd->mu);
	if (fd->nserved < SERVED_MAX) {
		struct served *s = &fd->served[fd->nserved++];
		snprintf(s->path, sizeof(s->path), "%s", path);
		s->data = malloc(len ? len : 1);
		memcpy(s->data, data, len);
		s->len = len;
	}
	pthread_mutex_unlock(&fd->mu);
}

void fd_rule(struct fake_discord *fd, const char *method, const char *prefix,
	     int status, const char *body, const char *headers, int times)
{
	pthread_mutex_lock(&fd->mu);
	if (fd->nrules < RULES_MAX) {
		struct rule *r = &fd->rules[fd->nrules++];
		snprintf(r->method, sizeof(r->method), "%s",
			 method ? method : "");
		snprintf(r->prefix, sizeof(r->prefix), "%s", prefix);
		r->status = status;
		r->body = body ? strdup(body) : NULL;
		snprintf(r->headers, sizeof(r->headers), "%s",
			 headers ? headers : "");
		r->times = times;
	}
	pthread_mutex_unlock(&fd->mu);
}

size_t fd_ncalls(struct fake_discord *fd)
{
	pthread_mutex_lock(&fd->mu);
	size_t n = fd->ncalls;
	pthread_mutex_unlock(&fd->mu);
	return n;
}

static void copy_call(struct fd_call *out, const struct fd_call *c)
{
	*out = *c;
	out->body = dupn(c->body, c->len);
	out->payload = strdup(c->payload);
	for (size_t i = 0; i < c->nfiles; i++)
		out->file[i] = dupn(c->file[i], c->file_len[i]);
}

int fd_get(struct fake_discord *fd, size_t i, struct fd_call *out)
{
	int rc = -1;

	pthread_mutex_lock(&fd->mu);
	if (i < fd->ncalls) {
		copy_call(out, fd->calls[i]);
		rc = 0;
	}
	pthread_mutex_unlock(&fd->mu);
	return rc;
}

void fd_call_free(struct fd_call *c)
{
	free(c->body);
	free(c->payload);
	for (size_t i = 0; i < c->nfiles; i++)
		free(c->file[i]);
	c->body = c->payload = NULL;
	c->nfiles = 0;
}

static size_t count(struct fake_discord *fd, const char *method,
		    const char *needle, const char *text)
{
	size_t n = 0;

	for (size_t i = 0; i < fd->ncalls; i++) {
		const struct fd_call *c = fd->calls[i];
		if ((!method || strcmp(c->method, method) == 0) &&
		    (!needle || strstr(c->path, needle)) &&
		    (!text || strstr(c->payload, text)))
			n++;
	}
	return n;
}

size_t fd_wait(struct fake_discord *fd, const char *method, const char *needle,
	       const char *text, size_t n, int timeout_ms)
{
	struct timespec ts;
	size_t have;

	/* The monotonic clock: a wall-clock step must not end the wait. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&fd->mu);
	while ((have = count(fd, method, needle, text)) < n)
		if (pthread_cond_timedwait(&fd->cv, &fd->mu, &ts) != 0) {
			have = count(fd, method, needle, text);
			break;
		}
	pthread_mutex_unlock(&fd->mu);
	return have;
}

void fd_dump(struct fake_discord *fd)
{
	pthread_mutex_lock(&fd->mu);
	for (size_t i = 0; i < fd->ncalls; i++) {
		const struct fd_call *c = fd->calls[i];
		fprintf(stderr,
			"[%zu] %.3f %s %s -> %d files=%zu payload=%.600s\n", i,
			c->at, c->method, c->path, c->status, c->nfiles,
			c->payload);
	}
	pthread_mutex_unlock(&fd->mu);
}
