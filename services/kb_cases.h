/* kb_cases: test and benchmark cases, and the secret seed.
 *
 * A case is a line "k: v; k: v" (the upstream cases-file format). A ranked
 * run's secret seed b turns each case's seed a into a + (a+b)(a+b+1)/2; the
 * worker applies it while writing the cases file, so the secret itself
 * never enters the sandbox.
 * Pure and thread-safe.
 */
#ifndef KB_CASES_H
#define KB_CASES_H

#include <stddef.h>
#include <stdint.h>

#include "kb_task.h"

struct kb_case {
	struct kb_kv *kv;
	size_t n;
};

/* Parses one case line. Keys are [A-Za-z0-9_]+, values non-empty without
 * ';' or newline. Returns 0 or -EINVAL with errstr set. */
int kb_case_parse(const char *line, struct kb_case *out, char *errstr,
		  size_t errstr_size);
void kb_case_clear(struct kb_case *c);

/* Value of key, or NULL. */
const char *kb_case_get(const struct kb_case *c, const char *key);

/* a + (a+b)(a+b+1)/2, modulo 2^64. */
uint64_t kb_seed_combine(uint64_t a, uint64_t b);

/* Writes the cases file text: one line per case, each ending in '\n'. With
 * has_secret, every "seed" value is combined with secret. Returns a malloc'd
 * string, or NULL with errstr set (bad case or seed). */
char *kb_cases_render(char *const *cases, size_t n, int has_secret,
		      uint64_t secret, char *errstr, size_t errstr_size);

#endif
