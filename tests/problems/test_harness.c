/* Unit tests of the device-independent harness library
 * (problems/harness/harness.c): cases, PRNG, report writer, statistics,
 * stopping rule, cost model and floor, comparisons, watchdog. */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "kb_check_main.h"

static void setup_libc(void)
{
	char err[128];
	ck_assert_int_eq(kbh_trusted_init(err, sizeof err), 0);
}

/* ---- cases -------------------------------------------------------------- */

START_TEST(case_parse_ok)
{
	struct kbh_case c;
	char err[128];
	ck_assert_int_eq(kbh_case_parse("  size: 1024; seed: 4242 \n", &c, err,
					sizeof err),
			 0);
	ck_assert_str_eq(c.spec, "size: 1024; seed: 4242");
	ck_assert_uint_eq(c.n, 2);
	ck_assert_str_eq(kbh_case_get(&c, "size"), "1024");
	ck_assert_str_eq(kbh_case_get(&c, "seed"), "4242");
	ck_assert_ptr_null(kbh_case_get(&c, "nope"));
	/* tight spacing and a trailing ';' */
	ck_assert_int_eq(kbh_case_parse("a:1;b_2:x;", &c, err, sizeof err), 0);
	ck_assert_uint_eq(c.n, 2);
	ck_assert_str_eq(kbh_case_get(&c, "b_2"), "x");
}
END_TEST

START_TEST(case_parse_bad)
{
	static const char *const bad[] = {
		"",        "   ",      "size 1",     "size: ",
		": 1",     "si ze: 1", "a: 1; a: 2", "a: 1;; b: 2",
		"a: 1: 2", "a-b: 1",   NULL};
	struct kbh_case c;
	char err[128];
	for (int i = 0; bad[i]; i++) {
		err[0] = '\0';
		ck_assert_msg(kbh_case_parse(bad[i], &c, err, sizeof err) ==
				      -EINVAL,
			      "accepted '%s'", bad[i]);
		ck_assert_msg(err[0], "no message for '%s'", bad[i]);
	}
	/* too many keys */
	char line[KBH_SPEC_MAX];
	line[0] = '\0';
	for (int i = 0; i <= KBH_CASE_KEYS; i++) {
		char kv[16];
		snprintf(kv, sizeof kv, "k%d: 1;", i);
		strcat(line, kv);
	}
	ck_assert_int_eq(kbh_case_parse(line, &c, err, sizeof err), -EINVAL);
}
END_TEST

START_TEST(case_u64)
{
	struct kbh_case c;
	char err[128];
	uint64_t v = 0;
	ck_assert_int_eq(kbh_case_parse("a: 18446744073709551615; b: 7; "
					"c: 18446744073709551616; d: -1; e: 1x",
					&c, err, sizeof err),
			 0);
	ck_assert_int_eq(
		kbh_case_u64(&c, "a", 0, UINT64_MAX, &v, err, sizeof err), 0);
	ck_assert_uint_eq(v, UINT64_MAX);
	ck_assert_int_eq(kbh_case_u64(&c, "b", 1, 7, &v, err, sizeof err), 0);
	ck_assert_uint_eq(v, 7);
	ck_assert_int_eq(kbh_case_u64(&c, "b", 8, 9, &v, err, sizeof err),
			 -ERANGE);
	ck_assert_int_eq(kbh_case_u64(&c, "c", 0, UINT64_MAX, &v, err,
				      sizeof err),
			 -ERANGE);
	ck_assert_int_eq(kbh_case_u64(&c, "d", 0, UINT64_MAX, &v, err,
				      sizeof err),
			 -EINVAL);
	ck_assert_int_eq(kbh_case_u64(&c, "e", 0, UINT64_MAX, &v, err,
				      sizeof err),
			 -EINVAL);
	ck_assert_int_eq(kbh_case_u64(&c, "z", 0, UINT64_MAX, &v, err,
				      sizeof err),
			 -ENOENT);
	static const char *const allowed[] = {"a", "b", "c", "d", "e", NULL};
	static const char *const fewer[] = {"a", "b", NULL};
	ck_assert_int_eq(kbh_case_keys_only(&c, allowed, err, sizeof err), 0);
	ck_assert_int_eq(kbh_case_keys_only(&c, fewer, err, sizeof err),
			 -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "'c'"));
}
END_TEST

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

