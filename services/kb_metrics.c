/* kb_metrics: see kb_metrics.h. */
#include "kb_metrics.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb_util.h"

#define MAX_FAMILIES 128
#define MAX_COLLECTORS 16
#define NAME_MAX_LEN 128

enum kind { KIND_COUNTER, KIND_GAUGE, KIND_HISTOGRAM };

struct kb_series {
	const struct kb_metric_family *f;
	uint64_t hash;
	char **values;        /* f->nlabels strings, in this allocation */
	_Atomic uint64_t v;   /* counter: count; gauge: the double's bits */
	_Atomic uint64_t sum; /* histogram: the double's bits */
	_Atomic uint64_t buckets[]; /* histogram: nbounds + 1 (non-cumulative) */
};

struct kb_metric_family {
	kb_metrics *m;
	enum kind kind;
	char name[NAME_MAX_LEN];
	char *help;
	size_t nlabels;
	char labels[KB_METRICS_MAX_LABELS][NAME_MAX_LEN];
	double bounds[KB_METRICS_MAX_BUCKETS];
	size_t nbounds;
	_Atomic(kb_series *) slots[KB_METRICS_MAX_SERIES * 2];
	_Atomic size_t nseries;
};

struct collector {
	kb_metrics_collect_fn fn;
	void *ctx;
};

struct kb_metrics {
	pthread_mutex_t mu;        /* registration */
	pthread_mutex_t render_mu; /* one scrape at a time */
	kb_metric_family *families[MAX_FAMILIES];
	_Atomic size_t nfamilies;
	struct collector collectors[MAX_COLLECTORS];
	size_t ncollectors;
	kb_metric_family *dropped; /* kb_metrics_series_dropped_total */
};

const double kb_metrics_latency_bounds[KB_METRICS_LATENCY_NBOUNDS] = {
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
	0.05,   0.1,     0.25,   0.5,   1,      2.5,   10};
const double kb_metrics_job_bounds[KB_METRICS_JOB_NBOUNDS] = {
	0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800};

static uint64_t dbits(double d)
{
	uint64_t u;
	memcpy(&u, &d, sizeof(u));
	return u;
}

static double bitsd(uint64_t u)
{
	double d;
	memcpy(&d, &u, sizeof(d));
	return d;
}

static int name_ok(const char *s, int allow_colon)
{
	if (!s || !*s || strlen(s) >= NAME_MAX_LEN)
		return 0;
	for (const char *p = s; *p; p++) {
		char c = *p;
		int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			    c == '_' || (allow_colon && c == ':');
		if (!alpha && !(p > s && c >= '0' && c <= '9'))
			return 0;
	}
	return 1;
}

static kb_metric_family *family_new(kb_metrics *m, enum kind kind,
				    const char *name, const char *help,
				    const char *labels, const double *bounds,
				    size_t nbounds);

kb_metrics *kb_metrics_new(void)
{
	kb_metrics *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	pthread_mutex_init(&m->mu, NULL);
	pthread_mutex_init(&m->render_mu, NULL);
	m->dropped = family_new(m, KIND_COUNTER,
				"kb_metrics_series_dropped_total",
				"Updates dropped because a metric family had "
				"too many label combinations.",
				"metric", NULL, 0);
	return m;
}

static void family_free(kb_metric_family *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < KB_METRICS_MAX_SERIES * 2; i++)
		free(atomic_load(&f->slots[i]));
	free(f->help);
	free(f);
}

void kb_metrics_destroy(kb_metrics *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < atomic_load(&m->nfamilies); i++)
		family_free(m->families[i]);
	pthread_mutex_destroy(&m->mu);
	pthread_mutex_destroy(&m->render_mu);
	free(m);
}

static kb_metrics *default_registry;
static pthread_once_t default_once = PTHREAD_ONCE_INIT;

static void default_init(void)
{
	default_registry = kb_metrics_new();
}

