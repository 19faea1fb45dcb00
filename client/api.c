/* kb_api: see api.h. */
#include "api.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#define CONNECT_TIMEOUT_S 10L
#define BODY_MAX                                                               \
	(64u << 20) /* a non-streamed response larger than this is refused */
#define USER_AGENT "kb/" KB_CLIENT_VERSION " (KernelBot in C)"

volatile sig_atomic_t kb_api_interrupted;

struct kb_api {
	CURL *h;
	char *base;
	char *cli_id;
};

struct xfer {
	struct kb_api_resp *resp;
	const struct kb_api_stream *stream;
	int decided, streaming, stopped, too_big;
	double last_tick;
	CURL *h;
};

int kb_api_global_init(char *errstr, size_t errstr_size)
{
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(errstr, errstr_size, "libcurl initialisation failed");
		return -EIO;
	}
	return 0;
}

void kb_api_global_cleanup(void)
{
	curl_global_cleanup();
}

struct kb_api *kb_api_new(const char *base_url, const char *cli_id)
{
	struct kb_api *a = calloc(1, sizeof(*a));
	size_t n;

	if (!a)
		return NULL;
	a->h = curl_easy_init();
	a->base = strdup(base_url);
	a->cli_id = cli_id ? strdup(cli_id) : NULL;
	if (!a->h || !a->base || (cli_id && !a->cli_id)) {
		kb_api_destroy(a);
		return NULL;
	}
	n = strlen(a->base);
	while (n > 0 && a->base[n - 1] == '/')
		a->base[--n] = '\0';
	return a;
}

void kb_api_destroy(struct kb_api *a)
{
	if (!a)
		return;
	if (a->h)
		curl_easy_cleanup(a->h);
	free(a->base);
	free(a->cli_id);
	free(a);
}

const char *kb_api_base(const struct kb_api *a)
{
	return a->base;
}

static int escaped_add(struct kb_buf *b, const char *s)
{
	char *e = curl_easy_escape(NULL, s, (int)strlen(s));
	int rc;

	if (!e)
		return -ENOMEM;
	rc = kb_buf_append(b, e, strlen(e));
	curl_free(e);
	return rc;
}

int kb_api_path_add(struct kb_buf *b, const char *segment)
{
	int rc = kb_buf_append(b, "/", 1);

	return rc ? rc : escaped_add(b, segment);
}

int kb_api_query_add(struct kb_buf *b, const char *key, const char *value)
{
	int rc = kb_buf_append(b, b->data && strchr(b->data, '?') ? "&" : "?",
			       1);

	if (rc == 0)
		rc = escaped_add(b, key);
	if (rc == 0)
		rc = kb_buf_append(b, "=", 1);
	return rc ? rc : escaped_add(b, value);
}

void kb_api_resp_free(struct kb_api_resp *r)
{
	if (r)
		kb_buf_free(&r->body);
}

int kb_api_ok(const struct kb_api_resp *r)
{
	return r->status >= 200 && r->status < 300;
}

int kb_api_is_type(const struct kb_api_resp *r, const char *mime)
{
	size_t n = strlen(mime);

	return strncasecmp(r->content_type, mime, n) == 0 &&
	       (r->content_type[n] == '\0' || r->content_type[n] == ';' ||
		isspace((unsigned char)r->content_type[n]));
}

static size_t on_header(char *buf, size_t size, size_t nitems, void *opaque)
{
	struct xfer *x = opaque;
	size_t n = size * nitems;
	static const char ct[] = "content-type:";

	if (n >= 5 && memcmp(buf, "HTTP/", 5) == 0) {
		/* A new header block (after a 100 Continue, say). */
		x->resp->content_type[0] = '\0';
	} else if (n > sizeof(ct) - 1 &&
		   strncasecmp(buf, ct, sizeof(ct) - 1) == 0) {
		const char *v = buf + sizeof(ct) - 1;
		size_t vlen = n - (sizeof(ct) - 1);
		while (vlen && (*v == ' ' || *v == '\t')) {
			v++;
			vlen--;
		}
		while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' ||
				v[vlen - 1] == ' '))
			vlen--;
		if (vlen >= sizeof(x->resp->content_type))
			vlen = sizeof(x->resp->content_type) - 1;
		memcpy(x->resp->content_type, v, vlen);
		x->resp->content_type[vlen] = '\0';
	}
	return n;
}