START_TEST(cases_load)
{
	char path[] = "/tmp/kbh-cases-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	struct kbh_cases cs;
	char err[256];

	write_file(path, "# c\n\nsize: 1; seed: 2\r\n  size: 3; seed: 4\n");
	ck_assert_int_eq(kbh_cases_load(path, &cs, err, sizeof err), 0);
	ck_assert_uint_eq(cs.n, 2);
	ck_assert_str_eq(cs.v[1].spec, "size: 3; seed: 4");
	kbh_cases_free(&cs);

	write_file(path, "size: 1; seed: 2\nsize 3\n");
	ck_assert_int_eq(kbh_cases_load(path, &cs, err, sizeof err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, ":2:"));
	ck_assert_ptr_null(cs.v);

	write_file(path, "\n# nothing\n");
	ck_assert_int_eq(kbh_cases_load(path, &cs, err, sizeof err), -EINVAL);

	unlink(path);
	ck_assert_int_eq(kbh_cases_load(path, &cs, err, sizeof err), -ENOENT);
	kbh_cases_free(NULL);
}
END_TEST

START_TEST(cases_consume)
{
	char path[] = "/tmp/kbh-cases-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);

	/* Not asked: the file stays (scripts reuse cases files). */
	unsetenv(KBH_CASES_UNLINK_ENV);
	ck_assert_int_eq(kbh_cases_consume(path), 0);
	ck_assert_int_eq(access(path, F_OK), 0);
	setenv(KBH_CASES_UNLINK_ENV, "0", 1);
	ck_assert_int_eq(kbh_cases_consume(path), 0);
	ck_assert_int_eq(access(path, F_OK), 0);
	ck_assert_ptr_null(getenv(KBH_CASES_UNLINK_ENV));

	/* Asked: gone, and the request with it. */
	setenv(KBH_CASES_UNLINK_ENV, "1", 1);
	ck_assert_int_eq(kbh_cases_consume(path), 1);
	ck_assert_int_ne(access(path, F_OK), 0);
	ck_assert_ptr_null(getenv(KBH_CASES_UNLINK_ENV));
	setenv(KBH_CASES_UNLINK_ENV, "1", 1);
	ck_assert_int_eq(kbh_cases_consume(path), -ENOENT);
}
END_TEST

/* ---- PRNG --------------------------------------------------------------- */

START_TEST(seed_random)
{
	uint64_t a = 0, b = 0;
	ck_assert_int_eq(kbh_seed_random(&a), 0);
	ck_assert_int_eq(kbh_seed_random(&b), 0);
	/* 2^-64 to fail by chance. */
	ck_assert_uint_ne(a, b);
}
END_TEST

START_TEST(rng_known_values)
{
	/* splitmix64 from state 0: the reference implementation's first two
	 * outputs. */
	uint64_t st = 0;
	ck_assert_uint_eq(kbh_splitmix64(&st), 0xe220a8397b1dcdafull);
	ck_assert_uint_eq(kbh_splitmix64(&st), 0x6e789e6aa1b965f4ull);
	/* xoshiro256** from the state {1, 2, 3, 4}: reference outputs. */
	struct kbh_rng r = {{1, 2, 3, 4}};
	ck_assert_uint_eq(kbh_rng_u64(&r), 11520ull);
	ck_assert_uint_eq(kbh_rng_u64(&r), 0ull);
	ck_assert_uint_eq(kbh_rng_u64(&r), 1509978240ull);
	ck_assert_uint_eq(kbh_rng_u64(&r), 1215971899390074240ull);
}
END_TEST

