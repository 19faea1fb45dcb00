/* kb_dc_rest: see rest.h. */
#include "rest.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "kb_curl_body.h"
#include "kb_log.h"
#include "kb_util.h"

#define USER_AGENT                                                             \
	"DiscordBot (https://github.com/gpu-mode/kernelbot, 1.0) kb-gateway"
#define WAIT_CAP_S 600.0
#define TRIES_5XX 5
#define TRIES_429 20
#define ROUTES_MAX 128
#define BODY_LOG_MAX 300

/* ---- rate-limit headers ---- */

void kb_dc_rl_init(struct kb_dc_rl *rl)
{
	memset(rl, 0, sizeof(*rl));
	rl->reset_after_s = -1;
	rl->retry_after_s = -1;
}

/* Value of header name in line, trimmed, into val; 1 when it is that one. */
static int header_is(const char *line, size_t len, const char *name, char *val,
		     size_t size)
{
	size_t n = strlen(name);

	if (len <= n || strncasecmp(line, name, n) != 0 || line[n] != ':')
		return 0;
	const char *v = line + n + 1;
	const char *end = line + len;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v &&
	       (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
		end--;
	size_t vn = (size_t)(end - v) < size - 1 ? (size_t)(end - v) : size - 1;
	memcpy(val, v, vn);
	val[vn] = '\0';
	return 1;
}

static int parse_secs(const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || !isfinite(v) || v < 0)
		return -1;
	*out = v;
	return 0;
}

void kb_dc_rl_header(struct kb_dc_rl *rl, const char *line, size_t len)
{
	char v[128];
	double d;

	if (header_is(line, len, "X-RateLimit-Remaining", v, sizeof(v))) {
		char *end;
		long n = strtol(v, &end, 10);
		if (end != v && !*end && n >= 0) {
			rl->has_remaining = 1;
			rl->remaining = n;
		}
	} else if (header_is(line, len, "X-RateLimit-Reset-After", v,
			     sizeof(v))) {
		if (parse_secs(v, &d) == 0)
			rl->reset_after_s = d;
	} else if (header_is(line, len, "Retry-After", v, sizeof(v))) {
		if (parse_secs(v, &d) == 0)
			rl->retry_after_s = d;
	} else if (header_is(line, len, "X-RateLimit-Global", v, sizeof(v))) {
		rl->global = strcasecmp(v, "true") == 0;
	} else if (header_is(line, len, "X-RateLimit-Scope", v, sizeof(v))) {
		if (strcasecmp(v, "global") == 0)
			rl->global = 1;
	} else if (header_is(line, len, "X-RateLimit-Bucket", v, sizeof(v))) {
		snprintf(rl->bucket, sizeof(rl->bucket), "%.63s", v);
	}
}

double kb_dc_rl_wait(const struct kb_dc_rl *rl, long status, const char *body,
		     size_t len, int *global)
{
	double w = 0;

	*global = 0;
	if (status == 429) {
		json_t *j = body && len ? json_loadb(body, len, 0, NULL) : NULL;
		json_t *ra = json_object_get(j, "retry_after");
		if (json_is_number(ra) && json_number_value(ra) >= 0)
			w = json_number_value(ra);
		else if (rl->retry_after_s >= 0)
			w = rl->retry_after_s;
		else if (rl->reset_after_s >= 0)
			w = rl->reset_after_s;
		else
			w = 1.0;
		*global = rl->global ||
			  json_is_true(json_object_get(j, "global"));
		json_decref(j);
	} else if (rl->has_remaining && rl->remaining == 0 &&
		   rl->reset_after_s > 0) {
		w = rl->reset_after_s;
	}
	if (!isfinite(w) || w < 0)
		w = 1.0;
	return w > WAIT_CAP_S ? WAIT_CAP_S : w;
}

