/* kb_popcorn: the harness report ("key: value" lines on POPCORN_FD).
 *
 * Strict: a line without ": ", an empty key, a key given twice, test or
 * benchmark indices out of order (i must appear after i-1, and below the
 * declared count) are errors, because a report that does not follow the
 * protocol cannot be trusted. In detail:
 *  - Lines end in '\n'; a last line without one is accepted. An empty line
 *    is an error (it has no ": "). '\r' is not special (it would end up in
 *    the value, and makes check/counts invalid).
 *  - The whole report must be UTF-8 without NUL bytes (kb_utf8_valid), so
 *    every value can go into protobuf/JSON strings as it is.
 *  - The key is everything before the first ": ", and must be
 *    [A-Za-z0-9_.-]+; the value is everything after it and may be empty
 *    ("test.0.message: " gives ""), since a harness may log an empty
 *    message.
 *  - check must be "pass" or "fail"; test-count and benchmark-count are
 *    decimal integers without sign or leading zeros, at most 100000.
 *  - Every key "test.<i>.<field>" (and "benchmark.<i>.<field>") needs the
 *    count declared on an earlier line, i below it, decimal without leading
 *    zeros, and the indices in order: each key's i equals the previous
 *    indexed key's i or exceeds it by one, starting at 0. Fewer indices
 *    than the count is fine (a harness may stop at the first failure).
 *    Any non-empty field name is accepted.
 * On error *out is empty (kb_popcorn_clear state) and errstr names the line.
 *
 * Keys: check, test-count, test.<i>.{spec,status,error,message},
 * benchmark-count, benchmark.<i>.{spec,runs,mean,std,err,best,worst,status,
 * error,...}; times in nanoseconds. Other keys are kept in order.
 * Pure and thread-safe.
 */
#ifndef KB_POPCORN_H
#define KB_POPCORN_H

#include <stddef.h>

#include "kb_task.h"

struct kb_popcorn {
	struct kb_kv *kv; /* in report order */
	size_t n;
	int check;       /* 1 pass, 0 fail, -1 absent */
	long test_count; /* -1 when absent */
	long benchmark_count;
};

/* Returns 0, or -EINVAL/-ENOMEM with errstr set. Free with
 * kb_popcorn_clear() (NULL is a no-op; it leaves the absent state). */
int kb_popcorn_parse(const char *buf, size_t len, struct kb_popcorn *out,
		     char *errstr, size_t errstr_size);
void kb_popcorn_clear(struct kb_popcorn *p);

/* Value of key, or NULL. */
const char *kb_popcorn_get(const struct kb_popcorn *p, const char *key);

/* The mean of every benchmark (benchmark.<i>.mean, ns), in order, for i
 * below benchmark-count. Returns the count (>= 1) with *means malloc'd, or
 * -EINVAL (*means NULL) if benchmark-count is absent or 0, or any mean is
 * missing, non-numeric (a plain decimal/float, no sign or blanks),
 * non-finite or not positive; -ENOMEM. */
int kb_popcorn_means(const struct kb_popcorn *p, double **means);

#endif