START_TEST(rng_deterministic_and_ranges)
{
	struct kbh_rng a, b, c;
	kbh_rng_seed(&a, 42);
	kbh_rng_seed(&b, 42);
	kbh_rng_seed(&c, 43);
	int same_c = 0;
	for (int i = 0; i < 1000; i++) {
		uint64_t x = kbh_rng_u64(&a);
		ck_assert_uint_eq(x, kbh_rng_u64(&b));
		same_c += x == kbh_rng_u64(&c);
	}
	ck_assert_int_lt(same_c, 2);

	kbh_rng_seed(&a, 0);
	unsigned hist[10] = {0};
	for (int i = 0; i < 100000; i++) {
		float f = kbh_rng_uniformf(&a, -1.0f, 1.0f);
		ck_assert(f >= -1.0f && f < 1.0f);
		double d = kbh_rng_unit(&a);
		ck_assert(d >= 0.0 && d < 1.0);
		uint64_t k = kbh_rng_below(&a, 10);
		ck_assert_uint_lt(k, 10);
		hist[k]++;
	}
	/* 10000 expected per bucket; 5 sigma is ~475 */
	for (int k = 0; k < 10; k++)
		ck_assert_msg(hist[k] > 9500 && hist[k] < 10500,
			      "bucket %d: %u", k, hist[k]);
	ck_assert_uint_eq(kbh_rng_below(&a, 1), 0);

	/* derived seeds: distinct per stream and index, stable */
	ck_assert_uint_ne(kbh_seed_derive(1, 1, 0), kbh_seed_derive(1, 2, 0));
	ck_assert_uint_ne(kbh_seed_derive(1, 1, 0), kbh_seed_derive(1, 1, 1));
	ck_assert_uint_ne(kbh_seed_derive(1, 1, 0), kbh_seed_derive(2, 1, 0));
	ck_assert_uint_eq(kbh_seed_derive(7, 3, 9), kbh_seed_derive(7, 3, 9));
	float h = kbh_hash_unitf(5, 6);
	ck_assert(h >= 0.0f && h < 1.0f);
	ck_assert_uint_ne(kbh_hash_u64(5, 6), kbh_hash_u64(5, 7));
}
END_TEST

/* ---- report ------------------------------------------------------------- */

/* A report on a temporary file; text() reads back what was written. */
static FILE *rep_file;
static struct kbh_report *rep;

static void rep_open(void)
{
	rep_file = tmpfile();
	ck_assert_ptr_nonnull(rep_file);
	ck_assert_int_eq(kbh_report_open_fd(&rep, fileno(rep_file)), 0);
}

static const char *rep_text(void)
{
	static char buf[8192];
	fflush(rep_file);
	rewind(rep_file);
	size_t n = fread(buf, 1, sizeof buf - 1, rep_file);
	buf[n] = '\0';
	return buf;
}

static void rep_close(void)
{
	kbh_report_close(rep);
	fclose(rep_file);
	rep = NULL;
}

START_TEST(report_order_ok)
{
	rep_open();
	ck_assert_int_eq(kbh_report_test_count(rep, 2), 0);
	ck_assert_int_eq(kbh_report_test(rep, 0, "spec", "size: %d", 1), 0);
	ck_assert_int_eq(kbh_report_test(rep, 0, "status", "pass"), 0);
	ck_assert_int_eq(kbh_report_test(rep, 1, "spec", "x"), 0);
	ck_assert_int_eq(kbh_report_test(rep, 1, "status", "fail"), 0);
	ck_assert_int_eq(kbh_report_test(rep, 1, "error", "two\nlines"), 0);
	ck_assert_int_eq(kbh_report_kv(rep, "check", "fail"), 0);
	ck_assert_str_eq(rep_text(), "test-count: 2\n"
				     "test.0.spec: size: 1\n"
				     "test.0.status: pass\n"
				     "test.1.spec: x\n"
				     "test.1.status: fail\n"
				     "test.1.error: two lines\n"
				     "check: fail\n");
	ck_assert(kbh_report_ok(rep));
	rep_close();
}
END_TEST

START_TEST(report_order_violations)
{
	rep_open();
	/* index before the count */
	ck_assert_int_eq(kbh_report_bench(rep, 0, "spec", "x"), -EPROTO);
	ck_assert_int_eq(kbh_report_bench_count(rep, 2), 0);
	/* count twice */
	ck_assert_int_eq(kbh_report_bench_count(rep, 2), -EPROTO);
	/* skipping index 0 */
	ck_assert_int_eq(kbh_report_bench(rep, 1, "spec", "x"), -EPROTO);
	ck_assert_int_eq(kbh_report_bench(rep, 0, "spec", "x"), 0);
	/* same key twice */
	ck_assert_int_eq(kbh_report_bench(rep, 0, "spec", "y"), -EPROTO);
	ck_assert_int_eq(kbh_report_bench(rep, 1, "spec", "x"), 0);
	/* going back */
	ck_assert_int_eq(kbh_report_bench(rep, 0, "mean", "1"), -EPROTO);
	/* beyond the count */
	ck_assert_int_eq(kbh_report_bench(rep, 2, "spec", "x"), -EPROTO);
	/* bad sub-key, section keys through kv, duplicate top-level key */
	ck_assert_int_eq(kbh_report_bench(rep, 1, "a b", "x"), -EPROTO);
	ck_assert_int_eq(kbh_report_kv(rep, "benchmark.1.mean", "1"), -EPROTO);
	ck_assert_int_eq(kbh_report_kv(rep, "test-count", "1"), -EPROTO);
	ck_assert_int_eq(kbh_report_kv(rep, "bad key", "1"), -EPROTO);
	ck_assert_int_eq(kbh_report_kv(rep, "check", "pass"), 0);
	ck_assert_int_eq(kbh_report_kv(rep, "check", "pass"), -EPROTO);
	/* nothing of the refused calls reached the file */
	ck_assert_str_eq(rep_text(), "benchmark-count: 2\n"
				     "benchmark.0.spec: x\n"
				     "benchmark.1.spec: x\n"
				     "check: pass\n");
	rep_close();
}
END_TEST