kb_metrics *kb_metrics_default(void)
{
	pthread_once(&default_once, default_init);
	return default_registry;
}

/* Splits "a,b" into f->labels. Returns 0 or -EINVAL. */
static int parse_labels(kb_metric_family *f, const char *labels)
{
	const char *p = labels;

	f->nlabels = 0;
	if (!p || !*p)
		return 0;
	while (*p) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		if (f->nlabels == KB_METRICS_MAX_LABELS || n == 0 ||
		    n >= NAME_MAX_LEN)
			return -EINVAL;
		memcpy(f->labels[f->nlabels], p, n);
		f->labels[f->nlabels][n] = '\0';
		if (!name_ok(f->labels[f->nlabels], 0) ||
		    strncmp(f->labels[f->nlabels], "__", 2) == 0 ||
		    strcmp(f->labels[f->nlabels], "le") == 0)
			return -EINVAL;
		f->nlabels++;
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

static int same_shape(const kb_metric_family *a, const kb_metric_family *b)
{
	if (a->kind != b->kind || a->nlabels != b->nlabels ||
	    a->nbounds != b->nbounds)
		return 0;
	for (size_t i = 0; i < a->nlabels; i++)
		if (strcmp(a->labels[i], b->labels[i]) != 0)
			return 0;
	for (size_t i = 0; i < a->nbounds; i++)
		if (a->bounds[i] != b->bounds[i])
			return 0;
	return 1;
}

/* Called with m->mu held, or before m is shared. */
static kb_metric_family *family_new(kb_metrics *m, enum kind kind,
				    const char *name, const char *help,
				    const char *labels, const double *bounds,
				    size_t nbounds)
{
	kb_metric_family *f;

	if (!name_ok(name, 1) || nbounds > KB_METRICS_MAX_BUCKETS ||
	    (kind == KIND_HISTOGRAM && (!bounds || nbounds == 0)))
		return NULL;
	for (size_t i = 1; i < nbounds; i++)
		if (!(bounds[i] > bounds[i - 1]))
			return NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->m = m;
	f->kind = kind;
	snprintf(f->name, sizeof(f->name), "%s", name);
	f->help = strdup(help ? help : "");
	f->nbounds = kind == KIND_HISTOGRAM ? nbounds : 0;
	if (f->nbounds)
		memcpy(f->bounds, bounds, nbounds * sizeof(*bounds));
	if (!f->help || parse_labels(f, labels) < 0) {
		family_free(f);
		return NULL;
	}
	for (size_t i = 0; i < atomic_load(&m->nfamilies); i++) {
		kb_metric_family *old = m->families[i];
		if (strcmp(old->name, f->name) != 0)
			continue;
		int same = same_shape(old, f);
		family_free(f);
		return same ? old : NULL;
	}
	size_t n = atomic_load(&m->nfamilies);
	if (n == MAX_FAMILIES) {
		family_free(f);
		return NULL;
	}
	m->families[n] = f;
	atomic_store(&m->nfamilies, n + 1);
	if (f->nlabels == 0)
		kb_metric_get0(f);
	return f;
}

static kb_metric_family *reg(kb_metrics *m, enum kind kind, const char *name,
			     const char *help, const char *labels,
			     const double *bounds, size_t nbounds)
{
	kb_metric_family *f;

	if (!m)
		return NULL;
	pthread_mutex_lock(&m->mu);
	f = family_new(m, kind, name, help, labels, bounds, nbounds);
	pthread_mutex_unlock(&m->mu);
	return f;
}

kb_metric_family *kb_metrics_counter(kb_metrics *m, const char *name,
				     const char *help, const char *labels)
{
	return reg(m, KIND_COUNTER, name, help, labels, NULL, 0);
}

kb_metric_family *kb_metrics_gauge(kb_metrics *m, const char *name,
				   const char *help, const char *labels)
{
	return reg(m, KIND_GAUGE, name, help, labels, NULL, 0);
}

kb_metric_family *kb_metrics_histogram(kb_metrics *m, const char *name,
				       const char *help, const char *labels,
				       const double *bounds, size_t nbounds)
{
	return reg(m, KIND_HISTOGRAM, name, help, labels, bounds, nbounds);
}

/* FNV-1a over the values, each followed by a 0xff separator (a byte no
 * UTF-8 string holds), so ("ab","c") and ("a","bc") differ. */
static uint64_t hash_values(const char *const *values, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++) {
		for (const unsigned char *p = (const unsigned char *)values[i];
		     *p; p++)
			h = (h ^ *p) * 1099511628211ull;
		h = (h ^ 0xff) * 1099511628211ull;
	}
	return h;
}

