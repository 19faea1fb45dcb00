/* kb_api: HTTP calls to the KernelBot API (libcurl).
 *
 * One handle per process: it holds the base URL, the CLI id sent as
 * X-Popcorn-Cli-Id, and a reused libcurl easy handle (keep-alive across
 * calls, as a poll loop makes many). Every call returns 0 when an HTTP
 * response arrived, whatever its status (the caller decides what a 404
 * means), and a negative errno when none did:
 *   -EIO        network or protocol failure (errstr says what)
 *   -ETIMEDOUT  the time limit passed
 *   -EINTR      kb_api_interrupted was set (Ctrl-C)
 *   -ECANCELED  a stream callback asked to stop
 *   -ENOMEM
 * Not thread-safe: one thread per handle. kb_api_global_init() once in
 * main() before anything else.
 */
#ifndef KB_API_H
#define KB_API_H

#include <signal.h>
#include <stddef.h>

#include <jansson.h>

#include "kb_util.h"

/* Set (to 1) by main's SIGINT/SIGTERM handler; every transfer and every
 * wait in the client checks it and stops. */
extern volatile sig_atomic_t kb_api_interrupted;

struct kb_api;

struct kb_api_resp {
	long status;            /* HTTP status; 0 before a response */
	char content_type[128]; /* "" when absent */
	struct kb_buf body; /* the body, unless it went to a stream callback */
};

/* Streaming: when the response is 2xx with Content-Type text/event-stream,
 * each body chunk goes to on_data instead of resp->body. on_tick runs
 * about once a second while a transfer is in progress (for a progress
 * display). Either returning non-zero stops the transfer (-ECANCELED). */
struct kb_api_stream {
	int (*on_data)(const char *buf, size_t len, void *opaque);
	int (*on_tick)(void *opaque);
	void *opaque;
};

/* Returns 0 or -EIO (libcurl could not start). */
int kb_api_global_init(char *errstr, size_t errstr_size);
void kb_api_global_cleanup(void);

/* base_url without a trailing slash is stored (a trailing slash is
 * dropped); cli_id may be NULL for the calls that need no identity.
 * Returns NULL on allocation failure. */
struct kb_api *kb_api_new(const char *base_url, const char *cli_id);
void kb_api_destroy(struct kb_api *a);
const char *kb_api_base(const struct kb_api *a);

/* Appends "/" and the URL-escaped segment to b (a path being built). */
int kb_api_path_add(struct kb_buf *b, const char *segment);

/* Appends "?k=v" or "&k=v", URL-escaped. */
int kb_api_query_add(struct kb_buf *b, const char *key, const char *value);

/* method "GET", "DELETE", "POST"...; path starts with '/' and is already
 * escaped (kb_api_path_add). json_body (may be NULL) is sent as
 * application/json. timeout_s 0 means no overall limit. Fills *resp (free
 * with kb_api_resp_free). */
int kb_api_call(struct kb_api *a, const char *method, const char *path,
		const json_t *json_body, long timeout_s,
		struct kb_api_resp *resp, char *errstr, size_t errstr_size);

/* POST of a multipart form with one file part named field (file name
 * filename, content data[0..len)). stream may be NULL. timeout_s 0 is no
 * overall limit; a stalled transfer (no byte for stall_s, 0 for none) is
 * -ETIMEDOUT either way. */
int kb_api_post_file(struct kb_api *a, const char *path, const char *field,
		     const char *filename, const char *data, size_t len,
		     const struct kb_api_stream *stream, long timeout_s,
		     long stall_s, struct kb_api_resp *resp, char *errstr,
		     size_t errstr_size);

/* Frees the body; NULL is a no-op. */
void kb_api_resp_free(struct kb_api_resp *r);

/* 1 for 2xx. */
int kb_api_ok(const struct kb_api_resp *r);

/* 1 if the response's Content-Type is mime (parameters ignored). */
int kb_api_is_type(const struct kb_api_resp *r, const char *mime);

/* Parses the body as JSON; NULL (with errstr) if it is not. */
json_t *kb_api_json(const struct kb_api_resp *r, char *errstr,
		    size_t errstr_size);

/* "HTTP 404: <detail>" for an error response, taking the message from a
 * JSON {"detail": "..."} (FastAPI and our gateway) or {"message": "..."}
 * (KernelBot's own errors), else the start of the body. */
void kb_api_error_text(const struct kb_api_resp *r, char *out, size_t out_size);

#endif
