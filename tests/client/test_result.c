/* kb_result: outcome, completion, score and report of every result shape
 * the API returns. */
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "result.h"
#include "kb_check_main.h"

static json_t *J(const char *s)
{
	json_error_t e;
	json_t *j = json_loads(s, 0, &e);
	ck_assert_msg(j != NULL, "bad fixture: %s", e.text);
	return j;
}

static enum kb_outcome outcome(const char *s, char *why)
{
	json_t *j = J(s);
	enum kb_outcome o = kb_result_outcome(j, why, 128);
	json_decref(j);
	return o;
}

START_TEST(upstream_results)
{
	char why[128];

	ck_assert_int_eq(
		outcome("{\"status\":\"success\",\"results\":[{\"success\":true,"
			"\"runs\":{\"test\":{\"compilation\":{\"success\":true},"
			"\"run\":{\"success\":true,\"passed\":true}},\"benchmark\":"
			"{\"compilation\":null,\"run\":{\"success\":true,\"passed\":"
			"true}}}}]}",
			why),
		KB_OUTCOME_PASSED);
	ck_assert_int_eq(
		outcome("{\"results\":[{\"success\":true,\"runs\":{\"test\":{"
			"\"run\":{\"success\":true,\"passed\":false}}}}]}",
			why),
		KB_OUTCOME_FAILED);
	ck_assert_str_eq(why, "run 'test' did not pass");
	ck_assert_int_eq(
		outcome("{\"results\":[{\"success\":true,\"runs\":{\"test\":{"
			"\"compilation\":{\"success\":false},\"run\":null}}}]}",
			why),
		KB_OUTCOME_FAILED);
	ck_assert_str_eq(why, "compilation failed (test)");
	ck_assert_int_eq(
		outcome("{\"results\":[{\"success\":false,\"error\":\"boom\"}]}",
			why),
		KB_OUTCOME_FAILED);
	ck_assert_str_eq(why, "the run failed: boom");
	ck_assert_int_eq(outcome("{\"status\":\"success\",\"results\":[]}",
				 why),
			 KB_OUTCOME_UNKNOWN);
}
END_TEST

/* The job's status decides first, as popcorn-cli reads it: a ranked
 * submission whose every run passed can still be not ranked. */
START_TEST(job_status)
{
	char why[128];

	ck_assert_int_eq(outcome("{\"verdict\":\"passed\",\"job\":{\"status\":"
				 "\"failed\",\"error\":\"not ranked\"}}",
				 why),
			 KB_OUTCOME_FAILED);
	ck_assert_str_eq(why, "job failed: not ranked");
	ck_assert_int_eq(outcome("{\"verdict\":\"suspect\",\"job\":{\"status\":"
				 "\"hacked\",\"error\":null}}",
				 why),
			 KB_OUTCOME_FAILED);
	ck_assert_str_eq(why, "job hacked: no detail");
	ck_assert_int_eq(outcome("{\"job\":{\"status\":\"timed_out\",\"error\":"
				 "\"late\"},\"runs\":[]}",
				 why),
			 KB_OUTCOME_FAILED);
	ck_assert_int_eq(
		outcome("{\"verdict\":\"infra_error\",\"job\":{\"status\":"
			"\"failed\",\"error\":\"x\"}}",
			why),
		KB_OUTCOME_INFRA);
	/* succeeded decides nothing by itself: an older server said so of
	 * failed runs too. */
	ck_assert_int_eq(outcome("{\"job\":{\"status\":\"succeeded\"},\"runs\":"
				 "[{\"mode\":\"test\",\"passed\":false}]}",
				 why),
			 KB_OUTCOME_FAILED);
}
END_TEST

START_TEST(verdicts_and_flags)
{
	char why[128];

	ck_assert_int_eq(outcome("{\"verdict\":\"passed\",\"results\":[]}",
				 why),
			 KB_OUTCOME_PASSED);
	ck_assert_int_eq(outcome("{\"verdict\":\"compile_error\"}", why),
			 KB_OUTCOME_FAILED);
	ck_assert_str_eq(why, "verdict compile_error");
	ck_assert_int_eq(outcome("{\"verdict\":\"suspect\"}", why),
			 KB_OUTCOME_FAILED);
	ck_assert_int_eq(outcome("{\"verdict\":\"infra_error\"}", why),
			 KB_OUTCOME_INFRA);
	ck_assert_int_eq(outcome("{\"passed\":false}", why), KB_OUTCOME_FAILED);
	ck_assert_int_eq(outcome("{\"passed\":true}", why), KB_OUTCOME_PASSED);
	ck_assert_int_eq(
		outcome("{\"status\":\"failed\",\"verdict\":null,\"error\":"
			"\"queue down\"}",
			why),
		KB_OUTCOME_INFRA);
	ck_assert_str_eq(why, "the platform could not run it: queue down");
	ck_assert_int_eq(outcome("{}", why), KB_OUTCOME_UNKNOWN);
	ck_assert_int_eq(kb_result_outcome(NULL, why, sizeof(why)),
			 KB_OUTCOME_UNKNOWN);
}
END_TEST