void kb_dc_route_key(const char *path, char *out, size_t size)
{
	/* Top-level resources and how many segments name one. */
	static const struct {
		const char *first;
		int segs;
	} tops[] = {{"webhooks", 3},
		    {"channels", 2},
		    {"guilds", 2},
		    {"applications", 2},
		    {"interactions", 3}};
	const char *p = path;
	int want = 1;
	size_t n;

	while (*p == '/')
		p++;
	n = strcspn(p, "/?");
	for (size_t i = 0; i < sizeof(tops) / sizeof(tops[0]); i++)
		if (strlen(tops[i].first) == n &&
		    strncmp(p, tops[i].first, n) == 0)
			want = tops[i].segs;
	const char *end = p;
	for (int s = 0; s < want && *end && *end != '?'; s++) {
		if (s)
			end++;
		end += strcspn(end, "/?");
	}
	snprintf(out, size, "%.*s", (int)(end - p), p);
}

/* ---- one synchronous call ---- */

static size_t header_cb(char *buf, size_t size, size_t nmemb, void *ud)
{
	struct kb_dc_rl *rl = ud;

	kb_dc_rl_header(rl, buf, size * nmemb);
	return size * nmemb;
}

void kb_dc_http_resp_free(struct kb_dc_http_resp *r)
{
	if (!r)
		return;
	free(r->body);
	r->body = NULL;
	r->len = 0;
}

int kb_dc_http_call(const char *method, const char *url, const char *bot_token,
		    const char *json, const struct kb_dc_file *files,
		    size_t nfiles, long timeout_ms, struct kb_dc_http_resp *out)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	curl_mime *mime = NULL;
	struct kb_curl_body body = {0};
	char auth[512];
	CURLcode cc;

	memset(out, 0, sizeof(*out));
	kb_dc_rl_init(&out->rl);
	if (!c) {
		snprintf(out->err, sizeof(out->err), "curl_easy_init failed");
		out->body = calloc(1, 1);
		return -EIO;
	}
	if (bot_token) {
		snprintf(auth, sizeof(auth), "Authorization: Bot %s",
			 bot_token);
		h = curl_slist_append(h, auth);
	}
	if (nfiles) {
		mime = curl_mime_init(c);
		curl_mimepart *part = curl_mime_addpart(mime);
		curl_mime_name(part, "payload_json");
		curl_mime_data(part, json ? json : "{}", CURL_ZERO_TERMINATED);
		curl_mime_type(part, "application/json");
		for (size_t i = 0; i < nfiles; i++) {
			char field[32];
			snprintf(field, sizeof(field), "files[%zu]", i);
			part = curl_mime_addpart(mime);
			curl_mime_name(part, field);
			curl_mime_filename(part, files[i].name);
			curl_mime_data(part, files[i].data, files[i].len);
			curl_mime_type(part, "text/plain; charset=utf-8");
		}
		curl_easy_setopt(c, CURLOPT_MIMEPOST, mime);
	} else if (json) {
		h = curl_slist_append(h, "Content-Type: application/json");
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, json);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)strlen(json));
	}
	/* Custom request after the body options: they imply POST. */
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (strcmp(method, "GET") == 0)
		curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_USERAGENT, USER_AGENT);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, kb_curl_body_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, header_cb);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &out->rl);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
			 timeout_ms < 5000 ? timeout_ms : 5000L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	cc = curl_easy_perform(c);
	if (cc == CURLE_OK) {
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->status);
	} else {
		snprintf(out->err, sizeof(out->err), "%s",
			 curl_easy_strerror(cc));
		out->status = 0;
	}
	out->body = body.data ? body.data : calloc(1, 1);
	out->len = body.len;
	curl_mime_free(mime);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return out->status ? 0 : -EIO;
}

static void sleep_s(double s)
{
	struct timespec ts;

	if (s <= 0)
		return;
	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	nanosleep(&ts, NULL);
}

int kb_dc_http_call_patient(const char *method, const char *url,
			    const char *bot_token, const char *json,
			    long timeout_ms, int tries,
			    struct kb_dc_http_resp *out)
{
	double backoff = 0.5;

