/* The ranker's pure part: a Result into fold.lua's arguments, and the
 * decision whether it is scored. No Redis, no broker. */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kb_fold.h"
#include "kb_foldargs.h"
#include "kb_report.h"
#include "ranker_fixture.h"
#include "kb_check_main.h"

/* The call's strings numbered as when fold.lua took 4 keys: 0-3 the first
 * four keys, 4 on the script's ARGV[1..] (the order and history keys
 * come after the first four: arguments_of_a_scored_result). */
#define ARG(c, i) ((c)->argv[(i) < 4 ? (i) : (i)-4 + KB_FOLD_NKEYS])

START_TEST(names)
{
	ck_assert_str_eq(kb_verdict_name(KB__VERDICT__VERDICT_PASSED),
			 "passed");
	ck_assert_str_eq(kb_verdict_name(KB__VERDICT__VERDICT_COMPILE_ERROR),
			 "compile_error");
	ck_assert_str_eq(kb_verdict_name(KB__VERDICT__VERDICT_INFRA_ERROR),
			 "infra_error");
	ck_assert_str_eq(kb_verdict_name(KB__VERDICT__VERDICT_SUSPECT),
			 "suspect");
	ck_assert_str_eq(kb_verdict_name(KB__VERDICT__VERDICT_UNSPECIFIED),
			 "unspecified");
	ck_assert_str_eq(kb_report_stage_name(KB__STAGE__STAGE_TESTING),
			 "testing");
	ck_assert_str_eq(kb_report_stage_name(KB__STAGE__STAGE_RANKED_RUN),
			 "ranked_run");
	/* The secret run is stored as the ranked run it continues. */
	ck_assert_str_eq(kb_report_stage_name(KB__STAGE__STAGE_SECRET_RUN),
			 "ranked_run");
	ck_assert_str_eq(kb_report_stage_name(KB__STAGE__STAGE_DONE), "done");
	ck_assert_str_eq(kb_report_stage_name((Kb__Stage)-1), "unspecified");
}
END_TEST

START_TEST(scored_only_when_every_condition_holds)
{
	struct fx_result f;

	fx_scored(&f, 1, "alice", 1e-3, 1000);
	ck_assert_int_eq(kb_result_is_scored(&f.r), 1);
	ck_assert_int_eq(kb_result_is_scored(NULL), 0);

	fx_scored(&f, 1, "alice", 1e-3, 1000);
	f.r.has_score = 0;
	ck_assert_int_eq(kb_result_is_scored(&f.r), 0);

	/* Only the leaderboard mode ranks, whatever the worker claims. */
	Kb__Mode modes[] = {KB__MODE__MODE_TEST, KB__MODE__MODE_BENCHMARK,
			    KB__MODE__MODE_PROFILE, KB__MODE__MODE_UNSPECIFIED};
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		fx_scored(&f, 1, "alice", 1e-3, 1000);
		f.r.mode = modes[i];
		ck_assert_msg(kb_result_is_scored(&f.r) == 0, "mode %d scored",
			      modes[i]);
	}

	Kb__Verdict verdicts[] = {KB__VERDICT__VERDICT_FAILED,
				  KB__VERDICT__VERDICT_SUSPECT,
				  KB__VERDICT__VERDICT_TIMEOUT,
				  KB__VERDICT__VERDICT_INFRA_ERROR,
				  KB__VERDICT__VERDICT_UNSPECIFIED};
	for (size_t i = 0; i < sizeof(verdicts) / sizeof(verdicts[0]); i++) {
		fx_scored(&f, 1, "alice", 1e-3, 1000);
		f.r.verdict = verdicts[i];
		ck_assert_msg(kb_result_is_scored(&f.r) == 0,
			      "verdict %d scored", verdicts[i]);
	}

	double bad[] = {0.0, -1e-3, NAN, INFINITY, -INFINITY};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		fx_scored(&f, 1, "alice", bad[i], 1000);
		ck_assert_msg(kb_result_is_scored(&f.r) == 0, "score %g scored",
			      bad[i]);
	}
}
END_TEST