START_TEST(report_broken_fd)
{
	int p[2];
	ck_assert_int_eq(pipe(p), 0);
	close(p[0]);
	signal(SIGPIPE, SIG_IGN);
	struct kbh_report *r;
	ck_assert_int_eq(kbh_report_open_fd(&r, p[1]), 0);
	ck_assert_int_eq(kbh_report_kv(r, "check", "pass"), -EIO);
	ck_assert(!kbh_report_ok(r));
	ck_assert_int_eq(kbh_report_test_count(r, 1), -EIO);
	kbh_report_close(r);
	close(p[1]);
	kbh_report_close(NULL);
}
END_TEST

START_TEST(report_user_started)
{
	FILE *f = tmpfile();
	struct kbh_report *r;
	char buf[256] = "";

	ck_assert_int_eq(kbh_report_open_fd(&r, fileno(f)), 0);
	ck_assert_int_eq(kbh_report_test_count(r, 1), 0);
	ck_assert_int_eq(kbh_report_test(r, 0, "spec", "n: 1"), 0);
	/* a top-level line between a test's keys, once */
	ck_assert_int_eq(kbh_report_user_started(r), 0);
	ck_assert_int_eq(kbh_report_user_started(r), -EPROTO);
	ck_assert_int_eq(kbh_report_test(r, 0, "status", "pass"), 0);
	kbh_report_close(r);
	rewind(f);
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = '\0';
	ck_assert_str_eq(buf, "test-count: 1\ntest.0.spec: n: 1\n"
			      "user-code: started\ntest.0.status: pass\n");
	fclose(f);
}
END_TEST

START_TEST(report_env)
{
	struct kbh_report *r;
	char err[128];
	unsetenv("POPCORN_FD");
	ck_assert_int_eq(kbh_report_open_env(&r, err, sizeof err), -ENOENT);
	setenv("POPCORN_FD", "12x", 1);
	ck_assert_int_eq(kbh_report_open_env(&r, err, sizeof err), -EBADF);
	setenv("POPCORN_FD", "250", 1); /* not open */
	ck_assert_int_eq(kbh_report_open_env(&r, err, sizeof err), -EBADF);
	FILE *f = tmpfile();
	char num[16];
	snprintf(num, sizeof num, "%d", fileno(f));
	setenv("POPCORN_FD", num, 1);
	ck_assert_int_eq(kbh_report_open_env(&r, err, sizeof err), 0);
	/* the submission does not get to see it */
	ck_assert_ptr_null(getenv("POPCORN_FD"));
	kbh_report_close(r);
	fclose(f);
}
END_TEST

/* ---- statistics and stopping rule --------------------------------------- */

