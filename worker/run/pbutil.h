/* pbutil: allocation helpers for building protobuf-c message trees.
 *
 * The worker builds Result and Submission trees by hand and frees them with
 * the generated *_free_unpacked(msg, NULL), which releases every string,
 * array and sub-message with free(). So every piece must come from malloc:
 * these helpers guarantee that, and abort() on out-of-memory (as Redis'
 * zmalloc does) because a worker that cannot allocate a few bytes cannot
 * report anything useful either.
 *
 * Thread-safe.
 */
#ifndef KB_PBUTIL_H
#define KB_PBUTIL_H

#include <stddef.h>

void *kb__xcalloc(size_t n, size_t size);
void *kb__xrealloc(void *p, size_t size);
char *kb__xstrdup(const char *s); /* NULL becomes "" */
char *kb__xstrndup(const char *s, size_t n);
char *kb__xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Appends item to a repeated field: *arr is an array of *n pointers. */
void kb__pb_append(void *arr, size_t *n, void *item);

/* Replaces *field (a malloc'd string or protobuf_c_empty_string) with s. */
void kb__pb_set_str(char **field, const char *s);

/* Like kb__pb_set_str() but takes ownership of the malloc'd string s. */
void kb__pb_take_str(char **field, char *s);

/* A captured stream for a Result: at most max bytes, cut at a UTF-8
 * boundary (kb_truncate), noting bytes the sandbox already dropped. */
char *kb__pb_output(const char *s, size_t len, size_t dropped, size_t max);

#endif