START_TEST(public_and_secret_runs_must_both_pass)
{
	struct fx_result f;

	/* Secret run missing. */
	fx_scored(&f, 1, "alice", 1e-3, 1000);
	f.r.n_runs = 2;
	ck_assert_int_eq(kb_result_is_scored(&f.r), 0);

	/* Secret run failed its checks. */
	fx_scored(&f, 1, "alice", 1e-3, 1000);
	f.runs[2].passed = 0;
	ck_assert_int_eq(kb_result_is_scored(&f.r), 0);

	/* Public run crashed (passed but not success). */
	fx_scored(&f, 1, "alice", 1e-3, 1000);
	f.runs[1].success = 0;
	ck_assert_int_eq(kb_result_is_scored(&f.r), 0);

	/* Public run missing: only test and private. */
	fx_scored(&f, 1, "alice", 1e-3, 1000);
	f.runp[1] = &f.runs[2];
	f.r.n_runs = 2;
	ck_assert_int_eq(kb_result_is_scored(&f.r), 0);

	/* Order of runs does not matter. */
	fx_scored(&f, 1, "alice", 1e-3, 1000);
	f.runp[0] = &f.runs[2];
	f.runp[2] = &f.runs[0];
	ck_assert_int_eq(kb_result_is_scored(&f.r), 1);
}
END_TEST

START_TEST(arguments_of_a_scored_result)
{
	struct fx_result f;
	struct kb_fold_call c;
	char err[256] = "";

	fx_scored(&f, 42, "alice", 1.25e-4, 1700000000123);
	ck_assert_int_eq(kb_foldargs_result(&f.ev, &c, err, sizeof(err)), 0);
	ck_assert_int_eq(c.nkeys, KB_FOLD_NKEYS);
	ck_assert_int_eq(c.argc, KB_FOLD_NKEYS + KB_FOLD_NARGS);
	ck_assert_str_eq(ARG(&c, 0), "kb:res:42:CPU");
	ck_assert_str_eq(ARG(&c, 1), "kb:sub:42");
	ck_assert_str_eq(ARG(&c, 2), "kb:rank:vectorsum_cpu:CPU");
	ck_assert_str_eq(ARG(&c, 3), "kb:rankinfo:vectorsum_cpu:CPU");
	ck_assert_str_eq(c.argv[4], "kb:rankorder:vectorsum_cpu:CPU");
	/* The board's and the user's score history. */
	ck_assert_str_eq(c.argv[5], "kb:hist:vectorsum_cpu:CPU");
	ck_assert_str_eq(c.argv[6], "kb:uhist:alice");
	ck_assert_str_eq(ARG(&c, 5), "42");
	ck_assert_str_eq(ARG(&c, 6), "alice");
	ck_assert_str_eq(ARG(&c, 7), "leaderboard");
	ck_assert_str_eq(ARG(&c, 8), "passed");
	ck_assert_str_eq(ARG(&c, 9), "1");
	ck_assert_str_eq(ARG(&c, 10), "0.000125");
	ck_assert_str_eq(ARG(&c, 11), "1700000000123");
	ck_assert_str_eq(ARG(&c, 12), "1700000000143");
	for (int i = 0; i < c.argc; i++)
		if (i != KB_FOLD_NKEYS)
			ck_assert_uint_eq(c.argvlen[i], strlen(c.argv[i]));
	ck_assert_int_eq(c.scored, 1);
	ck_assert_uint_eq(c.sub_id, 42);
	ck_assert_str_eq(c.lb, "vectorsum_cpu");
	ck_assert_str_eq(c.gpu, "CPU");

	/* The stored bytes are the Result itself, and decode to it. */
	size_t n = kb__result__get_packed_size(&f.r);
	uint8_t *want = malloc(n);
	kb__result__pack(&f.r, want);
	ck_assert_uint_eq(c.argvlen[KB_FOLD_NKEYS], n);
	ck_assert_mem_eq(c.argv[KB_FOLD_NKEYS], want, n);
	Kb__Result *back =
		kb__result__unpack(NULL, c.argvlen[KB_FOLD_NKEYS],
				   (const uint8_t *)c.argv[KB_FOLD_NKEYS]);
	ck_assert_ptr_nonnull(back);
	ck_assert_uint_eq(back->submission_id, 42);
	ck_assert_str_eq(back->runs[1]->result[0]->key, "benchmark.0.mean");
	kb__result__free_unpacked(back, NULL);
	free(want);
	kb_fold_call_free(&c);
	kb_fold_call_free(&c); /* twice is harmless */
}
END_TEST

