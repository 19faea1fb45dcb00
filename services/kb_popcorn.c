/* kb_popcorn: the harness report parser (see kb_popcorn.h). */
#include "kb_popcorn.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb_util.h"

/* Bounds that keep a hostile report from making us allocate without end;
 * the real ones are a few dozen cases. */
#define KB_POPCORN_MAX_COUNT 100000L

static int is_key_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

/* Decimal without sign or leading zeros ("0" itself is fine), at most
 * KB_POPCORN_MAX_COUNT. Returns the value or -1. */
static long parse_index(const char *s, size_t n)
{
	long v = 0;

	if (n == 0 || (n > 1 && s[0] == '0'))
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
		if (v > KB_POPCORN_MAX_COUNT)
			return -1;
	}
	return v;
}

void kb_popcorn_clear(struct kb_popcorn *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++) {
		free(p->kv[i].key);
		free(p->kv[i].value);
	}
	free(p->kv);
	p->kv = NULL;
	p->n = 0;
	p->check = -1;
	p->test_count = -1;
	p->benchmark_count = -1;
}

/* State of one indexed family ("test" or "benchmark"). */
struct family {
	const char *name;
	long *count; /* -1 until declared */
	long cur;    /* highest index seen so far, -1 at first */
};

/* Checks "<family>.<i>.<field>" against the protocol's ordering rules. */
static int check_indexed(struct family *f, const char *key, size_t lineno,
			 char *errstr, size_t errstr_size)
{
	size_t pre = strlen(f->name);
	const char *idx = key + pre + 1;
	const char *dot = strchr(idx, '.');
	long i;

	if (!dot || dot[1] == '\0') {
		kb_seterr(errstr, errstr_size,
			  "report line %zu: key '%s' is not %s.<i>.<field>",
			  lineno, key, f->name);
		return -EINVAL;
	}
	i = parse_index(idx, (size_t)(dot - idx));
	if (i < 0) {
		kb_seterr(errstr, errstr_size,
			  "report line %zu: key '%s' has a bad index", lineno,
			  key);
		return -EINVAL;
	}
	if (*f->count < 0) {
		kb_seterr(errstr, errstr_size,
			  "report line %zu: key '%s' comes before %s-count",
			  lineno, key, f->name);
		return -EINVAL;
	}
	if (i >= *f->count) {
		kb_seterr(errstr, errstr_size,
			  "report line %zu: index %ld of '%s' is not below "
			  "%s-count %ld",
			  lineno, i, key, f->name, *f->count);
		return -EINVAL;
	}
	if (i < f->cur || i > f->cur + 1) {
		kb_seterr(errstr, errstr_size,
			  "report line %zu: index %ld of '%s' is out of order "
			  "(after %ld)",
			  lineno, i, key, f->cur);
		return -EINVAL;
	}
	f->cur = i;
	return 0;
}

static int cmp_kv_ptr(const void *a, const void *b)
{
	const struct kb_kv *x = *(const struct kb_kv *const *)a;
	const struct kb_kv *y = *(const struct kb_kv *const *)b;

	return strcmp(x->key, y->key);
}

/* Duplicate keys, found by sorting pointers: O(n log n), so a long hostile
 * report cannot make this quadratic. */
