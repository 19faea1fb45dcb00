/* kb_dc_rest: Discord's REST API from a dedicated thread, politely.
 *
 * Request threads never talk to Discord themselves: they build a call
 * (method, path under DISCORD_API_BASE, JSON body, files) and hand it to
 * kb_dc_rest_submit(), which only takes a lock and signals. One sender
 * thread performs the calls with libcurl:
 *
 *  - Order: calls with the same order_key (we use the interaction token)
 *    are sent in submission order, one after the other; calls with
 *    different keys do not wait for each other, so one slow or
 *    rate-limited conversation does not hold up the rest.
 *  - Coalescing: a queued call whose coalesce_key matches a newer one is
 *    replaced by the newer one in place (a progress edit that was not sent
 *    yet is pointless once a newer edit exists). Calls of one coalesce key
 *    may ask to be delivered at least min_gap_ms apart (edit throttling
 *    measured where it matters: at Discord, after any retries).
 *  - Rate limits: after every answer the X-RateLimit-Remaining and
 *    X-RateLimit-Reset-After headers are honoured per route (a route is
 *    its top-level resource: a webhook with its token, a channel, an
 *    application); a 429 makes the call wait retry_after (body, else
 *    Retry-After) and go again, for its route or, when Discord says the
 *    limit is global, for every route.
 *  - Retries: transport errors and 5xx answers are retried with
 *    exponential backoff (5 tries); a 404 on a call that set
 *    retry_404_until_ms is retried until then (Discord may not have
 *    processed our deferred answer yet when the first edit arrives);
 *    any other 4xx is logged and dropped.
 *  - Files go as multipart/form-data: the JSON as payload_json and file i
 *    as files[i], as Discord's upload rules say.
 *
 * kb_dc_rest_destroy() drains: it stops taking calls and lets the sender
 * finish the queue for up to drain_ms, then drops the rest (logged).
 *
 * Thread-safety: kb_dc_rest_submit() and kb_dc_rest_stats() may be called
 * from any thread; new/destroy from one (main) thread. The kb_dc_http_*
 * and kb_dc_fetch calls are synchronous and thread-safe (each call uses
 * its own curl handle); curl_global_init() must have run (kb_dc_rest_new
 * does it, and so does the kb-discord program).
 */
#ifndef KB_DC_REST_H
#define KB_DC_REST_H

#include <stddef.h>
#include <stdint.h>

/* ---- rate-limit headers (pure) ---- */

struct kb_dc_rl {
	int has_remaining;
	long remaining;
	double reset_after_s; /* X-RateLimit-Reset-After; -1 absent */
	double retry_after_s; /* Retry-After header; -1 absent */
	int global;           /* X-RateLimit-Global: true, or Scope: global */
	char bucket[64];      /* X-RateLimit-Bucket, "" when absent */
};

void kb_dc_rl_init(struct kb_dc_rl *rl);
/* Takes one header line ("Name: value\r\n" or without the line end);
 * other headers are ignored. Names are case-insensitive. */
void kb_dc_rl_header(struct kb_dc_rl *rl, const char *line, size_t len);
/* Seconds the route must wait before its next call after this answer (0:
 * none); *global set when every route must wait. For a 429: the body's
 * retry_after, else Retry-After, else Reset-After, else 1 s; otherwise
 * Reset-After when Remaining is 0. Capped at 600 s. */
double kb_dc_rl_wait(const struct kb_dc_rl *rl, long status, const char *body,
		     size_t len, int *global);

/* The route key of a path ("/webhooks/1/tok/messages/@original" →
 * "webhooks/1/tok"), written into out. Pure. */
void kb_dc_route_key(const char *path, char *out, size_t size);

/* ---- one synchronous call ---- */

struct kb_dc_file {
	char *name;
	char *data;
	size_t len;
};