	for (int i = 0;; i++) {
		int rc = kb_dc_http_call(method, url, bot_token, json, NULL, 0,
					 timeout_ms, out);
		int global;
		if (i + 1 >= tries)
			return rc;
		if (out->status == 429) {
			double w = kb_dc_rl_wait(&out->rl, 429, out->body,
						 out->len, &global);
			kb_warn("discord: rate limited on %s %s, retrying in %.2f s",
				method, url, w);
			kb_dc_http_resp_free(out);
			sleep_s(w > 60 ? 60 : w);
		} else if (out->status == 0 || out->status >= 500) {
			kb_warn("discord: %s %s failed (%s), retrying", method,
				url, out->status ? "server error" : out->err);
			kb_dc_http_resp_free(out);
			sleep_s(backoff);
			backoff *= 2;
		} else {
			return rc;
		}
	}
}

int kb_dc_fetch(const char *url, size_t max, long timeout_ms, char **out,
		size_t *len, char *errstr, size_t errstr_size)
{
	CURL *c = curl_easy_init();
	struct kb_curl_body body = {.max = max};
	long status = 0;
	CURLcode cc;

	*out = NULL;
	*len = 0;
	if (!c) {
		snprintf(errstr, errstr_size, "curl_easy_init failed");
		return -ENOMEM;
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_USERAGENT, USER_AGENT);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, kb_curl_body_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(c, CURLOPT_MAXREDIRS, 3L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	/* A server that announces the size lets us refuse before reading. */
	curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)max);
	cc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	if (body.too_big || cc == CURLE_FILESIZE_EXCEEDED) {
		free(body.data);
		snprintf(errstr, errstr_size, "file larger than %zu bytes",
			 max);
		return -EFBIG;
	}
	if (cc != CURLE_OK || status != 200) {
		free(body.data);
		if (cc != CURLE_OK)
			snprintf(errstr, errstr_size, "download failed: %s",
				 curl_easy_strerror(cc));
		else
			snprintf(errstr, errstr_size,
				 "download failed: HTTP %ld", status);
		return -EIO;
	}
	*out = body.data ? body.data : calloc(1, 1);
	if (!*out)
		return -ENOMEM;
	*len = body.len;
	return 0;
}

/* ---- calls ---- */

struct kb_dc_call *kb_dc_call_new(const char *method, const char *path_fmt, ...)
{
	struct kb_dc_call *c = calloc(1, sizeof(*c));
	va_list ap;

	if (!c)
		return NULL;
	snprintf(c->method, sizeof(c->method), "%s", method);
	va_start(ap, path_fmt);
	if (vasprintf(&c->path, path_fmt, ap) < 0)
		c->path = NULL;
	va_end(ap);
	if (!c->path) {
		free(c);
		return NULL;
	}
	return c;
}

int kb_dc_call_set(char **field, const char *s)
{
	char *d = s ? strdup(s) : NULL;

	if (s && !d)
		return -ENOMEM;
	free(*field);
	*field = d;
	return 0;
}

int kb_dc_call_add_file(struct kb_dc_call *c, const char *name,
			const char *data, size_t len)
{
	struct kb_dc_file *f = realloc(c->files, (c->nfiles + 1) * sizeof(*f));

	if (!f)
		return -ENOMEM;
	c->files = f;
	f = &c->files[c->nfiles];
	f->name = strdup(name);
	f->data = malloc(len ? len : 1);
	f->len = len;
	if (!f->name || !f->data) {
		free(f->name);
		free(f->data);
		return -ENOMEM;
	}
	memcpy(f->data, data, len);
	c->nfiles++;
	return 0;
}

static void free_files(struct kb_dc_call *c)
{
	for (size_t i = 0; i < c->nfiles; i++) {
		free(c->files[i].name);
		free(c->files[i].data);
	}
	free(c->files);
	c->files = NULL;
	c->nfiles = 0;
}

void kb_dc_call_free(struct kb_dc_call *c)
{
	if (!c)
		return;
	free(c->path);
	free(c->json);
	free_files(c);
	free(c->order_key);
	free(c->coalesce_key);
	free(c);
}