START_TEST(stats_known)
{
	static const double x[] = {2, 4, 4, 4, 5, 5, 7, 9};
	struct kbh_stats s;
	kbh_stats_init(&s);
	ck_assert(kbh_stats_std(&s) == 0.0);
	ck_assert(isinf(kbh_stats_rel_err(&s)));
	for (int i = 0; i < 8; i++)
		kbh_stats_add(&s, x[i]);
	ck_assert_uint_eq(s.n, 8);
	ck_assert_double_eq_tol(s.mean, 5.0, 1e-12);
	ck_assert_double_eq_tol(kbh_stats_std(&s), sqrt(32.0 / 7.0), 1e-12);
	ck_assert_double_eq_tol(kbh_stats_err(&s), sqrt(32.0 / 7.0) / sqrt(8.0),
				1e-12);
	ck_assert_double_eq_tol(kbh_stats_rel_err(&s),
				sqrt(32.0 / 7.0) / sqrt(8.0) / 5.0, 1e-12);
	ck_assert(s.best == 2.0 && s.worst == 9.0 && s.total == 40.0);

	/* Welford stays exact-ish on a large offset (naive sum of squares
	 * would cancel catastrophically) */
	kbh_stats_init(&s);
	for (int i = 0; i < 1000; i++)
		kbh_stats_add(&s, 1e9 + (i % 2 ? 1.0 : -1.0));
	ck_assert_double_eq_tol(kbh_stats_std(&s), sqrt(1000.0 / 999.0), 1e-6);

	/* one sample: no spread yet */
	kbh_stats_init(&s);
	kbh_stats_add(&s, 3.0);
	ck_assert(kbh_stats_std(&s) == 0.0 && kbh_stats_err(&s) == 0.0);
	ck_assert(s.best == 3.0 && s.worst == 3.0);
}
END_TEST

START_TEST(stop_rule)
{
	struct kbh_stop_rule rule = {0.001, 10, 100, 1000000};
	struct kbh_stats s;
	kbh_stats_init(&s);
	kbh_stats_add(&s, 100.0);
	/* a single sample never converges */
	ck_assert_int_eq(kbh_stop_check(&rule, &s, 0), KBH_STOP_CONTINUE);
	/* identical samples converge, but only at min_runs */
	for (int i = 0; i < 8; i++)
		kbh_stats_add(&s, 100.0);
	ck_assert_uint_eq(s.n, 9);
	ck_assert_int_eq(kbh_stop_check(&rule, &s, 0), KBH_STOP_CONTINUE);
	kbh_stats_add(&s, 100.0);
	ck_assert_int_eq(kbh_stop_check(&rule, &s, 0), KBH_STOP_CONVERGED);

	/* noisy: +-10% alternating; rel err ~ 0.1/sqrt(n) < 0.001 needs
	 * n > 10000, so max_runs decides */
	kbh_stats_init(&s);
	for (int i = 0; i < 99; i++)
		kbh_stats_add(&s, i % 2 ? 110.0 : 90.0);
	ck_assert_int_eq(kbh_stop_check(&rule, &s, 10), KBH_STOP_CONTINUE);
	kbh_stats_add(&s, 90.0);
	ck_assert_int_eq(kbh_stop_check(&rule, &s, 10), KBH_STOP_MAX_RUNS);

	/* the time cap applies even below min_runs, once there are two
	 * samples (a spread needs two) */
	kbh_stats_init(&s);
	kbh_stats_add(&s, 5e6);
	ck_assert_int_eq(kbh_stop_check(&rule, &s, 1000000), KBH_STOP_CONTINUE);
	kbh_stats_add(&s, 6e6);
	ck_assert_int_eq(kbh_stop_check(&rule, &s, 999999), KBH_STOP_CONTINUE);
	ck_assert_int_eq(kbh_stop_check(&rule, &s, 1000000), KBH_STOP_TIME);
	/* max_runs 1 (a single-shot rule) stops at one sample */
	struct kbh_stop_rule once = {0.001, 1, 1, 0};
	kbh_stats_init(&s);
	kbh_stats_add(&s, 5.0);
	ck_assert_int_eq(kbh_stop_check(&once, &s, 0), KBH_STOP_MAX_RUNS);

	/* converged takes precedence over the caps */
	struct kbh_stop_rule tight = {0.5, 2, 2, 1};
	kbh_stats_init(&s);
	kbh_stats_add(&s, 10.0);
	kbh_stats_add(&s, 10.5);
	ck_assert_int_eq(kbh_stop_check(&tight, &s, 5), KBH_STOP_CONVERGED);
	ck_assert_str_eq(kbh_stop_name(KBH_STOP_TIME), "time-cap");
	ck_assert_str_eq(kbh_stop_name(KBH_STOP_CONVERGED), "converged");
	ck_assert_str_eq(kbh_stop_name(KBH_STOP_MAX_RUNS), "max-runs");
}
END_TEST