START_TEST(score_string_round_trips_exactly)
{
	/* Scores one ulp apart must stay apart through the text form. */
	double scores[] = {
		1e-6,       nextafter(1e-6, 0),  0.1, 1.0 / 3.0, 5e-324,
		123456.789, nextafter(2.5e-5, 1)};
	for (size_t i = 0; i < sizeof(scores) / sizeof(scores[0]); i++) {
		struct fx_result f;
		struct kb_fold_call c;
		char err[256];

		fx_scored(&f, 7, "bob", scores[i], 1000);
		ck_assert_int_eq(
			kb_foldargs_result(&f.ev, &c, err, sizeof(err)), 0);
		double back = strtod(ARG(&c, 10), NULL);
		ck_assert_msg(back == scores[i],
			      "%.17g came back as %.17g via \"%s\"", scores[i],
			      back, ARG(&c, 10));
		ck_assert_str_eq(c.score, ARG(&c, 10));
		kb_fold_call_free(&c);
	}

	/* ... and is no longer than it needs to be. */
	struct fx_result f;
	struct kb_fold_call c;
	char err[256];
	fx_scored(&f, 7, "bob", 2.5e-4, 1000);
	ck_assert_int_eq(kb_foldargs_result(&f.ev, &c, err, sizeof(err)), 0);
	ck_assert_str_eq(ARG(&c, 10), "0.00025");
	kb_fold_call_free(&c);
	fx_scored(&f, 7, "bob", 0.1 + 0.2, 1000);
	ck_assert_int_eq(kb_foldargs_result(&f.ev, &c, err, sizeof(err)), 0);
	ck_assert_str_eq(ARG(&c, 10), "0.30000000000000004");
	kb_fold_call_free(&c);
}
END_TEST

START_TEST(arguments_of_an_unscored_result)
{
	struct fx_result f;
	struct kb_fold_call c;
	char err[256];

	fx_failed(&f, 43, "alice", 5000);
	ck_assert_int_eq(kb_foldargs_result(&f.ev, &c, err, sizeof(err)), 0);
	ck_assert_str_eq(ARG(&c, 8), "failed");
	ck_assert_str_eq(ARG(&c, 9), "0");
	ck_assert_str_eq(ARG(&c, 10), "");
	ck_assert_uint_eq(c.argvlen[10 - 4 + KB_FOLD_NKEYS], 0);
	ck_assert_int_eq(c.scored, 0);
	kb_fold_call_free(&c);

	/* A score with a non-leaderboard mode is not passed on at all. */
	fx_scored(&f, 44, "alice", 1e-3, 5000);
	f.r.mode = KB__MODE__MODE_BENCHMARK;
	ck_assert_int_eq(kb_foldargs_result(&f.ev, &c, err, sizeof(err)), 0);
	ck_assert_str_eq(ARG(&c, 7), "benchmark");
	ck_assert_str_eq(ARG(&c, 9), "0");
	ck_assert_str_eq(ARG(&c, 10), "");
	kb_fold_call_free(&c);

	/* A mode out of range is stored as "unspecified". */
	f.r.mode = (Kb__Mode)99;
	ck_assert_int_eq(kb_foldargs_result(&f.ev, &c, err, sizeof(err)), 0);
	ck_assert_str_eq(ARG(&c, 7), "unspecified");
	kb_fold_call_free(&c);
}
END_TEST

