/* kb_popcorn: the harness report ("key: value" lines on POPCORN_FD).
 *
 * Strict: a line without ": ", an empty key, a key given twice, test or
 * benchmark indices out of order (i must appear after i-1, and below the
 * declared count) are errors, because a report that does not follow the
 * protocol cannot be trusted.
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
	int check;        /* 1 pass, 0 fail, -1 absent */
	long test_count;  /* -1 when absent */
	long benchmark_count;
};

int kb_popcorn_parse(const char *buf, size_t len, struct kb_popcorn *out,
		     char *errstr, size_t errstr_size);
void kb_popcorn_clear(struct kb_popcorn *p);

/* Value of key, or NULL. */
const char *kb_popcorn_get(const struct kb_popcorn *p, const char *key);

/* The mean of every benchmark (benchmark.<i>.mean, ns), in order. Returns
 * the count (>= 1) with *means malloc'd, or -EINVAL if any is missing,
 * non-numeric or not positive. */
int kb_popcorn_means(const struct kb_popcorn *p, double **means);

#endif
