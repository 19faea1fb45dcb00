/* kb_cases: case lines and the secret seed (see kb_cases.h). */
#include "kb_cases.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb_util.h"

static int is_space(char c)
{
	return c == ' ' || c == '\t';
}

static int is_key_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '_';
}

static char *dup_range(const char *s, size_t n)
{
	char *d = malloc(n + 1);

	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

void kb_case_clear(struct kb_case *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++) {
		free(c->kv[i].key);
		free(c->kv[i].value);
	}
	free(c->kv);
	c->kv = NULL;
	c->n = 0;
}

/* Parses one "k: v" part p[0..n); appends it to out. */
static int parse_part(const char *p, size_t n, struct kb_case *out,
		      char *errstr, size_t errstr_size)
{
	const char *colon = memchr(p, ':', n);
	const char *k0 = p, *k1, *v0, *v1 = p + n;
	struct kb_kv *nkv;

	if (!colon) {
		kb_seterr(errstr, errstr_size, "case part '%.*s' has no ':'",
			  (int)n, p);
		return -EINVAL;
	}
	while (k0 < colon && is_space(*k0))
		k0++;
	k1 = colon;
	while (k1 > k0 && is_space(k1[-1]))
		k1--;
	v0 = colon + 1;
	while (v0 < v1 && is_space(*v0))
		v0++;
	while (v1 > v0 && is_space(v1[-1]))
		v1--;
	if (k1 == k0) {
		kb_seterr(errstr, errstr_size,
			  "case part '%.*s' has an empty key", (int)n, p);
		return -EINVAL;
	}
	for (const char *q = k0; q < k1; q++) {
		if (!is_key_char(*q)) {
			kb_seterr(errstr, errstr_size,
				  "case key '%.*s' is not [A-Za-z0-9_]+",
				  (int)(k1 - k0), k0);
			return -EINVAL;
		}
	}
	if (v1 == v0) {
		kb_seterr(errstr, errstr_size,
			  "case key '%.*s' has an empty value", (int)(k1 - k0),
			  k0);
		return -EINVAL;
	}
	for (size_t i = 0; i < out->n; i++) {
		if (strlen(out->kv[i].key) == (size_t)(k1 - k0) &&
		    memcmp(out->kv[i].key, k0, (size_t)(k1 - k0)) == 0) {
			kb_seterr(errstr, errstr_size,
				  "case key '%.*s' given twice", (int)(k1 - k0),
				  k0);
			return -EINVAL;
		}
	}
	nkv = realloc(out->kv, (out->n + 1) * sizeof(*nkv));
	if (!nkv)
		goto oom;
	out->kv = nkv;
	nkv[out->n].key = dup_range(k0, (size_t)(k1 - k0));
	nkv[out->n].value = dup_range(v0, (size_t)(v1 - v0));
	out->n++;
	if (!nkv[out->n - 1].key || !nkv[out->n - 1].value)
		goto oom;
	return 0;
oom:
	kb_seterr(errstr, errstr_size, "out of memory");
	return -ENOMEM;
}

int kb_case_parse(const char *line, struct kb_case *out, char *errstr,
		  size_t errstr_size)
{
	const char *p = line;
	int rc;

	out->kv = NULL;
	out->n = 0;
	if (!line || strchr(line, '\n') || strchr(line, '\r')) {
		kb_seterr(errstr, errstr_size, "case holds a line break");
		return -EINVAL;
	}
	if (!kb_utf8_valid(line, strlen(line))) {
		kb_seterr(errstr, errstr_size, "case is not valid UTF-8");
		return -EINVAL;
	}
	for (;;) {
		const char *semi = strchr(p, ';');
		size_t n = semi ? (size_t)(semi - p) : strlen(p);
		rc = parse_part(p, n, out, errstr, errstr_size);
		if (rc < 0) {
			kb_case_clear(out);
			return rc;
		}
		if (!semi)
			break;
		p = semi + 1;
	}
	return 0;
}

const char *kb_case_get(const struct kb_case *c, const char *key)
{
	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->kv[i].key, key) == 0)
			return c->kv[i].value;
	return NULL;
}

uint64_t kb_seed_env(uint64_t secret)
{
	return secret & 0x7fffffffu;
}

uint64_t kb_seed_combine(uint64_t a, uint64_t b)
{
	/* s = a + b needs 65 bits, and s(s+1) 130, so halve whichever factor
	 * is even first: the quotient is then exact, and the rest of the
	 * arithmetic may wrap because only the value mod 2^64 is wanted. */
	unsigned __int128 s = (unsigned __int128)a + b;
	unsigned __int128 x = s, y = s + 1;

	if ((s & 1) == 0)
		x /= 2;
	else
		y /= 2;
	return a + (uint64_t)x * (uint64_t)y;
}

char *kb_cases_render(char *const *cases, size_t n, int has_secret,
		      uint64_t secret, char *errstr, size_t errstr_size)
{
	struct kb_buf b = {0};
	struct kb_case c;

	if (kb_buf_append(&b, "", 0) < 0)
		goto oom;
	for (size_t i = 0; i < n; i++) {
		char err[256];
		if (kb_case_parse(cases[i], &c, err, sizeof(err)) < 0) {
			kb_seterr(errstr, errstr_size, "case %zu: %s", i, err);
			goto fail;
		}
		for (size_t j = 0; j < c.n; j++) {
			const char *v = c.kv[j].value;
			char num[24];
			if (has_secret && strcmp(c.kv[j].key, "seed") == 0) {
				uint64_t a;
				if (kb_parse_u64_digits(v, &a) < 0) {
					kb_seterr(
						errstr, errstr_size,
						"case %zu: seed '%s' is not an "
						"unsigned 64-bit integer",
						i, v);
					kb_case_clear(&c);
					goto fail;
				}
				snprintf(num, sizeof(num), "%llu",
					 (unsigned long long)kb_seed_combine(
						 a, secret));
				v = num;
			}
			if (kb_buf_printf(&b, "%s%s: %s", j ? "; " : "",
					  c.kv[j].key, v) < 0) {
				kb_case_clear(&c);
				goto oom;
			}
		}
		kb_case_clear(&c);
		if (kb_buf_append(&b, "\n", 1) < 0)
			goto oom;
	}
	return b.data;
oom:
	kb_seterr(errstr, errstr_size, "out of memory");
fail:
	kb_buf_free(&b);
	return NULL;
}