START_TEST(done_ms_falls_back_and_is_deterministic)
{
	struct fx_result f;
	struct kb_fold_call a, b;
	char err[256];

	fx_scored(&f, 9, "alice", 1e-3, 1000);
	f.r.finished_at_ms = 0;
	ck_assert_int_eq(kb_foldargs_result(&f.ev, &a, err, sizeof(err)), 0);
	ck_assert_str_eq(ARG(&a, 12), "1010");
	kb_fold_call_free(&a);
	f.r.started_at_ms = 0;
	ck_assert_int_eq(kb_foldargs_result(&f.ev, &a, err, sizeof(err)), 0);
	ck_assert_str_eq(ARG(&a, 12), "1000");
	kb_fold_call_free(&a);

	/* The same event twice gives byte-identical arguments. */
	fx_scored(&f, 9, "alice", 1e-3, 1000);
	ck_assert_int_eq(kb_foldargs_result(&f.ev, &a, err, sizeof(err)), 0);
	ck_assert_int_eq(kb_foldargs_result(&f.ev, &b, err, sizeof(err)), 0);
	for (int i = 0; i < a.argc; i++) {
		ck_assert_uint_eq(a.argvlen[i], b.argvlen[i]);
		ck_assert_mem_eq(a.argv[i], b.argv[i], a.argvlen[i]);
	}
	kb_fold_call_free(&a);
	kb_fold_call_free(&b);
}
END_TEST

static void expect_invalid(struct fx_result *f, const char *what)
{
	struct kb_fold_call c;
	char err[256] = "";

	ck_assert_msg(kb_foldargs_result(&f->ev, &c, err, sizeof(err)) ==
			      -EINVAL,
		      "%s accepted", what);
	ck_assert_msg(err[0] != '\0', "%s: no message", what);
	/* Nothing to free on error, but freeing must still be safe. */
	kb_fold_call_free(&c);
}

START_TEST(unfoldable_results_are_rejected)
{
	struct fx_result f;

	fx_scored(&f, 1, "alice", 1e-3, 1000);
	f.ev.event_case = KB__RESULT_EVENT__EVENT__NOT_SET;
	expect_invalid(&f, "event without result");

	fx_scored(&f, 1, "alice", 1e-3, 1000);
	f.ev.submission_id = 2;
	expect_invalid(&f, "id mismatch");

	fx_scored(&f, 0, "alice", 1e-3, 1000);
	expect_invalid(&f, "id 0");

	fx_scored(&f, 1, "alice", 1e-3, 1000);
	f.ev.gpu = "H100";
	expect_invalid(&f, "gpu mismatch");

	fx_scored(&f, 1, "alice", 1e-3, 1000);
	f.r.gpu = f.ev.gpu = "";
	expect_invalid(&f, "empty gpu");

	fx_scored(&f, 1, "alice", 1e-3, 1000);
	f.r.gpu = f.ev.gpu = "H:100";
	expect_invalid(&f, "gpu with ':'");

	fx_scored(&f, 1, "alice", 1e-3, 1000);
	f.r.leaderboard = "";
	expect_invalid(&f, "empty leaderboard");

	fx_scored(&f, 1, "alice", 1e-3, 1000);
	f.r.leaderboard = "a:b";
	expect_invalid(&f, "leaderboard with ':'");

	fx_scored(&f, 1, "", 1e-3, 1000);
	expect_invalid(&f, "empty user");
}
END_TEST

