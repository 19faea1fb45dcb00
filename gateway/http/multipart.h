/* kb_multipart: a strict, incremental multipart/form-data parser
 * (RFC 7578 on top of RFC 2046), for the one file field of a submission.
 *
 * The parser is fed the request body in pieces as they arrive and keeps
 * only the content of the requested field, never more than max_bytes of
 * it; every other part is checked for framing and dropped. It does no I/O.
 *
 * Strictness, because a body we half-understand must not become a
 * submission: the boundary must be declared and well-formed (1..70 bchars,
 * not ending in a space); lines are CRLF (a bare LF in part headers is an
 * error); the delimiter may be followed only by "--" (close) or optional
 * spaces/tabs and CRLF; every part needs a Content-Disposition of type
 * form-data with a name; header continuation lines are refused; the field
 * may appear once; the close delimiter must arrive. A preamble before the
 * first delimiter and an epilogue after the close delimiter are ignored, as
 * RFC 2046 says.
 *
 * Errors: -EINVAL (malformed; kb_multipart_error() says why), -EFBIG (the
 * field's content exceeds max_bytes), -ENOMEM. Errors are sticky: once a
 * call failed, every later call returns the same code.
 * Thread-safety: a parser belongs to one thread; different parsers are
 * independent.
 */
#ifndef KB_MULTIPART_H
#define KB_MULTIPART_H

#include <stddef.h>

#define KB_MULTIPART_BOUNDARY_MAX 70
#define KB_MULTIPART_TEXTS 4       /* text fields kept beside the field */
#define KB_MULTIPART_TEXT_MAX 1024 /* bytes of each */

typedef struct kb_multipart kb_multipart;

/* Parses a Content-Type header value. Returns 0 with the boundary copied
 * into buf (size >= KB_MULTIPART_BOUNDARY_MAX + 1), or -EINVAL when the
 * media type is not multipart/form-data or the boundary is missing or
 * malformed. Pure. */
int kb_multipart_boundary(const char *content_type, char *buf, size_t size);

/* Creates a parser for bodies delimited by boundary that keeps the content
 * of the part named field (at most max_bytes). Returns NULL on a malformed
 * boundary or out of memory. The strings are copied. */
kb_multipart *kb_multipart_new(const char *boundary, const char *field,
			       size_t max_bytes);

/* Also keeps the content of the part named name, a small text field (at
 * most KB_MULTIPART_TEXTS of them; a longer value than
 * KB_MULTIPART_TEXT_MAX bytes, or the field given twice, is -EINVAL when
 * fed). Call before the first feed. Returns 0, or -EINVAL (bad or too
 * many names). */
int kb_multipart_keep_text(kb_multipart *m, const char *name);

/* After a successful finish: the kept text field's content
 * (NUL-terminated), or NULL when the body had no such part. Owned by the
 * parser. */
const char *kb_multipart_text(const kb_multipart *m, const char *name);

/* Consumes len bytes of body. Returns 0 or a negative code (see above). */
int kb_multipart_feed(kb_multipart *m, const void *data, size_t len);

/* Declares the end of the body. Returns 0 when the body was complete
 * (close delimiter seen), -EINVAL when it was truncated, or the sticky
 * error of an earlier call. */
int kb_multipart_finish(kb_multipart *m);

/* After a successful finish: 1 if the field was present, else 0. */
int kb_multipart_found(const kb_multipart *m);

/* The field's content (NUL-terminated; *len excludes the NUL) and the
 * filename parameter of its part (NULL when absent). Owned by the parser,
 * valid until kb_multipart_destroy() or kb_multipart_take(). */
const char *kb_multipart_data(const kb_multipart *m, size_t *len);
const char *kb_multipart_filename(const kb_multipart *m);

/* Hands the content buffer to the caller (free() it); the parser keeps an
 * empty one. Returns NULL when the field was empty or absent. */
char *kb_multipart_take(kb_multipart *m, size_t *len);

/* A short English reason for the last error, or "" when none. Static or
 * owned by the parser. */
const char *kb_multipart_error(const kb_multipart *m);

/* NULL is a no-op. */
void kb_multipart_destroy(kb_multipart *m);

#endif