struct kb_dc_http_resp {
	long status; /* 0: no answer (err says why) */
	char *body;  /* NUL-terminated, may be empty */
	size_t len;
	struct kb_dc_rl rl;
	char err[256];
};

/* Performs method url with Authorization "Bot <bot_token>" unless
 * bot_token is NULL, the JSON body json (NULL: none) or, with files, a
 * multipart body. Returns 0 when an HTTP answer came (any status) or
 * -EIO; out is always filled (free with kb_dc_http_resp_free). */
int kb_dc_http_call(const char *method, const char *url, const char *bot_token,
		    const char *json, const struct kb_dc_file *files,
		    size_t nfiles, long timeout_ms,
		    struct kb_dc_http_resp *out);
void kb_dc_http_resp_free(struct kb_dc_http_resp *r);

/* The same, but waits out 429 answers (at most tries times, each wait
 * capped at 60 s) and retries transport errors and 5xx with backoff. For
 * one-off tools (command registration). */
int kb_dc_http_call_patient(const char *method, const char *url,
			    const char *bot_token, const char *json,
			    long timeout_ms, int tries,
			    struct kb_dc_http_resp *out);

/* GETs url (http or https only, at most 3 redirects) into *out
 * (NUL-terminated, malloc'd), refusing bodies over max bytes. Returns 0,
 * -EFBIG (too large: stops reading at once), -EIO (transport error or a
 * status other than 200; errstr says which), -ENOMEM. */
int kb_dc_fetch(const char *url, size_t max, long timeout_ms, char **out,
		size_t *len, char *errstr, size_t errstr_size);

/* ---- the sender thread ---- */

struct kb_dc_call {
	char method[8];
	char *path; /* under the API base, starts with '/' */
	char *json; /* NULL: no body */
	struct kb_dc_file *files;
	size_t nfiles;
	int bot_auth;       /* send the bot token */
	char *order_key;    /* NULL: unordered */
	char *coalesce_key; /* NULL: never replaced */
	int64_t not_before_ms;
	int64_t retry_404_until_ms;
	/* With coalesce_key: at least this long after the last delivered call
	 * of that key (so edits reach Discord spaced, even after a retry). */
	long min_gap_ms;
	char what[64]; /* for log lines, e.g. "edit sub=42" */
};

/* A new call (path from a format). NULL when out of memory. */
struct kb_dc_call *kb_dc_call_new(const char *method, const char *path_fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Copies a file into the call. Returns 0 or -ENOMEM. */
int kb_dc_call_add_file(struct kb_dc_call *c, const char *name,
			const char *data, size_t len);
/* Sets a string field (json, order_key, coalesce_key) to a copy of s. */
int kb_dc_call_set(char **field, const char *s);
void kb_dc_call_free(struct kb_dc_call *c);

struct kb_dc_rest;

struct kb_dc_rest_cfg {
	const char *api_base;  /* e.g. "https://discord.com/api/v10" */
	const char *bot_token; /* "" or NULL: calls with bot_auth fail */
	long timeout_ms;       /* per HTTP call */
	long max_queue;        /* calls waiting, beyond which submit refuses */
};

/* Starts the sender. Returns NULL with errstr set. */
struct kb_dc_rest *kb_dc_rest_new(const struct kb_dc_rest_cfg *cfg,
				  char *errstr, size_t errstr_size);
/* Takes ownership of c (also on failure). Returns 0, -ENOSPC (queue full)
 * or -ESHUTDOWN (stopping). */
int kb_dc_rest_submit(struct kb_dc_rest *r, struct kb_dc_call *c);

struct kb_dc_rest_stats {
	long queued, sent, dropped, rate_limited;
};
void kb_dc_rest_stats(struct kb_dc_rest *r, struct kb_dc_rest_stats *out);

/* Drains for up to drain_ms, stops the sender and frees. NULL: no-op. */
void kb_dc_rest_destroy(struct kb_dc_rest *r, long drain_ms);

#endif