/* ---- the sender ---- */

struct job {
	struct kb_dc_call *call;
	uint64_t seq;
	int tries_5xx, tries_429, tries_404;
	struct job *next;
};

struct route {
	char key[160];
	int64_t until_ms;
	int64_t used_ms;
};

struct kb_dc_rest {
	char *api_base;
	char *bot_token;
	long timeout_ms, max_queue;
	pthread_t thread;
	int started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct job *head; /* ascending seq */
	long nqueued;
	uint64_t next_seq;
	int stopping;
	int64_t drain_until_ms;
	int64_t global_until_ms;
	struct route routes[ROUTES_MAX]; /* per route, and per coalesce key */
	struct kb_dc_rest_stats st;
};

static int64_t now_ms(void)
{
	return (int64_t)(kb_mono_s() * 1e3);
}

/* The route slot for key (the least recently used one is reused). */
static struct route *route_for(struct kb_dc_rest *r, const char *key)
{
	struct route *lru = &r->routes[0];

	for (size_t i = 0; i < ROUTES_MAX; i++) {
		if (strcmp(r->routes[i].key, key) == 0)
			return &r->routes[i];
		if (r->routes[i].used_ms < lru->used_ms)
			lru = &r->routes[i];
	}
	memset(lru, 0, sizeof(*lru));
	snprintf(lru->key, sizeof(lru->key), "%s", key);
	return lru;
}

/* The slot that remembers when a coalesce key's last call was delivered
 * (in until_ms), for min_gap_ms. */
static struct route *gap_for(struct kb_dc_rest *r, const char *coalesce_key)
{
	char key[160];

	snprintf(key, sizeof(key), "gap:%s", coalesce_key);
	return route_for(r, key);
}

