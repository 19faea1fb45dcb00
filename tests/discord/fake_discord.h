/* fake_discord: a fake Discord REST API and CDN on loopback, in the test
 * process (libmicrohttpd, its own thread).
 *
 * It records every request (method, path, Authorization, body; multipart
 * bodies split into payload_json and files[i]) and answers as Discord
 * would: 200 with a message object for webhook edits and follow-ups and
 * for channel messages (those need "Authorization: Bot ..."), the body
 * back for command registration, the registered bytes for GETs under a
 * served path (the "CDN"), 404 otherwise. Rules override the answer for
 * the next n requests that match a method and path prefix (a 429 with a
 * retry_after body, or a 200 carrying rate-limit headers).
 *
 * Thread-safe; the accessors copy under the server's lock.
 */
#ifndef FAKE_DISCORD_H
#define FAKE_DISCORD_H

#include <stddef.h>

#define FD_FILES_MAX 10

struct fd_call {
	char method[8];
	char path[1024];
	char auth[300];
	char *body; /* raw body, NUL-terminated */
	size_t len;
	char *payload; /* the JSON: the body, or the payload_json part */
	size_t nfiles;
	char file_name[FD_FILES_MAX][128];
	char *file[FD_FILES_MAX];
	size_t file_len[FD_FILES_MAX];
	int status; /* what the fake answered */
	double at;  /* kb_mono_s() when it arrived */
};

struct fake_discord;

/* Starts on a free loopback port; NULL on failure. */
struct fake_discord *fd_start(void);
void fd_stop(struct fake_discord *fd);
/* "http://127.0.0.1:<port>" */
const char *fd_url(const struct fake_discord *fd);

/* GET path answers data (a copy). */
void fd_serve(struct fake_discord *fd, const char *path, const void *data,
	      size_t len);
/* The next times requests with method (NULL any) and a path starting with
 * prefix get status, body (NULL: "{}") and extra headers ("Name: value"
 * lines separated by '\n', or NULL). */
void fd_rule(struct fake_discord *fd, const char *method, const char *prefix,
	     int status, const char *body, const char *headers, int times);

size_t fd_ncalls(struct fake_discord *fd);
/* Copies call i into out (free with fd_call_free). Returns 0 or -1. */
int fd_get(struct fake_discord *fd, size_t i, struct fd_call *out);
void fd_call_free(struct fd_call *c);

/* Waits until at least n recorded calls have method (NULL any) and a path
 * containing needle (NULL any) and, when text is not NULL, a payload
 * containing text. Returns how many there are (possibly fewer than n at
 * the timeout). */
size_t fd_wait(struct fake_discord *fd, const char *method, const char *needle,
	       const char *text, size_t n, int timeout_ms);

/* Prints every recorded call to stderr (for failing tests). */
void fd_dump(struct fake_discord *fd);

#endif