static int series_is(const kb_series *s, uint64_t h, const char *const *values,
		     size_t n)
{
	if (s->hash != h)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (strcmp(s->values[i], values[i]) != 0)
			return 0;
	return 1;
}

static kb_series *series_new(const kb_metric_family *f, uint64_t h,
			     const char *const *values)
{
	size_t nb = f->kind == KIND_HISTOGRAM ? f->nbounds + 1 : 0;
	size_t head = sizeof(kb_series) + nb * sizeof(_Atomic uint64_t);
	size_t text = 0;
	kb_series *s;
	char *p;

	for (size_t i = 0; i < f->nlabels; i++)
		text += strlen(values[i]) + 1;
	s = calloc(1, head + f->nlabels * sizeof(char *) + text);
	if (!s)
		return NULL;
	s->f = f;
	s->hash = h;
	s->values = (char **)((char *)s + head);
	p = (char *)(s->values + f->nlabels);
	for (size_t i = 0; i < f->nlabels; i++) {
		size_t n = strlen(values[i]) + 1;
		memcpy(p, values[i], n);
		s->values[i] = p;
		p += n;
	}
	return s;
}

kb_series *kb_metric_get(kb_metric_family *f, const char *const *values)
{
	const size_t nslots = KB_METRICS_MAX_SERIES * 2;
	kb_series *fresh = NULL;
	uint64_t h;

	if (!f)
		return NULL;
	for (size_t i = 0; i < f->nlabels; i++)
		if (!values || !values[i])
			return NULL;
	h = hash_values(values, f->nlabels);
	/* Linear probing over twice as many slots as series allowed, so a
	 * probe always ends at an empty slot or the series. */
	for (size_t k = 0; k < nslots; k++) {
		_Atomic(kb_series *) *slot = &f->slots[(h + k) % nslots];
		kb_series *s = atomic_load_explicit(slot, memory_order_acquire);
		if (s) {
			if (series_is(s, h, values, f->nlabels)) {
				free(fresh);
				return s;
			}
			continue;
		}
		/* Empty: this combination is new. */
		if (!fresh) {
			if (atomic_fetch_add(&f->nseries, 1) >=
			    KB_METRICS_MAX_SERIES) {
				atomic_fetch_sub(&f->nseries, 1);
				break;
			}
			fresh = series_new(f, h, values);
			if (!fresh) {
				atomic_fetch_sub(&f->nseries, 1);
				return NULL;
			}
		}
		kb_series *expect = NULL;
		if (atomic_compare_exchange_strong_explicit(
			    slot, &expect, fresh, memory_order_acq_rel,
			    memory_order_acquire))
			return fresh;
		/* Another thread filled the slot first: maybe with ours. */
		if (series_is(expect, h, values, f->nlabels)) {
			free(fresh);
			atomic_fetch_sub(&f->nseries, 1);
			return expect;
		}
	}
	if (fresh) {
		free(fresh);
		atomic_fetch_sub(&f->nseries, 1);
	}
	if (f->m && f != f->m->dropped)
		kb_counter_inc(kb_metric_get1(f->m->dropped, f->name));
	return NULL;
}

kb_series *kb_metric_get0(kb_metric_family *f)
{
	return kb_metric_get(f, NULL);
}

