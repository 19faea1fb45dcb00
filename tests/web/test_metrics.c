/* kb_metrics: the registry, lock-free updates from many threads, the text
 * exposition (checked line by line against the format's rules), the
 * series cap, and the /metrics listener over loopback. */
#include <check.h>
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kb_check_main.h"
#include "kb_metrics.h"
#include "kb_metrics_process.h"
#include "kb_metrics_http.h"
#include "kb_testenv.h"

/* The line of text that starts with prefix, or NULL. */
static const char *line_of(const char *text, const char *prefix)
{
	size_t n = strlen(prefix);

	for (const char *p = text; p && *p;) {
		if (strncmp(p, prefix, n) == 0)
			return p;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return NULL;
}

static double sample(const char *text, const char *series)
{
	char prefix[256];
	snprintf(prefix, sizeof(prefix), "%s ", series);
	const char *l = line_of(text, prefix);
	ck_assert_msg(l != NULL, "no sample %s in:\n%s", series, text);
	return strtod(l + strlen(prefix), NULL);
}

START_TEST(counter_gauge_histogram_render)
{
	kb_metrics *m = kb_metrics_new();
	static const double b[] = {0.1, 1, 10};
	kb_metric_family *req = kb_metrics_counter(m, "kb_test_requests_total",
						   "Requests.", "route,code");
	kb_metric_family *up = kb_metrics_gauge(m, "kb_test_up", "Up.", NULL);
	kb_metric_family *lat = kb_metrics_histogram(m, "kb_test_seconds",
						     "Latency.", "route", b, 3);

	ck_assert_ptr_nonnull(req);
	ck_assert_ptr_nonnull(up);
	ck_assert_ptr_nonnull(lat);
	kb_counter_inc(kb_metric_get2(req, "health", "200"));
	kb_counter_add(kb_metric_get2(req, "health", "200"), 2);
	kb_counter_inc(kb_metric_get2(req, "submit", "429"));
	kb_gauge_set(kb_metric_get0(up), 1.5);
	kb_gauge_add(kb_metric_get0(up), -0.5);
	kb_series *h = kb_metric_get1(lat, "health");
	kb_histogram_observe(h, 0.05);
	kb_histogram_observe(h, 0.1); /* on the bound: le="0.1" */
	kb_histogram_observe(h, 5);
	kb_histogram_observe(h, 50);

	char *t = kb_metrics_render(m, NULL);
	ck_assert_ptr_nonnull(t);
	ck_assert_ptr_nonnull(
		line_of(t, "# HELP kb_test_requests_total Requests.\n"));
	ck_assert_ptr_nonnull(
		line_of(t, "# TYPE kb_test_requests_total counter\n"));
	ck_assert_ptr_nonnull(line_of(t, "# TYPE kb_test_up gauge\n"));
	ck_assert_ptr_nonnull(line_of(t, "# TYPE kb_test_seconds histogram\n"));
	ck_assert_double_eq(
		sample(t,
		       "kb_test_requests_total{route=\"health\",code=\"200\"}"),
		3);
	ck_assert_double_eq(
		sample(t,
		       "kb_test_requests_total{route=\"submit\",code=\"429\"}"),
		1);
	ck_assert_double_eq(sample(t, "kb_test_up"), 1);
	/* Buckets are cumulative and end with +Inf == _count. */
	ck_assert_double_eq(
		sample(t,
		       "kb_test_seconds_bucket{route=\"health\",le=\"0.1\"}"),
		2);
	ck_assert_double_eq(
		sample(t, "kb_test_seconds_bucket{route=\"health\",le=\"1\"}"),
		2);
	ck_assert_double_eq(
		sample(t, "kb_test_seconds_bucket{route=\"health\",le=\"10\"}"),
		3);
	ck_assert_double_eq(
		sample(t,
		       "kb_test_seconds_bucket{route=\"health\",le=\"+Inf\"}"),
		4);
	ck_assert_double_eq(
		sample(t, "kb_test_seconds_count{route=\"health\"}"), 4);
	ck_assert_double_eq_tol(sample(t,
				       "kb_test_seconds_sum{route=\"health\"}"),
				55.15, 1e-9);
	/* Every line is a comment or "name[{labels}] value". */
	for (char *save = NULL, *l = strtok_r(t, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		if (l[0] == '#')
			continue;
		char *sp = strrchr(l, ' ');
		ck_assert_msg(sp && sp > l, "bad line %s", l);
		char *end;
		strtod(sp + 1, &end);
		ck_assert_msg(*end == '\0' || strcmp(sp + 1, "+Inf") == 0,
			      "bad value in %s", l);
	}
	free(t);
	kb_metrics_destroy(m);
}
END_TEST

/* kb_metrics_process: the standard process metrics, read at the scrape,
 * and the build info. */
START_TEST(process_metrics)
{
	kb_metrics *m = kb_metrics_new();
	static const double b[] = {0.05, 0.25, 2.5};
	kb_metric_family *h = kb_metrics_histogram(m, "kb_test_job_seconds",
						   "Jobs.", NULL, b, 3);

	kb_histogram_observe(kb_metric_get0(h), 0.3);
	ck_assert_int_eq(kb_metrics_process(m, "test"), 0);
	char *t = kb_metrics_render(m, NULL);
	ck_assert_ptr_nonnull(t);
	double start = sample(t, "process_start_time_seconds");
	ck_assert_msg(start > 1e9 && start <= (double)time(NULL) + 1, "%s", t);
	ck_assert_msg(sample(t, "process_resident_memory_bytes") > 0, "%s", t);
	ck_assert_msg(sample(t, "process_virtual_memory_bytes") > 0, "%s", t);
	ck_assert_msg(sample(t, "process_open_fds") >= 3, "%s", t);
	ck_assert_msg(sample(t, "process_max_fds") >= 3, "%s", t);
	ck_assert_ptr_nonnull(line_of(t, "# TYPE kb_build_info gauge\n"));
	ck_assert_ptr_nonnull(
		strstr(t, "kb_build_info{service=\"test\",revision=\""));
	/* Bounds print as written: a query for {le="0.05"} finds them. */
	ck_assert_ptr_nonnull(
		strstr(t, "kb_test_job_seconds_bucket{le=\"0.05\"} 0\n"));
	ck_assert_ptr_nonnull(
		strstr(t, "kb_test_job_seconds_bucket{le=\"0.25\"} 0\n"));
	ck_assert_ptr_nonnull(strstr(t, "kb_test_job_seconds_sum 0.3\n"));
	free(t);
	kb_metrics_destroy(m);
}
END_TEST

START_TEST(label_values_are_escaped)
{
	kb_metrics *m = kb_metrics_new();
	kb_metric_family *f =
		kb_metrics_counter(m, "kb_test_total", "a \\ b\nc", "v");

	kb_counter_inc(kb_metric_get1(f, "q\"u\\o\nte"));
	char *t = kb_metrics_render(m, NULL);
	ck_assert_ptr_nonnull(
		line_of(t, "# HELP kb_test_total a \\\\ b\\nc\n"));
	ck_assert_double_eq(sample(t, "kb_test_total{v=\"q\\\"u\\\\o\\nte\"}"),
			    1);
	free(t);
	kb_metrics_destroy(m);
}
END_TEST

START_TEST(registration_rules)
{
	kb_metrics *m = kb_metrics_new();
	static const double bad[] = {1, 1};
	kb_metric_family *a = kb_metrics_counter(m, "kb_x_total", "x", "a,b");

	ck_assert_ptr_eq(kb_metrics_counter(m, "kb_x_total", "x", "a,b"), a);
	ck_assert_ptr_null(kb_metrics_counter(m, "kb_x_total", "x", "a"));
	ck_assert_ptr_null(kb_metrics_gauge(m, "kb_x_total", "x", "a,b"));
	ck_assert_ptr_null(kb_metrics_counter(m, "1bad", "x", NULL));
	ck_assert_ptr_null(kb_metrics_counter(m, "kb_y", "x", "le"));
	ck_assert_ptr_null(kb_metrics_counter(m, "kb_y", "x", "a,,b"));
	ck_assert_ptr_null(kb_metrics_histogram(m, "kb_h", "x", NULL, bad, 2));
	/* NULL everywhere is a no-op. */
	ck_assert_ptr_null(kb_metrics_counter(NULL, "kb_z", "x", NULL));
	ck_assert_ptr_null(kb_metric_get1(NULL, "v"));
	ck_assert_ptr_null(kb_metric_get2(a, "v", NULL));
	kb_counter_inc(NULL);
	kb_gauge_set(NULL, 1);
	kb_histogram_observe(NULL, 1);
	/* A call of another type does nothing. */
	kb_series *s = kb_metric_get2(a, "1", "2");
	kb_gauge_set(s, 5);
	ck_assert_double_eq(kb_series_value(s), 0);
	kb_metrics_destroy(m);
}
END_TEST

START_TEST(series_cap_drops_and_counts)
{
	kb_metrics *m = kb_metrics_new();
	kb_metric_family *f = kb_metrics_counter(m, "kb_cap_total", "x", "k");
	char v[32];

	for (int i = 0; i < KB_METRICS_MAX_SERIES; i++) {
		snprintf(v, sizeof(v), "%d", i);
		ck_assert_ptr_nonnull(kb_metric_get1(f, v));
	}
	ck_assert_ptr_null(kb_metric_get1(f, "one-too-many"));
	/* Existing series are still found. */
	ck_assert_ptr_nonnull(kb_metric_get1(f, "7"));
	char *t = kb_metrics_render(m, NULL);
	ck_assert_double_eq(
		sample(t,
		       "kb_metrics_series_dropped_total{metric=\"kb_cap_total\"}"),
		1);
	free(t);
	kb_metrics_destroy(m);
}
END_TEST

#define THREADS 4
#define ROUNDS 100000

struct hammer {
	kb_metric_family *c, *h;
};

static void *hammer_main(void *arg)
{
	struct hammer *hm = arg;
	char code[8];

	for (int i = 0; i < ROUNDS; i++) {
		snprintf(code, sizeof(code), "%d", 200 + i % 5);
		kb_counter_inc(kb_metric_get2(hm->c, "r", code));
		kb_histogram_observe(kb_metric_get1(hm->h, "r"), 0.001);
	}
	return NULL;
}

START_TEST(concurrent_updates_lose_nothing)
{
	kb_metrics *m = kb_metrics_new();
	struct hammer hm = {
		kb_metrics_counter(m, "kb_c_total", "x", "route,code"),
		kb_metrics_histogram(m, "kb_h_seconds", "x", "route",
				     kb_metrics_latency_bounds,
				     KB_METRICS_LATENCY_NBOUNDS),
	};
	pthread_t th[THREADS];

	for (int i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, hammer_main, &hm);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	double total = 0;
	for (int c = 200; c < 205; c++) {
		char code[8];
		snprintf(code, sizeof(code), "%d", c);
		total += kb_series_value(kb_metric_get2(hm.c, "r", code));
	}
	ck_assert_double_eq(total, THREADS * ROUNDS);
	ck_assert_double_eq(kb_series_value(kb_metric_get1(hm.h, "r")),
			    THREADS * ROUNDS);
	char *t = kb_metrics_render(m, NULL);
	ck_assert_double_eq_tol(sample(t, "kb_h_seconds_sum{route=\"r\"}"),
				THREADS * ROUNDS * 0.001, 1e-6);
	free(t);
	kb_metrics_destroy(m);
}
END_TEST

static void collect(kb_metrics *m, void *ctx)
{
	int *calls = ctx;
	kb_gauge_set(
		kb_metric_get0(kb_metrics_gauge(m, "kb_collected", "x", NULL)),
		++*calls);
}

START_TEST(collectors_run_per_render)
{
	kb_metrics *m = kb_metrics_new();
	int calls = 0;

	ck_assert_int_eq(kb_metrics_on_collect(m, collect, &calls), 0);
	free(kb_metrics_render(m, NULL));
	char *t = kb_metrics_render(m, NULL);
	ck_assert_double_eq(sample(t, "kb_collected"), 2);
	free(t);
	kb_metrics_destroy(m);
}
END_TEST

struct membuf {
	char *data;
	size_t len;
};

static size_t collect_body(void *p, size_t size, size_t n, void *ud)
{
	struct membuf *b = ud;
	b->data = realloc(b->data, b->len + size * n + 1);
	memcpy(b->data + b->len, p, size * n);
	b->len += size * n;
	b->data[b->len] = '\0';
	return size * n;
}

static long get(const char *url, char **body, char *ctype, size_t ctype_size)
{
	CURL *c = curl_easy_init();
	struct membuf b = {calloc(1, 1), 0};
	long code = -1;
	char *ct = NULL;

	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
	if (curl_easy_perform(c) == CURLE_OK) {
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
		curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct);
		if (ctype)
			snprintf(ctype, ctype_size, "%s", ct ? ct : "");
	}
	curl_easy_cleanup(c);
	*body = b.data;
	return code;
}

START_TEST(listener_serves_metrics)
{
	kb_metrics *m = kb_metrics_new();
	char err[256], url[96], ctype[128];
	char *body = NULL;
	int port = 0;
	kb_metrics_server *s = NULL;

	kb_counter_inc(
		kb_metric_get0(kb_metrics_counter(m, "kb_l_total", "x", NULL)));
	/* A fixed pick may be held by another test's server: pick again. */
	for (int tries = 0; !s && tries < 10; tries++) {
		port = kb_test_fixed_port();
		s = kb_metrics_serve(m, "127.0.0.1", port, err, sizeof(err));
	}
	ck_assert_msg(s != NULL, "%s", err);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", port);
	ck_assert_int_eq(get(url, &body, ctype, sizeof(ctype)), 200);
	ck_assert_str_eq(ctype, KB_METRICS_CONTENT_TYPE);
	ck_assert_double_eq(sample(body, "kb_l_total"), 1);
	free(body);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/other", port);
	ck_assert_int_eq(get(url, &body, NULL, 0), 404);
	free(body);
	kb_metrics_server_stop(s);
	ck_assert_ptr_null(
		kb_metrics_serve(m, "not-an-address", port, err, sizeof(err)));
	kb_metrics_destroy(m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("web_metrics");
	TCase *tc = tcase_create("metrics");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, counter_gauge_histogram_render);
	tcase_add_test(tc, process_metrics);
	tcase_add_test(tc, label_values_are_escaped);
	tcase_add_test(tc, registration_rules);
	tcase_add_test(tc, series_cap_drops_and_counts);
	tcase_add_test(tc, concurrent_updates_lose_nothing);
	tcase_add_test(tc, collectors_run_per_render);
	tcase_add_test(tc, listener_serves_metrics);
	suite_add_tcase(s, tc);
	return kb_check_run(s);
}
