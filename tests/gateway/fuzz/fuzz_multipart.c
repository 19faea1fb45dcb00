/* libFuzzer target: the multipart parser, fed in pieces.
 *
 * Input layout: byte 0 picks the boundary (from a few), byte 1 the piece
 * size (1..256), the rest is the body. The parser must never crash, read
 * out of bounds or keep more than its cap, and a body it accepts must
 * hand back exactly what it says it holds. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/multipart.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const boundaries[] = {
		"XyZ", "----WebKitFormBoundary7MA4YWxk", "a", "b o u n d",
		"=_"};
	char ct[160];
	char b[KB_MULTIPART_BOUNDARY_MAX + 1];

	if (size < 2)
		return 0;
	const char *bd = boundaries[data[0] % 5];
	size_t piece = (size_t)data[1] + 1;
	data += 2;
	size -= 2;
	/* The Content-Type parser on the way. */
	snprintf(ct, sizeof(ct), "multipart/form-data; boundary=\"%s\"", bd);
	if (kb_multipart_boundary(ct, b, sizeof(b)) != 0)
		abort();
	kb_multipart *m = kb_multipart_new(b, "file", 1024);
	if (!m)
		return 0;
	int rc = 0;
	for (size_t off = 0; off < size && rc == 0; off += piece)
		rc = kb_multipart_feed(m, data + off,
				       size - off < piece ? size - off : piece);
	if (rc == 0)
		rc = kb_multipart_finish(m);
	if (rc == 0 && kb_multipart_found(m)) {
		size_t len = 0;
		const char *d = kb_multipart_data(m, &len);
		if (len > 1024 || (len && !d) || (d && d[len] != '\0'))
			abort();
		const char *fn = kb_multipart_filename(m);
		if (fn)
			(void)strlen(fn);
		size_t tl = 0;
		char *t = kb_multipart_take(m, &tl);
		if (t && tl != len)
			abort();
		free(t);
	} else if (rc != 0 && rc != -EINVAL && rc != -EFBIG && rc != -ENOMEM) {
		abort();
	}
	(void)kb_multipart_error(m);
	kb_multipart_destroy(m);
	return 0;
}