START_TEST(report_stats_keys)
{
	rep_open();
	struct kbh_stats s;
	kbh_stats_init(&s);
	kbh_stats_add(&s, 1000.0);
	kbh_stats_add(&s, 3000.0);
	ck_assert_int_eq(kbh_report_bench_count(rep, 1), 0);
	ck_assert_int_eq(kbh_report_stats(rep, 0, &s), 0);
	struct kbh_cost c = {4e6, 1e6};
	struct kbh_peak p = {1e11, 0};
	ck_assert_int_eq(kbh_report_cost(rep, 0, &c, &p, 2000.0), 0);
	ck_assert_str_eq(rep_text(), "benchmark-count: 1\n"
				     "benchmark.0.runs: 2\n"
				     "benchmark.0.mean: 2000.000\n"
				     "benchmark.0.std: 1414.214\n"
				     "benchmark.0.err: 1000.000\n"
				     "benchmark.0.best: 1000.000\n"
				     "benchmark.0.worst: 3000.000\n"
				     "benchmark.0.bytes: 4000000\n"
				     "benchmark.0.gbps: 2000.000\n"
				     "benchmark.0.flops: 1000000\n"
				     "benchmark.0.gflops: 500.000\n"
				     "benchmark.0.floor_ns: 40000.000\n");
	rep_close();
}
END_TEST

/* ---- cost model and floor ----------------------------------------------- */

START_TEST(cost_floor)
{
	struct kbh_cost c = {1e9, 2e12};   /* 1 GB, 2 TFLOP */
	struct kbh_peak p = {100e9, 1e15}; /* 100 GB/s, 1 PFLOP/s */
	/* bandwidth-bound: 10 ms vs 2 ms of compute */
	ck_assert_double_eq_tol(kbh_cost_floor_ns(&c, &p), 1e7, 1e-3);
	p.flops_per_s = 1e14; /* now compute-bound: 20 ms */
	ck_assert_double_eq_tol(kbh_cost_floor_ns(&c, &p), 2e7, 1e-3);
	ck_assert(kbh_cost_suspect(&c, &p, 1.9e7));
	ck_assert(!kbh_cost_suspect(&c, &p, 2e7));
	ck_assert(!kbh_cost_suspect(&c, &p, 5e7));
	/* unknown peaks: no floor, never suspect */
	struct kbh_peak none = {0, 0};
	ck_assert(kbh_cost_floor_ns(&c, &none) == 0.0);
	ck_assert(!kbh_cost_suspect(&c, &none, 1.0));
	/* only one ceiling known */
	struct kbh_peak bw = {100e9, 0};
	ck_assert_double_eq_tol(kbh_cost_floor_ns(&c, &bw), 1e7, 1e-3);
	/* undeclared work: no floor */
	struct kbh_cost zero = {0, 0};
	ck_assert(kbh_cost_floor_ns(&zero, &p) == 0.0);
	/* rates */
	ck_assert_double_eq_tol(kbh_cost_gbps(&c, 1e7), 100.0, 1e-9);
	ck_assert_double_eq_tol(kbh_cost_gflops(&c, 2e7), 1e5, 1e-6);
	ck_assert(kbh_cost_gbps(&c, 0) == 0.0);
}
END_TEST

/* ---- helpers ------------------------------------------------------------ */

START_TEST(sqrt_accuracy)
{
	static const double x[] = {1e-310, 1e-300,      2.5e-17, 0.25,
				   1.0,    2.0,         3.99999, 4.0,
				   1e10,   123456789.0, 1.7e308};
	for (size_t i = 0; i < sizeof x / sizeof x[0]; i++)
		ck_assert_msg(fabs(kbh_sqrt(x[i]) - sqrt(x[i])) <=
				      2 * 2.3e-16 * sqrt(x[i]),
			      "sqrt(%g) = %.17g, want %.17g", x[i],
			      kbh_sqrt(x[i]), sqrt(x[i]));
	ck_assert(kbh_sqrt(0.0) == 0.0);
	ck_assert(isnan(kbh_sqrt(-1.0)));
	ck_assert(isnan(kbh_sqrt(NAN)));
	ck_assert(isinf(kbh_sqrt(INFINITY)));
}
END_TEST