static int same(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static void insert_sorted(struct kb_dc_rest *r, struct job *j)
{
	struct job **pp = &r->head;

	while (*pp && (*pp)->seq < j->seq)
		pp = &(*pp)->next;
	j->next = *pp;
	*pp = j;
	r->nqueued++;
}

static void job_free(struct job *j)
{
	if (j) {
		kb_dc_call_free(j->call);
		free(j);
	}
}

int kb_dc_rest_submit(struct kb_dc_rest *r, struct kb_dc_call *c)
{
	struct job *j;

	if (!c)
		return -ENOMEM;
	pthread_mutex_lock(&r->mu);
	if (r->stopping) {
		pthread_mutex_unlock(&r->mu);
		kb_dc_call_free(c);
		return -ESHUTDOWN;
	}
	if (c->coalesce_key)
		for (j = r->head; j; j = j->next)
			if (same(j->call->coalesce_key, c->coalesce_key)) {
				/* Keep the place in line, take the new content. */
				struct kb_dc_call *old = j->call;
				j->call = c;
				j->tries_5xx = j->tries_429 = j->tries_404 = 0;
				pthread_mutex_unlock(&r->mu);
				kb_dc_call_free(old);
				return 0;
			}
	if (r->nqueued >= r->max_queue) {
		r->st.dropped++;
		pthread_mutex_unlock(&r->mu);
		kb_warn("discord: REST queue full, dropping %s", c->what);
		kb_dc_call_free(c);
		return -ENOSPC;
	}
	j = calloc(1, sizeof(*j));
	if (!j) {
		pthread_mutex_unlock(&r->mu);
		kb_dc_call_free(c);
		return -ENOMEM;
	}
	j->call = c;
	j->seq = r->next_seq++;
	insert_sorted(r, j);
	r->st.queued++;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
	return 0;
}

/* Under the lock: unlinks and returns the first job that may go now, or
 * NULL with *wake_ms the earliest time one may. */
static struct job *pick(struct kb_dc_rest *r, int64_t now, int64_t *wake_ms)
{
	*wake_ms = INT64_MAX;
	for (struct job **pp = &r->head; *pp; pp = &(*pp)->next) {
		struct job *j = *pp;
		int blocked = 0;
		char key[160];
		if (j->call->order_key)
			for (struct job *e = r->head; e != j; e = e->next)
				if (same(e->call->order_key,
					 j->call->order_key))
					blocked = 1;
		if (blocked)
			continue;
		kb_dc_route_key(j->call->path, key, sizeof(key));
		int64_t due = j->call->not_before_ms;
		int64_t ru = route_for(r, key)->until_ms;
		due = ru > due ? ru : due;
		if (j->call->min_gap_ms > 0 && j->call->coalesce_key) {
			int64_t gap =
				gap_for(r, j->call->coalesce_key)->until_ms +
				j->call->min_gap_ms;
			due = gap > due ? gap : due;
		}
		due = r->global_until_ms > due ? r->global_until_ms : due;
		if (due > now) {
			*wake_ms = due < *wake_ms ? due : *wake_ms;
			continue;
		}
		*pp = j->next;
		j->next = NULL;
		r->nqueued--;
		return j;
	}
	return NULL;
}

static void log_drop(const struct job *j, const struct kb_dc_http_resp *resp)
{
	char *b = kb_truncate(resp->body, resp->len, BODY_LOG_MAX);

	kb_warn("discord: %s %s dropped: HTTP %ld %s%s",
		j->call->what[0] ? j->call->what : "call", j->call->method,
		resp->status, resp->status ? "" : resp->err, b ? b : "");
	free(b);
}

/* Performs one job without the lock; returns 1 when it must go back in
 * line (its not_before_ms updated), 0 when done (sent or dropped). */
static int perform(struct kb_dc_rest *r, struct job *j)
{
	struct kb_dc_call *c = j->call;
	struct kb_dc_http_resp resp;
	char url[2048], key[160];
	int global = 0, again = 0;
	double wait;

	snprintf(url, sizeof(url), "%s%s", r->api_base, c->path);
	kb_dc_http_call(c->method, url, c->bot_auth ? r->bot_token : NULL,
			c->json, c->files, c->nfiles, r->timeout_ms, &resp);
	int64_t now = now_ms();
	wait = kb_dc_rl_wait(&resp.rl, resp.status, resp.body, resp.len,
			     &global);
	kb_dc_route_key(c->path, key, sizeof(key));

	pthread_mutex_lock(&r->mu);
	if (wait > 0) {
		int64_t until = now + (int64_t)(wait * 1e3);
		if (global)
			r->global_until_ms = until;
		else
			route_for(r, key)->until_ms = until;
	}
	route_for(r, key)->used_ms = now;
	if (resp.status == 429) {
		r->st.rate_limited++;
		again = ++j->tries_429 < TRIES_429;
	} else if (resp.status == 0 || resp.status >= 500) {
		again = ++j->tries_5xx < TRIES_5XX;
		c->not_before_ms = now + (int64_t)(500 << (j->tries_5xx - 1));
	} else if (resp.status == 404 && c->retry_404_until_ms > now) {
		again = 1;
		int shift = ++j->tries_404 < 5 ? j->tries_404 : 5;
		c->not_before_ms = now + 250 * ((int64_t)1 << shift);
	} else if (resp.status >= 200 && resp.status < 300) {
		r->st.sent++;
		if (c->min_gap_ms > 0 && c->coalesce_key)
			gap_for(r, c->coalesce_key)->until_ms =
				now; /* last delivery */
	}
	if (!again && (resp.status < 200 || resp.status >= 300))
		r->st.dropped++;
	pthread_mutex_unlock(&r->mu);

	if (resp.status == 429)
		kb_info("discord: %s rate limited (%s), waiting %.2f s",
			c->what[0] ? c->what : c->path,
			global ? "global" : "route", wait);
	else if (again)
		kb_info("discord: %s got HTTP %ld %s, will retry",
			c->what[0] ? c->what : "call", resp.status,
			resp.status ? "" : resp.err);
	else if (resp.status < 200 || resp.status >= 300)
		log_drop(j, &resp);
	else
		kb_debug("discord: %s %s -> %ld", c->method,
			 c->what[0] ? c->what : "call", resp.status);
	kb_dc_http_resp_free(&resp);
	return again;
}

/* Under the lock: puts a retried job back, unless a newer call with the
 * same coalesce key superseded it meanwhile. */
static void requeue(struct kb_dc_rest *r, struct job *j)
{
	if (j->call->coalesce_key)
		for (struct job *e = r->head; e; e = e->next)
			if (same(e->call->coalesce_key,
				 j->call->coalesce_key)) {
				job_free(j);
				return;
			}
	insert_sorted(r, j);
}

static void *sender(void *arg)
{
	struct kb_dc_rest *r = arg;

	pthread_mutex_lock(&r->mu);
	for (;;) {
		int64_t now = now_ms(), wake;
		if (r->stopping && (!r->head || now >= r->drain_until_ms))
			break;
		struct job *j = pick(r, now, &wake);
		if (!j) {
			if (r->stopping && wake > r->drain_until_ms)
				wake = r->drain_until_ms;
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			int64_t delta = wake == INT64_MAX ? 1000 : wake - now;
			if (delta > 1000)
				delta = 1000;
			if (delta < 1)
				delta = 1;
			ts.tv_sec += delta / 1000;
			ts.tv_nsec += (delta % 1000) * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&r->cv, &r->mu, &ts);
			continue;
		}
		pthread_mutex_unlock(&r->mu);
		int again = perform(r, j);
		pthread_mutex_lock(&r->mu);
		if (again)
			requeue(r, j);
		else
			job_free(j);
	}
	long left = 0;
	while (r->head) {
		struct job *j = r->head;
		r->head = j->next;
		job_free(j);
		left++;
	}
	r->nqueued = 0;
	r->st.dropped += left;
	pthread_mutex_unlock(&r->mu);
	if (left)
		kb_warn("discord: %ld REST calls not sent at shutdown", left);
	return NULL;
}

