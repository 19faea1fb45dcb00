/* kb_curl_body: a response body collected in memory, the one libcurl
 * write callback of the services (CURLOPT_WRITEFUNCTION with
 * CURLOPT_WRITEDATA pointing at a struct kb_curl_body). It needs no
 * libcurl itself: the callback's signature is libcurl's.
 *
 * Not thread-safe per body (one transfer writes one body).
 */
#ifndef KB_CURL_BODY_H
#define KB_CURL_BODY_H

#include <stddef.h>

/* Start from {0} or {.max = n}. data is NUL-terminated once anything was
 * written (NULL before); the caller frees it (free() or
 * kb_curl_body_free()). */
struct kb_curl_body {
	char *data;
	size_t len;
	size_t max;  /* refuse a body larger than this; 0: no limit */
	int too_big; /* set when max refused a write */
};

/* Appends size * nmemb bytes at ptr to the body (body: a struct
 * kb_curl_body *). Returns the bytes taken, or 0, which aborts the
 * transfer (CURLE_WRITE_ERROR), when the body would pass max (too_big
 * set) or memory runs out. */
size_t kb_curl_body_write(char *ptr, size_t size, size_t nmemb, void *body);

/* Frees the data and resets *b to {0} but for max; NULL is a no-op. */
void kb_curl_body_free(struct kb_curl_body *b);

#endif
