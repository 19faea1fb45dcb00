/* kb_score: score folding and run classification. */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kb_score.h"
#include "kb_check_main.h"

START_TEST(combine_last_mean_geom)
{
	const double ns[] = {1000.0, 4000.0, 2000.0};
	double s = -1;

	ck_assert_int_eq(kb_score_combine("last", ns, 3, &s), 0);
	ck_assert_double_eq_tol(s, 2e-6, 1e-15);
	ck_assert_int_eq(kb_score_combine("mean", ns, 3, &s), 0);
	ck_assert_double_eq_tol(s, 7000.0 / 3 * 1e-9, 1e-15);
	/* cbrt(1000 * 4000 * 2000) = cbrt(8e9) = 2000 ns. */
	ck_assert_int_eq(kb_score_combine("geom", ns, 3, &s), 0);
	ck_assert_double_eq_tol(s, 2e-6, 1e-15);
	/* A single mean is itself under every rule. */
	ck_assert_int_eq(kb_score_combine("geom", ns, 1, &s), 0);
	ck_assert_double_eq_tol(s, 1e-6, 1e-15);
}
END_TEST

START_TEST(combine_geom_no_overflow)
{
	/* The product of these overflows a double; the mean of the logs
	 * does not. */
	double ns[200];
	double s = 0;

	for (int i = 0; i < 200; i++)
		ns[i] = 1e300;
	ck_assert_int_eq(kb_score_combine("geom", ns, 200, &s), 0);
	ck_assert_double_eq_tol(s / 1e291, 1.0, 1e-9);
}
END_TEST

START_TEST(combine_errors)
{
	const double ok[] = {1.0, 2.0};
	const double zero[] = {1.0, 0.0};
	const double neg[] = {-1.0};
	const double bad_nan[] = {NAN};
	const double bad_inf[] = {INFINITY};
	double s = 42;

	ck_assert_int_eq(kb_score_combine("median", ok, 2, &s), -EINVAL);
	ck_assert_int_eq(kb_score_combine(NULL, ok, 2, &s), -EINVAL);
	ck_assert_int_eq(kb_score_combine("", ok, 2, &s), -EINVAL);
	ck_assert_int_eq(kb_score_combine("last", ok, 0, &s), -EINVAL);
	ck_assert_int_eq(kb_score_combine("last", NULL, 0, &s), -EINVAL);
	ck_assert_int_eq(kb_score_combine("mean", zero, 2, &s), -EINVAL);
	ck_assert_int_eq(kb_score_combine("last", neg, 1, &s), -EINVAL);
	ck_assert_int_eq(kb_score_combine("geom", bad_nan, 1, &s), -EINVAL);
	ck_assert_int_eq(kb_score_combine("mean", bad_inf, 1, &s), -EINVAL);
	/* "last" still checks the earlier means. */
	ck_assert_int_eq(kb_score_combine("last", zero + 1, 1, &s), -EINVAL);
	ck_assert_double_eq(s, 42); /* untouched on error */
}
END_TEST

struct cls {
	int signaled, exit_code, timed_out, report_ok, check;
	enum kb_run_end want;
};

static const struct cls classes[] = {
	{0, 0, 0, 1, 1, KB_RUN_OK},
	{0, 0, 0, 1, 0, KB_RUN_FAILED},
	/* exit 0 without a trustworthy pass: the submission may have
	 * called exit(0) early. */
	{0, 0, 0, 0, -1, KB_RUN_CRASHED},
	{0, 0, 0, 0, 1, KB_RUN_CRASHED},
	{0, 0, 0, 1, -1, KB_RUN_CRASHED},
	{0, 112, 0, 1, 0, KB_RUN_FAILED},
	{0, 112, 0, 0, -1, KB_RUN_FAILED},
	{0, 112, 0, 1, 1, KB_RUN_FAILED},
	{0, 114, 0, 1, -1, KB_RUN_TIMEOUT},
	{0, 2, 0, 0, -1, KB_RUN_INFRA},
	{0, 110, 0, 0, -1, KB_RUN_INFRA},
	{0, 111, 0, 0, -1, KB_RUN_INFRA},
	{0, 113, 0, 1, -1, KB_RUN_INFRA},
	{0, 1, 0, 1, 1, KB_RUN_CRASHED},
	{0, 139, 0, 0, -1, KB_RUN_CRASHED},
	{0, 255, 0, 0, -1, KB_RUN_CRASHED},
	{1, 0, 0, 1, 1, KB_RUN_CRASHED},  /* SIGSEGV after a pass line */
	{1, 9, 1, 0, -1, KB_RUN_TIMEOUT}, /* our SIGKILL at the limit */
	{0, 0, 1, 1, 1, KB_RUN_TIMEOUT},  /* limit beats a late pass */
	{0, 110, 1, 0, -1, KB_RUN_TIMEOUT},
};

