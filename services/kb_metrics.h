/* kb_metrics: Prometheus metrics of one process (text exposition format
 * 0.0.4), cheap enough for request paths.
 *
 * A registry holds metric families (counter, gauge, histogram), each with
 * a fixed list of label names. A family's series (one per combination of
 * label values) are made on first use and never freed before the
 * registry, so a caller may keep a series pointer for the registry's life
 * and update it without a lookup.
 *
 * Cost: updating a series is one or two relaxed atomic operations; no lock
 * is taken. Finding a series (kb_metric_get) hashes the label values into
 * a fixed-size open-addressed table whose slots are published with a
 * compare-and-swap: lookups never lock, and the first use of a new
 * combination allocates once. A family holds at most KB_METRICS_MAX_SERIES
 * series; past that kb_metric_get() returns NULL (the update is dropped)
 * and kb_metrics_series_dropped_total counts it, so a label fed with
 * unbounded values (a path, a user) cannot grow memory without bound.
 *
 * NULL is accepted everywhere a family or series is taken and does
 * nothing: a service that turns metrics off simply never registers its
 * families, and its update calls stay in place.
 *
 * Rendering (kb_metrics_render) first runs the collect callbacks (values
 * read at scrape time: queue depth, device telemetry), then writes every
 * family. Scrapes are serialised with each other (a render mutex), never
 * with updates: a scrape reads each atomic once, so it may see one
 * counter of a request updated and the next not yet.
 *
 * Thread-safety: everything is thread-safe. Families must be registered
 * before other threads use them by name (registration locks; it is meant
 * for startup).
 */
#ifndef KB_METRICS_H
#define KB_METRICS_H

#include <stddef.h>
#include <stdint.h>

#define KB_METRICS_MAX_SERIES 1024 /* per family */
#define KB_METRICS_MAX_LABELS 4
#define KB_METRICS_MAX_BUCKETS 24

typedef struct kb_metrics kb_metrics;
typedef struct kb_metric_family kb_metric_family;
typedef struct kb_series kb_series;

/* A registry; NULL when out of memory. */
kb_metrics *kb_metrics_new(void);
/* Frees the registry, its families and series. NULL is a no-op. */
void kb_metrics_destroy(kb_metrics *m);

/* The process's registry, made on first call (never NULL unless out of
 * memory; never freed). Shared modules (kb_kafka) count into it. */
kb_metrics *kb_metrics_default(void);

/* Registers a family. name and the label names must match
 * [a-zA-Z_:][a-zA-Z0-9_:]*; labels is a comma-separated list ("route,code")
 * or NULL/"" for none. Registering a name again returns the existing
 * family if its type and labels agree, else NULL. Histogram bounds are the
 * upper bounds, strictly increasing, at most KB_METRICS_MAX_BUCKETS (the
 * +Inf bucket is implicit). Returns NULL on a bad argument or ENOMEM; m
 * NULL gives NULL. A family without labels has its one series made at
 * once, so it renders 0 before its first update. */
kb_metric_family *kb_metrics_counter(kb_metrics *m, const char *name,
				     const char *help, const char *labels);
kb_metric_family *kb_metrics_gauge(kb_metrics *m, const char *name,
				   const char *help, const char *labels);
kb_metric_family *kb_metrics_histogram(kb_metrics *m, const char *name,
				       const char *help, const char *labels,
				       const double *bounds, size_t nbounds);

/* The series for label values values[0..nlabels) (the family's label
 * count), made on first use; NULL when f is NULL, a value is NULL, or the
 * family is full. The pointer stays valid for the registry's life. */
kb_series *kb_metric_get(kb_metric_family *f, const char *const *values);
/* Shorthands for families of 0, 1, 2 and 3 labels. */
kb_series *kb_metric_get0(kb_metric_family *f);
kb_series *kb_metric_get1(kb_metric_family *f, const char *a);
kb_series *kb_metric_get2(kb_metric_family *f, const char *a, const char *b);
kb_series *kb_metric_get3(kb_metric_family *f, const char *a, const char *b,
			  const char *c);

/* Updates. Each is lock-free; s NULL is a no-op. Counters only grow (add
 * takes an unsigned amount); gauges hold a double; kb_histogram_observe()
 * counts v in the first bucket whose bound is >= v and adds v to the sum.
 * Using a call on a series of another type does nothing. */
void kb_counter_add(kb_series *s, uint64_t n);
void kb_counter_inc(kb_series *s);
void kb_gauge_set(kb_series *s, double v);
void kb_gauge_add(kb_series *s, double d);
void kb_histogram_observe(kb_series *s, double v);

/* Reads back (tests, collectors): a counter's count, a gauge's value, a
 * histogram's count of observations. 0 for NULL. */
double kb_series_value(const kb_series *s);

/* Adds a callback that kb_metrics_render() calls before it writes, to set
 * gauges read at scrape time; callbacks of one registry never run
 * concurrently. Returns 0, -EINVAL, or -ENOSPC (at most 16 callbacks). */
typedef void (*kb_metrics_collect_fn)(kb_metrics *m, void *ctx);
int kb_metrics_on_collect(kb_metrics *m, kb_metrics_collect_fn fn, void *ctx);

/* The text exposition of every family (HELP, TYPE, then the samples),
 * malloc'd and NUL-terminated, with its length in *len (may be NULL).
 * NULL when out of memory or m is NULL. */
char *kb_metrics_render(kb_metrics *m, size_t *len);

/* The content type of the rendered text. */
#define KB_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Common histogram bounds, in seconds. */
extern const double kb_metrics_latency_bounds[]; /* 100 us .. 10 s, 15 */
#define KB_METRICS_LATENCY_NBOUNDS 15
extern const double kb_metrics_job_bounds[]; /* 50 ms .. 30 min, 14 */
#define KB_METRICS_JOB_NBOUNDS 14

#endif
