/* kb_popcorn: the harness report parser, every error class, and means. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kb_popcorn.h"
#include "kb_check_main.h"

/* Substring checks that print both strings when they fail. */
#define ck_assert_contains(hay, needle)                                        \
	ck_assert_msg(strstr((hay), (needle)) != NULL,                         \
		      "'%s' does not contain '%s'", (hay), (needle))
#define ck_assert_not_contains(hay, needle)                                    \
	ck_assert_msg(strstr((hay), (needle)) == NULL, "'%s' contains '%s'",   \
		      (hay), (needle))

static int parse(const char *s, struct kb_popcorn *p, char *err, size_t n)
{
	return kb_popcorn_parse(s, strlen(s), p, err, n);
}

START_TEST(good_test_report)
{
	const char *r = "test-count: 2\n"
			"test.0.spec: size: 127; seed: 4242\n"
			"test.0.status: pass\n"
			"test.1.spec: size: 128\n"
			"test.1.status: fail\n"
			"test.1.error: mismatch at 3: 1.0 vs 2.0\n"
			"test.1.message: \n"
			"check: fail\n";
	struct kb_popcorn p;
	char err[256] = "";

	ck_assert_int_eq(parse(r, &p, err, sizeof(err)), 0);
	ck_assert_str_eq(err, "");
	ck_assert_uint_eq(p.n, 8);
	ck_assert_int_eq(p.check, 0);
	ck_assert_int_eq(p.test_count, 2);
	ck_assert_int_eq(p.benchmark_count, -1);
	/* The value is everything after the first ": ". */
	ck_assert_str_eq(kb_popcorn_get(&p, "test.0.spec"),
			 "size: 127; seed: 4242");
	ck_assert_str_eq(kb_popcorn_get(&p, "test.1.error"),
			 "mismatch at 3: 1.0 vs 2.0");
	ck_assert_str_eq(kb_popcorn_get(&p, "test.1.message"), "");
	ck_assert_ptr_null(kb_popcorn_get(&p, "test.2.spec"));
	/* Report order is kept. */
	ck_assert_str_eq(p.kv[0].key, "test-count");
	ck_assert_str_eq(p.kv[7].key, "check");
	kb_popcorn_clear(&p);
	ck_assert_uint_eq(p.n, 0);
	ck_assert_int_eq(p.check, -1);
}
END_TEST

START_TEST(good_benchmark_report_no_final_newline)
{
	const char *r = "benchmark-count: 2\n"
			"benchmark.0.spec: size: 1024\n"
			"benchmark.0.runs: 100\n"
			"benchmark.0.mean: 1500.5\n"
			"benchmark.1.spec: size: 2048\n"
			"benchmark.1.mean: 3e3\n"
			"gpu.name: H100\n"
			"check: pass";
	struct kb_popcorn p;
	char err[256] = "";
	double *m = NULL;

	ck_assert_int_eq(parse(r, &p, err, sizeof(err)), 0);
	ck_assert_int_eq(p.check, 1);
	ck_assert_int_eq(p.benchmark_count, 2);
	ck_assert_int_eq(p.test_count, -1);
	ck_assert_str_eq(kb_popcorn_get(&p, "check"), "pass");
	ck_assert_str_eq(kb_popcorn_get(&p, "gpu.name"), "H100");
	ck_assert_int_eq(kb_popcorn_means(&p, &m), 2);
	ck_assert_double_eq_tol(m[0], 1500.5, 1e-9);
	ck_assert_double_eq_tol(m[1], 3000.0, 1e-9);
	free(m);
	kb_popcorn_clear(&p);
}
END_TEST

START_TEST(empty_report)
{
	struct kb_popcorn p;
	char err[256] = "";
	double *m = (double *)1;

	ck_assert_int_eq(kb_popcorn_parse("", 0, &p, err, sizeof(err)), 0);
	ck_assert_uint_eq(p.n, 0);
	ck_assert_int_eq(p.check, -1);
	ck_assert_int_eq(p.test_count, -1);
	ck_assert_int_eq(kb_popcorn_means(&p, &m), -EINVAL);
	ck_assert_ptr_null(m);
	kb_popcorn_clear(&p);
}
END_TEST

START_TEST(fewer_indices_than_count)
{
	/* A harness that stops at the first failing benchmark. */
	const char *r = "benchmark-count: 3\n"
			"benchmark.0.spec: a: 1\n"
			"benchmark.0.status: fail\n"
			"check: fail\n";
	struct kb_popcorn p;
	char err[256] = "";
	double *m;

	ck_assert_int_eq(parse(r, &p, err, sizeof(err)), 0);
	ck_assert_int_eq(p.benchmark_count, 3);
	ck_assert_int_eq(kb_popcorn_means(&p, &m), -EINVAL);
	kb_popcorn_clear(&p);
}
END_TEST

struct bad {
	const char *report;
	const char *needle;
};

