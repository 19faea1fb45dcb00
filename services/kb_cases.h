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

#include "kb_kv.h"

struct kb_case {
	struct kb_kv *kv;
	size_t n;
};

/* Parses one case line: parts separated by ';', each "key: value" with
 * spaces and tabs around keys and values ignored. Keys are [A-Za-z0-9_]+
 * and unique within the line, values non-empty without ';' or a line break;
 * the line must be UTF-8 without NUL. An empty line or an empty part (a
 * trailing ';') is an error. Returns 0 with out->kv malloc'd (free with
 * kb_case_clear), or -EINVAL (-ENOMEM) with errstr set and *out empty. */
int kb_case_parse(const char *line, struct kb_case *out, char *errstr,
		  size_t errstr_size);
void kb_case_clear(struct kb_case *c);

/* Value of key, or NULL. */
const char *kb_case_get(const struct kb_case *c, const char *key);

/* a + (a+b)(a+b+1)/2, modulo 2^64: the exact integer formula (as Python
 * computes it upstream) reduced mod 2^64, also when a+b or the product
 * overflow 64 bits. */
uint64_t kb_seed_combine(uint64_t a, uint64_t b);

/* The secret seed as a Python harness gets it (POPCORN_SEED): the low 31
 * bits of secret. Upstream's secret seeds are below 2**31 (its database
 * draws them so), and its eval.py seeds numpy with the value itself,
 * which refuses anything from 2**32 up: a full 64-bit seed crashed every
 * upstream problem's secret run. Harnesses in C get their case seeds
 * combined with the whole 64 bits (kb_cases_render). Pure. */
uint64_t kb_seed_env(uint64_t secret);

/* Writes the cases file text: one line per case, each ending in '\n', in the
 * canonical form "k: v; k: v" (whitespace normalised). With has_secret,
 * every "seed" value is combined with secret; such a seed must then be an
 * unsigned decimal that fits 64 bits. Without has_secret seeds are copied
 * as they are. n == 0 gives "". Returns a malloc'd string, or NULL with
 * errstr set (bad case or seed; errstr never contains the secret). */
char *kb_cases_render(char *const *cases, size_t n, int has_secret,
		      uint64_t secret, char *errstr, size_t errstr_size);

#endif