START_TEST(record_runs)
{
	char why[128];

	ck_assert_int_eq(
		outcome("{\"done\":true,\"runs\":[{\"mode\":\"test\",\"passed\":"
			"true},{\"mode\":\"leaderboard\",\"passed\":true}]}",
			why),
		KB_OUTCOME_PASSED);
	ck_assert_int_eq(
		outcome("{\"done\":true,\"runs\":[{\"mode\":\"test\",\"passed\":"
			"true},{\"mode\":\"private\",\"passed\":false}]}",
			why),
		KB_OUTCOME_FAILED);
	ck_assert_str_eq(why, "run 'private' did not pass");
	ck_assert_int_eq(outcome("{\"done\":true,\"runs\":[]}", why),
			 KB_OUTCOME_UNKNOWN);
}
END_TEST

START_TEST(done)
{
	json_t *j;

	j = J("{\"done\":false,\"status\":\"done\"}");
	ck_assert_int_eq(kb_result_done(j),
			 0); /* "done" decides when present */
	json_decref(j);
	j = J("{\"status\":\"done\"}");
	ck_assert_int_eq(kb_result_done(j), 1);
	json_decref(j);
	j = J("{\"status\":\"failed\"}");
	ck_assert_int_eq(kb_result_done(j), 1);
	json_decref(j);
	j = J("{\"status\":\"running\"}");
	ck_assert_int_eq(kb_result_done(j), 0);
	json_decref(j);
}
END_TEST

START_TEST(score)
{
	json_t *j;
	double s = 0;

	j = J("{\"score\":1.25e-6}");
	ck_assert_int_eq(kb_result_score(j, &s), 1);
	ck_assert_double_eq(s, 1.25e-6);
	json_decref(j);
	j = J("{\"score\":null,\"runs\":[{\"secret\":true,\"score\":9},{\"secret\":false,"
	      "\"score\":2.0}]}");
	ck_assert_int_eq(kb_result_score(j, &s), 1);
	ck_assert_double_eq(s, 2.0);
	json_decref(j);
	j = J("{\"runs\":[{\"score\":null}]}");
	ck_assert_int_eq(kb_result_score(j, &s), 0);
	json_decref(j);
}
END_TEST

START_TEST(seconds)
{
	char b[32];

	kb_fmt_seconds(1.5, b, sizeof(b));
	ck_assert_str_eq(b, "1.5 s");
	kb_fmt_seconds(0.0123, b, sizeof(b));
	ck_assert_str_eq(b, "12.3 ms");
	kb_fmt_seconds(1.5e-5, b, sizeof(b));
	ck_assert_str_eq(b, "15 \xC2\xB5s");
	kb_fmt_seconds(4.5e-7, b, sizeof(b));
	ck_assert_str_eq(b, "450 ns");
	kb_fmt_seconds(0, b, sizeof(b));
	ck_assert_str_eq(b, "0 s");
}
END_TEST

START_TEST(render_reports)
{
	json_t *j = J("{\"reports\":[\"first\",\"second\\n\"],\"results\":[]}");
	char *t = kb_result_render(j);

	ck_assert_str_eq(t, "first\n\nsecond\n");
	free(t);
	json_decref(j);
	j = J("{\"report\":\"one report\",\"error\":\"late failure\"}");
	t = kb_result_render(j);
	ck_assert_str_eq(t, "one report\nerror: late failure\n");
	free(t);
	json_decref(j);
	j = J("{}");
	t = kb_result_render(j);
	ck_assert_str_eq(t, "");
	free(t);
	json_decref(j);
}
END_TEST

START_TEST(render_built)
{
	json_t *j = J(
		"{\"results\":[{\"success\":true,\"runs\":{\"test\":{\"compilation\":"
		"{\"success\":false,\"exit_code\":1,\"stderr\":\"k.cu:3: error\"}},"
		"\"benchmark\":{\"run\":{\"passed\":false,\"duration\":0.25,"
		"\"stdout\":\"\",\"stderr\":\"mismatch\"}}}}]}");
	char *t = kb_result_render(j);

	ck_assert_msg(strstr(t, "test: compilation failed (exit 1)\n"), "%s",
		      t);
	ck_assert_msg(strstr(t, "k.cu:3: error\n"), "%s", t);
	ck_assert_msg(strstr(t, "benchmark: failed (250 ms)\n"), "%s", t);
	ck_assert_msg(strstr(t, "  stderr:\nmismatch\n"), "%s", t);
	free(t);
	json_decref(j);

	j = J("{\"runs\":[{\"mode\":\"leaderboard\",\"runner\":\"H100\",\"passed\":true,"
	      "\"score\":0.002,\"secret\":false},{\"mode\":\"private\",\"passed\":true,"
	      "\"secret\":true}]}");
	t = kb_result_render(j);
	ck_assert_str_eq(t, "leaderboard on H100: passed, score 2 ms\n"
			    "private: passed [secret]\n");
	free(t);
	json_decref(j);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("client_result");
	TCase *tc = tcase_create("result");

	tcase_add_test(tc, upstream_results);
	tcase_add_test(tc, job_status);
	tcase_add_test(tc, verdicts_and_flags);
	tcase_add_test(tc, record_runs);
	tcase_add_test(tc, done);
	tcase_add_test(tc, score);
	tcase_add_test(tc, seconds);
	tcase_add_test(tc, render_reports);
	tcase_add_test(tc, render_built);
	suite_add_tcase(s, tc);
	return kb_check_run(s);
}
