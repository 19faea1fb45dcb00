/* kb_curl_body: see kb_curl_body.h. */
#include "kb_curl_body.h"

#include <stdlib.h>
#include <string.h>

size_t kb_curl_body_write(char *ptr, size_t size, size_t nmemb, void *body)
{
	struct kb_curl_body *b = body;
	size_t n = size * nmemb;

	if (b->max && b->len + n > b->max) {
		b->too_big = 1;
		return 0;
	}
	char *d = realloc(b->data, b->len + n + 1);
	if (!d)
		return 0;
	memcpy(d + b->len, ptr, n);
	b->data = d;
	b->len += n;
	b->data[b->len] = '\0';
	return n;
}

void kb_curl_body_free(struct kb_curl_body *b)
{
	if (!b)
		return;
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->too_big = 0;
}