struct kb_dc_rest *kb_dc_rest_new(const struct kb_dc_rest_cfg *cfg,
				  char *errstr, size_t errstr_size)
{
	struct kb_dc_rest *r = calloc(1, sizeof(*r));

	if (!r) {
		snprintf(errstr, errstr_size, "out of memory");
		return NULL;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	r->api_base = strdup(cfg->api_base);
	r->bot_token = strdup(cfg->bot_token ? cfg->bot_token : "");
	r->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : 10000;
	r->max_queue = cfg->max_queue > 0 ? cfg->max_queue : 10000;
	/* Timed waits on the monotonic clock: a wall-clock step must neither
	 * stall nor hurry the sender. */
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (!r->api_base || !r->bot_token) {
		snprintf(errstr, errstr_size, "out of memory");
		kb_dc_rest_destroy(r, 0);
		return NULL;
	}
	/* Strip a trailing slash so that paths can start with one. */
	size_t n = strlen(r->api_base);
	while (n && r->api_base[n - 1] == '/')
		r->api_base[--n] = '\0';
	int rc = pthread_create(&r->thread, NULL, sender, r);
	if (rc != 0) {
		snprintf(errstr, errstr_size,
			 "cannot start the REST thread: %s", strerror(rc));
		kb_dc_rest_destroy(r, 0);
		return NULL;
	}
	r->started = 1;
	return r;
}

void kb_dc_rest_stats(struct kb_dc_rest *r, struct kb_dc_rest_stats *out)
{
	pthread_mutex_lock(&r->mu);
	*out = r->st;
	pthread_mutex_unlock(&r->mu);
}

void kb_dc_rest_destroy(struct kb_dc_rest *r, long drain_ms)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	r->stopping = 1;
	r->drain_until_ms = now_ms() + drain_ms;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	if (r->started)
		pthread_join(r->thread, NULL);
	while (r->head) {
		struct job *j = r->head;
		r->head = j->next;
		job_free(j);
	}
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cv);
	free(r->api_base);
	free(r->bot_token);
	free(r);
}