static size_t on_write(char *buf, size_t size, size_t nmemb, void *opaque)
{
	struct xfer *x = opaque;
	size_t n = size * nmemb;

	if (!x->decided) {
		x->decided = 1;
		curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE,
				  &x->resp->status);
		x->streaming = x->stream && x->stream->on_data &&
			       kb_api_ok(x->resp) &&
			       kb_api_is_type(x->resp, "text/event-stream");
	}
	if (x->streaming) {
		if (x->stream->on_data(buf, n, x->stream->opaque) != 0) {
			x->stopped = 1;
			return 0;
		}
		return n;
	}
	if (x->resp->body.len + n > BODY_MAX) {
		x->too_big = 1;
		return 0;
	}
	return kb_buf_append(&x->resp->body, buf, n) == 0 ? n : 0;
}

static int on_progress(void *opaque, curl_off_t dltotal, curl_off_t dlnow,
		       curl_off_t ultotal, curl_off_t ulnow)
{
	struct xfer *x = opaque;
	double now;

	(void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	if (kb_api_interrupted)
		return 1;
	if (!x->stream || !x->stream->on_tick)
		return 0;
	now = kb_mono_s();
	if (now - x->last_tick < 1.0)
		return 0;
	x->last_tick = now;
	if (x->stream->on_tick(x->stream->opaque) != 0) {
		x->stopped = 1;
		return 1;
	}
	return 0;
}

/* Sets the options every call shares; returns the header list to free. */
static struct curl_slist *common(struct kb_api *a, struct xfer *x,
				 const char *path, long timeout_s, long stall_s,
				 char *url_out, size_t url_size)
{
	struct curl_slist *hdrs = NULL, *t;
	char line[512];

	curl_easy_reset(a->h);
	snprintf(url_out, url_size, "%s%s", a->base, path);
	curl_easy_setopt(a->h, CURLOPT_URL, url_out);
	curl_easy_setopt(a->h, CURLOPT_USERAGENT, USER_AGENT);
	curl_easy_setopt(a->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(a->h, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT_S);
	curl_easy_setopt(a->h, CURLOPT_TIMEOUT, timeout_s);
	if (stall_s > 0) {
		curl_easy_setopt(a->h, CURLOPT_LOW_SPEED_LIMIT, 1L);
		curl_easy_setopt(a->h, CURLOPT_LOW_SPEED_TIME, stall_s);
	}
	curl_easy_setopt(a->h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(a->h, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(a->h, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(a->h, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(a->h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(a->h, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(a->h, CURLOPT_XFERINFODATA, x);
	/* No "Expect: 100-continue" round trip before a body. */
	t = curl_slist_append(hdrs, "Expect:");
	hdrs = t ? t : hdrs;
	t = curl_slist_append(hdrs,
			      "Accept: application/json, text/event-stream");
	hdrs = t ? t : hdrs;
	if (a->cli_id) {
		snprintf(line, sizeof(line), "X-Popcorn-Cli-Id: %s", a->cli_id);
		t = curl_slist_append(hdrs, line);
		hdrs = t ? t : hdrs;
	}
	return hdrs;
}

static int perform(struct kb_api *a, struct xfer *x, const char *method,
		   const char *url, char *errstr, size_t errstr_size)
{
	char cerr[CURL_ERROR_SIZE] = "";
	CURLcode cc;

	curl_easy_setopt(a->h, CURLOPT_ERRORBUFFER, cerr);
	x->last_tick = kb_mono_s();
	cc = curl_easy_perform(a->h);
	curl_easy_setopt(a->h, CURLOPT_ERRORBUFFER, NULL);
	if (cc == CURLE_OK) {
		curl_easy_getinfo(a->h, CURLINFO_RESPONSE_CODE,
				  &x->resp->status);
		return 0;
	}
	if (kb_api_interrupted) {
		snprintf(errstr, errstr_size, "interrupted");
		return -EINTR;
	}
	if (x->stopped)
		return -ECANCELED;
	if (x->too_big) {
		snprintf(errstr, errstr_size,
			 "%s %s: response larger than %u bytes", method, url,
			 BODY_MAX);
		return -EIO;
	}
	snprintf(errstr, errstr_size, "%s %s: %s", method, url,
		 *cerr ? cerr : curl_easy_strerror(cc));
	if (cc == CURLE_OPERATION_TIMEDOUT)
		return -ETIMEDOUT;
	if (cc == CURLE_OUT_OF_MEMORY)
		return -ENOMEM;
	return -EIO;
}

int kb_api_call(struct kb_api *a, const char *method, const char *path,
		const json_t *json_body, long timeout_s,
		struct kb_api_resp *resp, char *errstr, size_t errstr_size)
{
	struct xfer x = {.resp = resp, .h = a->h};
	struct curl_slist *hdrs, *t;
	char url[4096];
	char *body = NULL;
	int rc;

	memset(resp, 0, sizeof(*resp));
	hdrs = common(a, &x, path, timeout_s, 0, url, sizeof(url));
	if (json_body) {
		body = json_dumps(json_body, JSON_COMPACT);
		if (!body) {
			curl_slist_free_all(hdrs);
			snprintf(errstr, errstr_size, "out of memory");
			return -ENOMEM;
		}
		t = curl_slist_append(hdrs, "Content-Type: application/json");
		hdrs = t ? t : hdrs;
		curl_easy_setopt(a->h, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(a->h, CURLOPT_POSTFIELDSIZE,
				 (long)strlen(body));
	} else if (strcmp(method, "POST") == 0) {
		curl_easy_setopt(a->h, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(a->h, CURLOPT_POSTFIELDSIZE, 0L);
	}
	if (strcmp(method, "GET") != 0 && strcmp(method, "POST") != 0)
		curl_easy_setopt(a->h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(a->h, CURLOPT_HTTPHEADER, hdrs);
	rc = perform(a, &x, method, url, errstr, errstr_size);
	curl_easy_setopt(a->h, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(hdrs);
	free(body);
	return rc;
}

int kb_api_post_file(struct kb_api *a, const char *path, const char *field,
		     const char *filename, const char *data, size_t len,
		     const struct kb_api_stream *stream, long timeout_s,
		     long stall_s, struct kb_api_resp *resp, char *errstr,
		     size_t errstr_size)
{
	struct xfer x = {.resp = resp, .stream = stream, .h = a->h};
	struct curl_slist *hdrs;
	curl_mime *mime;
	curl_mimepart *part;
	char url[4096];
	int rc;

	memset(resp, 0, sizeof(*resp));
	hdrs = common(a, &x, path, timeout_s, stall_s, url, sizeof(url));
	mime = curl_mime_init(a->h);
	part = mime ? curl_mime_addpart(mime) : NULL;
	if (!part || curl_mime_name(part, field) != CURLE_OK ||
	    curl_mime_filename(part, filename) != CURLE_OK ||
	    curl_mime_type(part, "text/plain") != CURLE_OK ||
	    curl_mime_data(part, data, len) != CURLE_OK) {
		curl_mime_free(mime);
		curl_slist_free_all(hdrs);
		snprintf(errstr, errstr_size, "out of memory");
		return -ENOMEM;
	}
	curl_easy_setopt(a->h, CURLOPT_MIMEPOST, mime);
	curl_easy_setopt(a->h, CURLOPT_HTTPHEADER, hdrs);
	rc = perform(a, &x, "POST", url, errstr, errstr_size);
	curl_easy_setopt(a->h, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(a->h, CURLOPT_MIMEPOST, NULL);
	curl_mime_free(mime);
	curl_slist_free_all(hdrs);
	return rc;
}

json_t *kb_api_json(const struct kb_api_resp *r, char *errstr,
		    size_t errstr_size)
{
	json_error_t je;
	json_t *j = json_loadb(r->body.data ? r->body.data : "", r->body.len, 0,
			       &je);

	if (!j)
		snprintf(errstr, errstr_size,
			 "the server's answer is not JSON (%s, line %d)",
			 je.text, je.line);
	return j;
}

void kb_api_error_text(const struct kb_api_resp *r, char *out, size_t out_size)
{
	json_error_t je;
	json_t *j = json_loadb(r->body.data ? r->body.data : "", r->body.len, 0,
			       &je);
	const char *msg = NULL;
	char *dumped = NULL;

	if (json_is_object(j)) {
		const json_t *d = json_object_get(j, "detail");
		if (json_is_string(d))
			msg = json_string_value(d);
		else if (d) /* FastAPI validation errors: a list */
			msg = dumped = json_dumps(d, JSON_COMPACT);
		if (!msg)
			msg = json_string_value(json_object_get(j, "message"));
	}
	if (msg)
		snprintf(out, out_size, "HTTP %ld: %s", r->status, msg);
	else if (r->body.len)
		snprintf(out, out_size, "HTTP %ld: %.200s", r->status,
			 r->body.data);
	else
		snprintf(out, out_size, "HTTP %ld", r->status);
	free(dumped);
	json_decref(j);
}