static const struct bad bad_reports[] = {
	/* missing ": " */
	{"check: pass\nnonsense\n", "line 2: no \": \""},
	{"check:pass\n", "line 1: no \": \""},
	{"check: pass\n\n", "line 2: no \": \""}, /* empty line */
	{"check:\n", "no \": \""},
	/* empty or bad key */
	{": pass\n", "line 1: empty key"},
	{"my key: 1\n", "is not [A-Za-z0-9_.-]+"},
	/* duplicate keys */
	{"check: pass\ncheck: pass\n", "'check' given twice"},
	{"foo: 1\nbar: 2\nfoo: 3\n", "'foo' given twice"},
	{"test-count: 1\ntest.0.spec: a\ntest.0.spec: b\n",
	 "'test.0.spec' given twice"},
	{"test-count: 1\ntest-count: 1\n", "'test-count' given twice"},
	/* bad values */
	{"check: ok\n", "check is 'ok'"},
	{"check: pass \n", "check is 'pass '"},
	{"check: pass\r\n", "check is"},
	{"test-count: -1\n", "is not a count"},
	{"test-count: 01\n", "is not a count"},
	{"test-count: two\n", "is not a count"},
	{"benchmark-count: 100001\n", "is not a count"},
	/* indices */
	{"test.0.spec: a\n", "comes before test-count"},
	{"test-count: 1\ntest.1.spec: a\n", "not below test-count 1"},
	{"test-count: 3\ntest.1.spec: a\n", "out of order"},
	{"test-count: 3\ntest.0.spec: a\ntest.2.spec: a\n", "out of order"},
	{"test-count: 3\ntest.0.a: 1\ntest.1.a: 1\ntest.0.b: 1\n",
	 "line 4: index 0 of 'test.0.b' is out of order"},
	{"test-count: 3\ntest.00.spec: a\n", "bad index"},
	{"test-count: 3\ntest.x.spec: a\n", "bad index"},
	{"test-count: 3\ntest.0\n", "no \": \""},
	{"test-count: 3\ntest.0: a\n", "is not test.<i>.<field>"},
	{"test-count: 3\ntest.0.: a\n", "is not test.<i>.<field>"},
	{"benchmark-count: 1\nbenchmark.0.mean: 1\nbenchmark.1.mean: 2\n",
	 "not below benchmark-count"},
	{"benchmark.0.mean: 1\n", "comes before benchmark-count"},
};

START_TEST(bad_report)
{
	const struct bad *b = &bad_reports[_i];
	struct kb_popcorn p;
	char err[256] = "";

	ck_assert_int_eq(parse(b->report, &p, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, b->needle), "report %d: want '%s' in '%s'",
		      _i, b->needle, err);
	/* Nothing is left behind on error. */
	ck_assert_uint_eq(p.n, 0);
	ck_assert_ptr_null(p.kv);
	ck_assert_int_eq(p.check, -1);
}
END_TEST

START_TEST(binary_report)
{
	struct kb_popcorn p;
	char err[256] = "";

	ck_assert_int_eq(kb_popcorn_parse("check: pass\0x\n", 14, &p, err,
					  sizeof(err)),
			 -EINVAL);
	ck_assert_contains(err, "UTF-8");
	ck_assert_int_eq(kb_popcorn_parse("msg: \xFF\n", 7, &p, err,
					  sizeof(err)),
			 -EINVAL);
	ck_assert_contains(err, "UTF-8");
}
END_TEST

static int means_of(const char *r, double **m)
{
	struct kb_popcorn p;
	char err[256];
	int rc;

	ck_assert_int_eq(parse(r, &p, err, sizeof(err)), 0);
	rc = kb_popcorn_means(&p, m);
	kb_popcorn_clear(&p);
	return rc;
}

START_TEST(means_errors)
{
	double *m = NULL;

	ck_assert_int_eq(means_of("benchmark-count: 0\n", &m), -EINVAL);
	ck_assert_int_eq(means_of("benchmark-count: 1\n", &m), -EINVAL);
	ck_assert_int_eq(means_of("benchmark-count: 1\n"
				  "benchmark.0.mean: \n",
				  &m),
			 -EINVAL);
	ck_assert_int_eq(means_of("benchmark-count: 1\n"
				  "benchmark.0.mean: fast\n",
				  &m),
			 -EINVAL);
	ck_assert_int_eq(means_of("benchmark-count: 1\n"
				  "benchmark.0.mean: 12ns\n",
				  &m),
			 -EINVAL);
	ck_assert_int_eq(means_of("benchmark-count: 1\n"
				  "benchmark.0.mean: 0\n",
				  &m),
			 -EINVAL);
	ck_assert_int_eq(means_of("benchmark-count: 1\n"
				  "benchmark.0.mean: -5\n",
				  &m),
			 -EINVAL);
	ck_assert_int_eq(means_of("benchmark-count: 1\n"
				  "benchmark.0.mean: nan\n",
				  &m),
			 -EINVAL);
	ck_assert_int_eq(means_of("benchmark-count: 1\n"
				  "benchmark.0.mean: inf\n",
				  &m),
			 -EINVAL);
	ck_assert_int_eq(means_of("benchmark-count: 1\n"
				  "benchmark.0.mean: 1e999\n",
				  &m),
			 -EINVAL);
	ck_assert_int_eq(means_of("benchmark-count: 1\n"
				  "benchmark.0.mean:  5\n",
				  &m),
			 -EINVAL);
	ck_assert_ptr_null(m);
	/* The second of two is missing. */
	ck_assert_int_eq(means_of("benchmark-count: 2\n"
				  "benchmark.0.mean: 5\n",
				  &m),
			 -EINVAL);
	ck_assert_int_eq(means_of("benchmark-count: 1\n"
				  "benchmark.0.mean: .5\n",
				  &m),
			 1);
	ck_assert_double_eq_tol(m[0], 0.5, 1e-12);
	free(m);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("popcorn");
	TCase *tc = tcase_create("popcorn");

	tcase_add_test(tc, good_test_report);
	tcase_add_test(tc, good_benchmark_report_no_final_newline);
	tcase_add_test(tc, empty_report);
	tcase_add_test(tc, fewer_indices_than_count);
	tcase_add_loop_test(tc, bad_report, 0,
			    sizeof(bad_reports) / sizeof(bad_reports[0]));
	tcase_add_test(tc, binary_report);
	tcase_add_test(tc, means_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kb_check_run(suite());
}