kb_series *kb_metric_get1(kb_metric_family *f, const char *a)
{
	const char *v[1] = {a};
	return kb_metric_get(f, v);
}

kb_series *kb_metric_get2(kb_metric_family *f, const char *a, const char *b)
{
	const char *v[2] = {a, b};
	return kb_metric_get(f, v);
}

kb_series *kb_metric_get3(kb_metric_family *f, const char *a, const char *b,
			  const char *c)
{
	const char *v[3] = {a, b, c};
	return kb_metric_get(f, v);
}

void kb_counter_add(kb_series *s, uint64_t n)
{
	if (s && s->f->kind == KIND_COUNTER)
		atomic_fetch_add_explicit(&s->v, n, memory_order_relaxed);
}

void kb_counter_inc(kb_series *s)
{
	kb_counter_add(s, 1);
}

void kb_gauge_set(kb_series *s, double v)
{
	if (s && s->f->kind == KIND_GAUGE)
		atomic_store_explicit(&s->v, dbits(v), memory_order_relaxed);
}

/* Adds d to the double held as bits in *a (a compare-and-swap loop). */
static void add_double(_Atomic uint64_t *a, double d)
{
	uint64_t old = atomic_load_explicit(a, memory_order_relaxed);

	while (!atomic_compare_exchange_weak_explicit(
		a, &old, dbits(bitsd(old) + d), memory_order_relaxed,
		memory_order_relaxed))
		;
}

void kb_gauge_add(kb_series *s, double d)
{
	if (s && s->f->kind == KIND_GAUGE)
		add_double(&s->v, d);
}

void kb_histogram_observe(kb_series *s, double v)
{
	size_t i = 0;

	if (!s || s->f->kind != KIND_HISTOGRAM || isnan(v))
		return;
	while (i < s->f->nbounds && v > s->f->bounds[i])
		i++;
	atomic_fetch_add_explicit(&s->buckets[i], 1, memory_order_relaxed);
	add_double(&s->sum, v);
}

double kb_series_value(const kb_series *s)
{
	uint64_t n = 0;

	if (!s)
		return 0;
	switch (s->f->kind) {
	case KIND_COUNTER:
		return (double)atomic_load(&s->v);
	case KIND_GAUGE:
		return bitsd(atomic_load(&s->v));
	case KIND_HISTOGRAM:
		for (size_t i = 0; i <= s->f->nbounds; i++)
			n += atomic_load(&s->buckets[i]);
		return (double)n;
	}
	return 0;
}

int kb_metrics_on_collect(kb_metrics *m, kb_metrics_collect_fn fn, void *ctx)
{
	int rc = 0;

	if (!m || !fn)
		return -EINVAL;
	pthread_mutex_lock(&m->mu);
	if (m->ncollectors == MAX_COLLECTORS)
		rc = -ENOSPC;
	else
		m->collectors[m->ncollectors++] = (struct collector){fn, ctx};
	pthread_mutex_unlock(&m->mu);
	return rc;
}

/* ---- rendering ---- */

static void put_escaped(struct kb_buf *b, const char *s, int quote)
{
	for (; *s; s++) {
		if (*s == '\\')
			kb_buf_append(b, "\\\\", 2);
		else if (*s == '\n')
			kb_buf_append(b, "\\n", 2);
		else if (quote && *s == '"')
			kb_buf_append(b, "\\\"", 2);
		else
			kb_buf_append(b, s, 1);
	}
}

/* The shortest %g form of a finite v that reads back as v ("0.05", not
 * "0.050000000000000003"): Prometheus matches le labels as strings, so
 * {le="0.05"} must be what a person would write. */
static void shortest(double v, char *out, size_t size)
{
	if (v == (double)(int64_t)v && fabs(v) < 9e15) {
		snprintf(out, size, "%lld", (long long)v);
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(out, size, "%.*g", prec, v);
		if (strtod(out, NULL) == v)
			return;
	}
}