static int check_duplicates(const struct kb_popcorn *p, char *errstr,
			    size_t errstr_size)
{
	const struct kb_kv **v;
	int rc = 0;

	if (p->n < 2)
		return 0;
	v = malloc(p->n * sizeof(*v));
	if (!v) {
		kb_seterr(errstr, errstr_size, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->n; i++)
		v[i] = &p->kv[i];
	qsort(v, p->n, sizeof(*v), cmp_kv_ptr);
	for (size_t i = 1; i < p->n; i++) {
		if (strcmp(v[i - 1]->key, v[i]->key) == 0) {
			kb_seterr(errstr, errstr_size,
				  "report: key '%s' given twice", v[i]->key);
			rc = -EINVAL;
			break;
		}
	}
	free(v);
	return rc;
}

static int add_kv(struct kb_popcorn *p, size_t *cap, const char *k, size_t kn,
		  const char *v, size_t vn)
{
	char *key, *value;

	if (p->n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 32;
		struct kb_kv *nkv = realloc(p->kv, ncap * sizeof(*nkv));
		if (!nkv)
			return -ENOMEM;
		p->kv = nkv;
		*cap = ncap;
	}
	key = malloc(kn + 1);
	value = malloc(vn + 1);
	if (!key || !value) {
		free(key);
		free(value);
		return -ENOMEM;
	}
	memcpy(key, k, kn);
	key[kn] = '\0';
	memcpy(value, v, vn);
	value[vn] = '\0';
	p->kv[p->n].key = key;
	p->kv[p->n].value = value;
	p->n++;
	return 0;
}

int kb_popcorn_parse(const char *buf, size_t len, struct kb_popcorn *out,
		     char *errstr, size_t errstr_size)
{
	struct family fam[2] = {
		{"test", &out->test_count, -1},
		{"benchmark", &out->benchmark_count, -1},
	};
	size_t cap = 0, lineno = 0, pos = 0;
	int rc = 0;

	out->kv = NULL;
	out->n = 0;
	out->check = -1;
	out->test_count = -1;
	out->benchmark_count = -1;

	if (!kb_utf8_valid(buf, len)) {
		kb_seterr(errstr, errstr_size,
			  "report is not UTF-8 text (or holds NUL bytes)");
		return -EINVAL;
	}
	while (pos < len) {
		const char *line = buf + pos;
		const char *nl = memchr(line, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - line) : len - pos;
		const char *sep = memmem(line, n, ": ", 2);
		const char *key;
		size_t kn;

		lineno++;
		pos += n + (nl ? 1 : 0);
		if (!sep) {
			kb_seterr(errstr, errstr_size,
				  "report line %zu: no \": \" in '%.*s'",
				  lineno, n > 80 ? 80 : (int)n, line);
			rc = -EINVAL;
			goto fail;
		}
		kn = (size_t)(sep - line);
		if (kn == 0) {
			kb_seterr(errstr, errstr_size,
				  "report line %zu: empty key", lineno);
			rc = -EINVAL;
			goto fail;
		}
		for (size_t i = 0; i < kn; i++) {
			if (!is_key_char(line[i])) {
				kb_seterr(errstr, errstr_size,
					  "report line %zu: key '%.*s' is not "
					  "[A-Za-z0-9_.-]+",
					  lineno, (int)kn, line);
				rc = -EINVAL;
				goto fail;
			}
		}
		if (add_kv(out, &cap, line, kn, sep + 2, n - kn - 2) < 0) {
			kb_seterr(errstr, errstr_size, "out of memory");
			rc = -ENOMEM;
			goto fail;
		}
		key = out->kv[out->n - 1].key;
		const char *val = out->kv[out->n - 1].value;

		if (strcmp(key, "check") == 0) {
			if (strcmp(val, "pass") == 0) {
				out->check = 1;
			} else if (strcmp(val, "fail") == 0) {
				out->check = 0;
			} else {
				kb_seterr(errstr, errstr_size,
					  "report line %zu: check is '%s', not "
					  "pass or fail",
					  lineno, val);
				rc = -EINVAL;
				goto fail;
			}
			continue;
		}
		for (int f = 0; f < 2; f++) {
			size_t fl = strlen(fam[f].name);
			if (strncmp(key, fam[f].name, fl) != 0)
				continue;
			if (strcmp(key + fl, "-count") == 0) {
				long c = parse_index(val, strlen(val));
				if (c < 0) {
					kb_seterr(
						errstr, errstr_size,
						"report line %zu: %s '%s' is not "
						"a count",
						lineno, key, val);
					rc = -EINVAL;
					goto fail;
				}
				if (*fam[f].count >= 0) {
					kb_seterr(
						errstr, errstr_size,
						"report: key '%s' given twice",
						key);
					rc = -EINVAL;
					goto fail;
				}
				*fam[f].count = c;
			} else if (key[fl] == '.') {
				rc = check_indexed(&fam[f], key, lineno, errstr,
						   errstr_size);
				if (rc < 0)
					goto fail;
			}
		}
	}
	rc = check_duplicates(out, errstr, errstr_size);
	if (rc < 0)
		goto fail;
	return 0;
fail:
	kb_popcorn_clear(out);
	return rc;
}

const char *kb_popcorn_get(const struct kb_popcorn *p, const char *key)
{
	for (size_t i = 0; i < p->n; i++)
		if (strcmp(p->kv[i].key, key) == 0)
			return p->kv[i].value;
	return NULL;
}

int kb_popcorn_means(const struct kb_popcorn *p, double **means)
{
	double *m;

	*means = NULL;
	if (p->benchmark_count < 1)
		return -EINVAL;
	m = malloc((size_t)p->benchmark_count * sizeof(*m));
	if (!m)
		return -ENOMEM;
	for (long i = 0; i < p->benchmark_count; i++) {
		char key[64];
		const char *v;
		char *end;

		snprintf(key, sizeof(key), "benchmark.%ld.mean", i);
		v = kb_popcorn_get(p, key);
		/* strtod alone would take leading blanks, signs, "nan". */
		if (!v || !((*v >= '0' && *v <= '9') || *v == '.'))
			goto bad;
		errno = 0;
		m[i] = strtod(v, &end);
		if (*end != '\0' || errno == ERANGE || !isfinite(m[i]) ||
		    m[i] <= 0)
			goto bad;
	}
	*means = m;
	return (int)p->benchmark_count;
bad:
	free(m);
	return -EINVAL;
}