START_TEST(an_empty_envelope_defers_to_the_result)
{
	struct fx_result f;
	struct kb_fold_call c;
	char err[256] = "";

	fx_scored(&f, 5, "alice", 1e-3, 1000);
	f.ev.submission_id = 0;
	f.ev.gpu = "";
	ck_assert_msg(kb_foldargs_result(&f.ev, &c, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_str_eq(c.argv[0], "kb:res:5:CPU");
	kb_fold_call_free(&c);
}
END_TEST

START_TEST(progress_arguments)
{
	Kb__Progress p = KB__PROGRESS__INIT;
	Kb__ResultEvent ev = KB__RESULT_EVENT__INIT;
	struct kb_progress_call c;
	char err[256] = "";

	p.stage = KB__STAGE__STAGE_BENCHMARKING;
	ev.submission_id = 18446744073709551615ULL;
	ev.gpu = "MI300";
	ev.event_case = KB__RESULT_EVENT__EVENT_PROGRESS;
	ev.progress = &p;
	ck_assert_int_eq(kb_foldargs_progress(&ev, 1700000000999, &c, err,
					      sizeof(err)),
			 0);
	ck_assert_int_eq(c.nkeys, 1);
	ck_assert_int_eq(c.argc, 3);
	ck_assert_str_eq(c.argv[0], "kb:sub:18446744073709551615");
	ck_assert_str_eq(c.argv[1], "benchmarking");
	ck_assert_str_eq(c.argv[2], "1700000000999");
	ck_assert_str_eq(c.stage, "benchmarking");
	ck_assert_str_eq(c.gpu, "MI300");

	ev.submission_id = 0;
	ck_assert_int_eq(kb_foldargs_progress(&ev, 1, &c, err, sizeof(err)),
			 -EINVAL);
	ev.submission_id = 5;
	ev.event_case = KB__RESULT_EVENT__EVENT__NOT_SET;
	ck_assert_int_eq(kb_foldargs_progress(&ev, 1, &c, err, sizeof(err)),
			 -EINVAL);
}
END_TEST

START_TEST(redis_errors_are_classified)
{
	const char *transient[] = {
		"LOADING Redis is loading the dataset in memory",
		"BUSY Redis is busy running a script. You can only call SCRIPT KILL",
		"OOM command not allowed when used memory > 'maxmemory'. script: x",
		"READONLY You can't write against a read only replica.",
		"MASTERDOWN Link with MASTER is down",
		"NOPERM this user has no permissions to run the 'evalsha' command",
		"ERR something new",
		NULL,
	};
	const char *permanent[] = {
		"WRONGTYPE Operation against a key holding the wrong kind of value",
		"ERR user_script:12: Script attempted to access nonexistent global variable 'x'",
		"ERR Error running script (call to f_0123): @user_script:1: oops",
	};
	for (size_t i = 0; i < sizeof(transient) / sizeof(transient[0]); i++)
		ck_assert_msg(kb_fold_error_class(transient[i]) == -EAGAIN,
			      "\"%s\" not transient",
			      transient[i] ? transient[i] : "(null)");
	for (size_t i = 0; i < sizeof(permanent) / sizeof(permanent[0]); i++)
		ck_assert_msg(kb_fold_error_class(permanent[i]) == -EPROTO,
			      "\"%s\" not permanent", permanent[i]);
	ck_assert_str_eq(kb_fold_outcome_name(KB_FOLD_DUPLICATE), "duplicate");
	ck_assert_str_eq(kb_fold_outcome_name(KB_FOLD_NEW), "new");
	ck_assert_str_eq(kb_fold_outcome_name(KB_FOLD_BEST), "personal-best");
	ck_assert_str_eq(kb_fold_outcome_name(17), "unknown");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ranker_foldargs");
	TCase *tc = tcase_create("pure");

	tcase_add_test(tc, names);
	tcase_add_test(tc, scored_only_when_every_condition_holds);
	tcase_add_test(tc, public_and_secret_runs_must_both_pass);
	tcase_add_test(tc, arguments_of_a_scored_result);
	tcase_add_test(tc, score_string_round_trips_exactly);
	tcase_add_test(tc, arguments_of_an_unscored_result);
	tcase_add_test(tc, done_ms_falls_back_and_is_deterministic);
	tcase_add_test(tc, unfoldable_results_are_rejected);
	tcase_add_test(tc, an_empty_envelope_defers_to_the_result);
	tcase_add_test(tc, progress_arguments);
	tcase_add_test(tc, redis_errors_are_classified);
	suite_add_tcase(s, tc);

	return kb_check_run(s);
}