static void put_number(struct kb_buf *b, double v)
{
	char num[40];

	if (isnan(v))
		kb_buf_append(b, "NaN", 3);
	else if (isinf(v))
		kb_buf_printf(b, "%s", v > 0 ? "+Inf" : "-Inf");
	else {
		shortest(v, num, sizeof(num));
		kb_buf_printf(b, "%s", num);
	}
}

/* name{labels[,le="x"]} value */
static void put_sample(struct kb_buf *b, const kb_metric_family *f,
		       const kb_series *s, const char *suffix, const char *le,
		       double v)
{
	int any = 0;

	kb_buf_printf(b, "%s%s", f->name, suffix);
	for (size_t i = 0; i < f->nlabels; i++) {
		kb_buf_printf(b, "%s%s=\"", any++ ? "," : "{", f->labels[i]);
		put_escaped(b, s->values[i], 1);
		kb_buf_append(b, "\"", 1);
	}
	if (le)
		kb_buf_printf(b, "%sle=\"%s\"", any++ ? "," : "{", le);
	if (any)
		kb_buf_append(b, "}", 1);
	kb_buf_append(b, " ", 1);
	put_number(b, v);
	kb_buf_append(b, "\n", 1);
}

static void put_series(struct kb_buf *b, const kb_metric_family *f,
		       const kb_series *s)
{
	uint64_t cum = 0;
	char le[40];

	switch (f->kind) {
	case KIND_COUNTER:
		put_sample(b, f, s, "", NULL, (double)atomic_load(&s->v));
		break;
	case KIND_GAUGE:
		put_sample(b, f, s, "", NULL, bitsd(atomic_load(&s->v)));
		break;
	case KIND_HISTOGRAM:
		for (size_t i = 0; i <= f->nbounds; i++) {
			cum += atomic_load(&s->buckets[i]);
			if (i < f->nbounds)
				shortest(f->bounds[i], le, sizeof(le));
			put_sample(b, f, s, "_bucket",
				   i < f->nbounds ? le : "+Inf", (double)cum);
		}
		put_sample(b, f, s, "_sum", NULL, bitsd(atomic_load(&s->sum)));
		put_sample(b, f, s, "_count", NULL, (double)cum);
		break;
	}
}

char *kb_metrics_render(kb_metrics *m, size_t *len)
{
	static const char *const type_names[] = {"counter", "gauge",
						 "histogram"};
	struct kb_buf b = {0};

	if (!m)
		return NULL;
	pthread_mutex_lock(&m->render_mu);
	pthread_mutex_lock(&m->mu);
	size_t nc = m->ncollectors;
	struct collector cs[MAX_COLLECTORS];
	memcpy(cs, m->collectors, nc * sizeof(*cs));
	pthread_mutex_unlock(&m->mu);
	/* Without m->mu: a collector may register a family. */
	for (size_t i = 0; i < nc; i++)
		cs[i].fn(m, cs[i].ctx);
	size_t nf = atomic_load(&m->nfamilies);
	int rc = kb_buf_append(&b, "", 0); /* an empty registry is "" */
	for (size_t i = 0; i < nf && rc == 0; i++) {
		const kb_metric_family *f = m->families[i];
		kb_buf_printf(&b, "# HELP %s ", f->name);
		put_escaped(&b, f->help, 0);
		kb_buf_printf(&b, "\n# TYPE %s %s\n", f->name,
			      type_names[f->kind]);
		for (size_t k = 0; k < KB_METRICS_MAX_SERIES * 2; k++) {
			const kb_series *s = atomic_load(&f->slots[k]);
			if (s)
				put_series(&b, f, s);
		}
		/* A failed append leaves the buffer short: report ENOMEM
		 * rather than a truncated exposition. */
		rc = kb_buf_append(&b, "", 0);
	}
	pthread_mutex_unlock(&m->render_mu);
	if (rc < 0) {
		kb_buf_free(&b);
		return NULL;
	}
	if (len)
		*len = b.len;
	return b.data;
}