START_TEST(classify_table)
{
	const struct cls *c = &classes[_i];

	ck_assert_int_eq(kb_run_classify(c->signaled, c->exit_code,
					 c->timed_out, c->report_ok, c->check),
			 c->want);
}
END_TEST

START_TEST(user_started_line)
{
	static const char ok[] = "system.device: H100\ntest-count: 1\n"
				 "test.0.spec: n: 1\nuser-code: started\n";
	static const char last[] = "test-count: 1\nuser-code: started";
	static const char garbled[] = "user-code: started\n\x01\xff no colon\n";

	ck_assert_int_eq(kb_run_user_started(ok, sizeof(ok) - 1), 1);
	ck_assert_int_eq(kb_run_user_started(last, sizeof(last) - 1), 1);
	ck_assert_int_eq(kb_run_user_started(garbled, sizeof(garbled) - 1), 1);
	/* Only the exact line. */
	ck_assert_int_eq(kb_run_user_started("user-code: started \n", 20), 0);
	ck_assert_int_eq(kb_run_user_started("xuser-code: started\n", 20), 0);
	ck_assert_int_eq(kb_run_user_started("user-code: starte", 17), 0);
	ck_assert_int_eq(kb_run_user_started("test.0.user-code: started\n", 26),
			 0);
	/* The length bounds the search. */
	ck_assert_int_eq(kb_run_user_started(ok, 20), 0);
	ck_assert_int_eq(kb_run_user_started(NULL, 0), 0);
	ck_assert_int_eq(kb_run_user_started("", 0), 0);
}
END_TEST

START_TEST(classify_started)
{
	static const int infra[] = {2, 110, 111, 113};

	for (size_t i = 0; i < sizeof(infra) / sizeof(infra[0]); i++) {
		ck_assert_int_eq(kb_run_infra_exit(infra[i]), 1);
		/* Before user code: the platform's. */
		ck_assert_int_eq(kb_run_classify_started(0, infra[i], 0, 0, -1,
							 0),
				 KB_RUN_INFRA);
		/* After: the submission may have exited itself. */
		ck_assert_int_eq(kb_run_classify_started(0, infra[i], 0, 0, -1,
							 1),
				 KB_RUN_CRASHED);
		ck_assert_int_eq(kb_run_classify_started(0, infra[i], 0, 1, 0,
							 1),
				 KB_RUN_CRASHED);
	}
	ck_assert_int_eq(kb_run_infra_exit(0), 0);
	ck_assert_int_eq(kb_run_infra_exit(112), 0);
	ck_assert_int_eq(kb_run_infra_exit(115), 0);
	/* Everything else is as before. */
	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
		const struct cls *c = &classes[i];

		ck_assert_int_eq(
			kb_run_classify_started(c->signaled, c->exit_code,
						c->timed_out, c->report_ok,
						c->check, 0),
			c->want);
		if (c->want != KB_RUN_INFRA)
			ck_assert_int_eq(kb_run_classify_started(
						 c->signaled, c->exit_code,
						 c->timed_out, c->report_ok,
						 c->check, 1),
					 c->want);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("score");
	TCase *tc = tcase_create("score");

	tcase_add_test(tc, combine_last_mean_geom);
	tcase_add_test(tc, combine_geom_no_overflow);
	tcase_add_test(tc, combine_errors);
	tcase_add_test(tc, user_started_line);
	tcase_add_test(tc, classify_started);
	tcase_add_loop_test(tc, classify_table, 0,
			    sizeof(classes) / sizeof(classes[0]));
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kb_check_run(suite());
}