START_TEST(poison_diff_compare)
{
	float f[4] = {1, 2, 3, 4}, g[4];
	kbh_copy(g, f, sizeof f);
	ck_assert_uint_eq(kbh_first_diff(f, g, sizeof f), sizeof f);
	g[3] = 5; /* 4.0f and 5.0f first differ in byte 2 (little-endian) */
	ck_assert_uint_eq(kbh_first_diff(f, g, sizeof f), 14);
	unsigned char a[19] = {0}, b[19] = {0};
	b[18] = 1;
	ck_assert_uint_eq(kbh_first_diff(a, b, 19), 18);
	ck_assert_uint_eq(kbh_first_diff(a, b, 0), 0);

	kbh_poison(g, sizeof g);
	for (int i = 0; i < 4; i++)
		ck_assert(isnan(g[i]));
	double d;
	kbh_poison(&d, sizeof d);
	ck_assert(isnan(d));

	struct kbh_mismatch m;
	float want[4] = {1, 2, 3, 4};
	ck_assert_uint_eq(kbh_compare_f32(f, want, 4, 0, 0, &m), 0);
	ck_assert_uint_eq(kbh_compare_f32(g, want, 4, 1, 1, &m), 4);
	ck_assert_uint_eq(m.index, 0);
	float near[4] = {1.0001f, 2, 3, 4.1f};
	ck_assert_uint_eq(kbh_compare_f32(near, want, 4, 1e-3, 0, &m), 1);
	ck_assert_uint_eq(m.index, 3);
	ck_assert_double_eq_tol(m.tol, 4e-3, 1e-12);
}
END_TEST

START_TEST(clock_and_modes)
{
	/* CLOCK_MONOTONIC in ns: read between two readings of that clock,
	 * whatever the load between them. */
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	uint64_t a = kbh_now_ns();
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ck_assert_uint_ge(a, (uint64_t)t0.tv_sec * 1000000000u +
				     (uint64_t)t0.tv_nsec);
	ck_assert_uint_le(a, (uint64_t)t1.tv_sec * 1000000000u +
				     (uint64_t)t1.tv_nsec);
	usleep(2000);
	uint64_t b = kbh_now_ns();
	ck_assert_uint_ge(b - a, 2000000);
	ck_assert_int_eq(kbh_trusted_direct(), 0); /* libc was found */
	enum kbh_mode m;
	ck_assert_int_eq(kbh_mode_parse("leaderboard", &m), 0);
	ck_assert_int_eq(m, KBH_MODE_LEADERBOARD);
	ck_assert_str_eq(kbh_mode_name(KBH_MODE_PROFILE), "profile");
	ck_assert_int_eq(kbh_mode_parse("Test", &m), -EINVAL);
	ck_assert_int_eq(kbh_mode_parse(NULL, &m), -EINVAL);
}
END_TEST

START_TEST(watchdog_exits_114)
{
	kbh_watchdog_arm(1);
	for (;;)
		pause();
}
END_TEST

START_TEST(watchdog_disarm)
{
	kbh_watchdog_arm(1);
	kbh_watchdog_arm(0);
	sleep(2);
}
END_TEST

static Suite *harness_suite(void)
{
	Suite *s = suite_create("problems_harness");
	TCase *t = tcase_create("core");
	tcase_add_checked_fixture(t, setup_libc, NULL);
	tcase_add_test(t, case_parse_ok);
	tcase_add_test(t, case_parse_bad);
	tcase_add_test(t, case_u64);
	tcase_add_test(t, cases_load);
	tcase_add_test(t, cases_consume);
	tcase_add_test(t, seed_random);
	tcase_add_test(t, report_user_started);
	tcase_add_test(t, rng_known_values);
	tcase_add_test(t, rng_deterministic_and_ranges);
	tcase_add_test(t, report_order_ok);
	tcase_add_test(t, report_order_violations);
	tcase_add_test(t, report_broken_fd);
	tcase_add_test(t, report_env);
	tcase_add_test(t, stats_known);
	tcase_add_test(t, stop_rule);
	tcase_add_test(t, report_stats_keys);
	tcase_add_test(t, cost_floor);
	tcase_add_test(t, sqrt_accuracy);
	tcase_add_test(t, poison_diff_compare);
	tcase_add_test(t, clock_and_modes);
	tcase_add_exit_test(t, watchdog_exits_114, KBH_EXIT_TIMEOUT);
	tcase_add_test(t, watchdog_disarm);
	tcase_set_timeout(t, 20);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return kb_check_run(harness_suite());
}
