/* Upstream Python problems run sealed (services/kb_seal.h): `kb-worker
 * eval` on the upstream-shaped fixtures (tests/worker/data/upstream_py,
 * and upstream_py2: another eval.py's case rule, data as a dict with a
 * column-major view, or a bare tensor),
 * sealed by default and as upstream runs them with KB_SEAL_UPSTREAM=0.
 * Sealed, the report carries keys upstream's eval.py never writes
 * (system.guard); the verdicts are the same either way; and what a
 * submission in eval.py's own process can fake (its timers, the report)
 * gains nothing sealed. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "kb_check_main.h"
#include "jobdir.h"
#include "worker_fixture.h"

#define WORKER KB_BINARY_DIR "/worker/kb-worker"

static char *workdir;
static char env_workdir[4200];

static void setup(void)
{
	workdir = wf_tmpdir();
	ck_assert_ptr_nonnull(workdir);
	snprintf(env_workdir, sizeof(env_workdir), "KB_WORKDIR=%s", workdir);
}

static void teardown(void)
{
	kb_jobdir_remove(workdir);
	free(workdir);
}

/* `kb-worker eval DATA/problem DATA/problem/sub --mode mode --json`, sealed
 * or not; returns the exit status and *out (the JSON result), *err. The
 * sandbox's isolation is not what these tests are about: off. */
static int eval_json(const char *problem, const char *sub, const char *mode,
		     int sealed, char **out, char **err)
{
	char dir[4096], file[4200];
	char *argv[] = {WORKER,       "eval",  dir,   file,     "--mode",
			(char *)mode, "--gpu", "CPU", "--json", NULL};
	char *env[] = {env_workdir,
		       "KB_SANDBOX_ISOLATE=0",
		       "KB_GPU=CPU",
		       "KB_PYTHON=" KB_TEST_PYTHON,
		       sealed ? "KB_SEAL_UPSTREAM=1" : "KB_SEAL_UPSTREAM=0",
		       NULL};
	double wall;
	int st;

	snprintf(dir, sizeof(dir), "%s/%s", KB_TEST_DATA, problem);
	snprintf(file, sizeof(file), "%s/%s", dir, sub);
	st = wf_run(argv, env, out, err, &wall);
	return st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The smallest value of report key key over the result's runs, or -1
 * when none has it. */
static double min_value(const char *json, const char *key)
{
	char pat[128];
	double best = -1;
	size_t n;

	n = (size_t)snprintf(pat, sizeof(pat), "\"%s\": \"", key);
	for (const char *p = json; (p = strstr(p, pat)) != NULL; p += n) {
		double v = strtod(p + n, NULL);
		if (best < 0 || v < best)
			best = v;
	}
	return best;
}

/* Loop: fixture x submission x sealed. */
START_TEST(same_verdicts)
{
	static const char *const problems[] = {"upstream_py/vectoradd",
					       "upstream_py/vectoradd_inplace",
					       "upstream_py2/mix",
					       "upstream_py2/rowsum"};
	static const char *const subs[] = {"submission_ok.py",
					   "submission_wrong.py"};
	const char *problem = problems[_i / 4], *sub = subs[_i / 2 % 2];
	int sealed = _i % 2, status;
	char *out, *err;

	status = eval_json(problem, sub, "test", sealed, &out, &err);
	ck_assert_msg(status == (_i / 2 % 2 ? 1 : 0),
		      "%s %s sealed=%d: exit "
		      "%d\n%s\n%s",
		      problem, sub, sealed, status, out, err);
	ck_assert_msg(strstr(out,
			     _i / 2 % 2 ? "VERDICT_FAILED" : "VERDICT_PASSED"),
		      "%s", out);
	/* Keys only our harness writes: the child's confinement. */
	ck_assert_msg((strstr(out, "\"system.guard\"") != NULL) == sealed,
		      "sealed=%d:\n%s", sealed, out);
	free(out);
	free(err);
}
END_TEST

/* A reference wider than the buffer submissions write (float64 against
 * float32, as upstream's prefixsum_py): passes sealed as unsealed, the
 * result taken converted (kbh_upstream's OUTPUTS_PROMOTE). */
START_TEST(wider_reference_dtype)
{
	char *out, *err;
	int status = eval_json("upstream_py/cumsum_wide", "submission_ok.py",
			       "test", _i, &out, &err);

	ck_assert_msg(status == 0, "sealed=%d: exit %d\n%s\n%s", _i, status,
		      out, err);
	ck_assert_msg(strstr(out, "VERDICT_PASSED"), "%s", out);
	free(out);
	free(err);
}
END_TEST

/* Ranked, sealed: the harness's benchmark keys, with the in-place
 * fixture (its output buffer in data) and the bare-tensor one of the
 * second kind, whose ranked run times its last case (ranking_by last: the
 * worker hands that run the last benchmark, as its eval.py would time). */
START_TEST(sealed_leaderboard)
{
	static const char *const problems[] = {"upstream_py/vectoradd_inplace",
					       "upstream_py2/rowsum"};
	char *out, *err;
	int status = eval_json(problems[_i], "submission_ok.py", "leaderboard",
			       1, &out, &err);

	ck_assert_msg(status == 0, "exit %d\n%s\n%s", status, out, err);
	ck_assert_msg(strstr(out, "VERDICT_PASSED"), "%s", out);
	ck_assert_msg(strstr(out, "\"benchmark.0.floor_ns\""), "%s", out);
	ck_assert_msg(strstr(out, "\"benchmark.0.window_ns\""), "%s", out);
	if (_i == 1)
		ck_assert_msg(strstr(out, "\"benchmark.0.spec\": \"size: 4096; "
					  "seed: 24\""),
			      "%s", out);
	free(out);
	free(err);
}
END_TEST

/* Frozen timers (time.perf_counter_ns, torch.cuda.Event): unsealed, the
 * lie is the time eval.py reports; sealed, the time is the harness's. */
START_TEST(timer_patch_gains_nothing)
{
	char *out, *err;
	double mean;
	int status;

	status = eval_json("upstream_py/vectoradd", "submission_timer.py",
			   "leaderboard", 0, &out, &err);
	mean = min_value(out, "benchmark.0.mean");
	ck_assert_msg(mean >= 0 && mean < 1000,
		      "unsealed: the lie should "
		      "land (mean %g)\n%s",
		      mean, out);
	free(out);
	free(err);

	status = eval_json("upstream_py/vectoradd", "submission_timer.py",
			   "leaderboard", 1, &out, &err);
	ck_assert_msg(status == 0, "exit %d\n%s\n%s", status, out, err);
	mean = min_value(out, "benchmark.0.mean");
	/* 65536 float adds and a Python call: tens of us on any CPU. */
	ck_assert_msg(mean > 2000, "sealed mean %g ns\n%s", mean, out);
	free(out);
	free(err);
}
END_TEST

/* A result written to POPCORN_FD at import: unsealed it reaches the
 * report; sealed the child has no such descriptor, and the times are the
 * harness's. */
START_TEST(fake_report_gains_nothing)
{
	char *out, *err;
	int status = eval_json("upstream_py/vectoradd", "submission_report.py",
			       "leaderboard", 0, &out, &err);
	double mean;

	ck_assert_msg(strstr(out, "\"benchmark.0.mean\": \"1\""),
		      "unsealed: the forged line should land\n%s", out);
	free(out);
	free(err);

	status = eval_json("upstream_py/vectoradd", "submission_report.py",
			   "leaderboard", 1, &out, &err);
	ck_assert_msg(status == 0, "exit %d\n%s\n%s", status, out, err);
	ck_assert_msg(!strstr(out, "\"benchmark.0.spec\": \"forged\""), "%s",
		      out);
	mean = min_value(out, "benchmark.0.mean");
	ck_assert_msg(mean > 2000, "sealed mean %g ns\n%s", mean, out);
	free(out);
	free(err);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("worker_seal");
	/* Two cases, two CTest entries (CK_RUN_CASE): verdicts beside other
	 * suites, the ranked runs judged by time alone (CMakeLists.txt). */
	TCase *tv = tcase_create("verdicts");
	TCase *tc = tcase_create("ranked");

	tcase_add_checked_fixture(tv, setup, teardown);
	tcase_set_timeout(tv, 240);
	tcase_add_loop_test(tv, same_verdicts, 0, 16);
	tcase_add_loop_test(tv, wider_reference_dtype, 0, 2);
	/* Ranked, but judged by keys and verdicts, not by time. */
	tcase_add_loop_test(tv, sealed_leaderboard, 0, 2);
	suite_add_tcase(s, tv);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, timer_patch_gains_nothing);
	tcase_add_test(tc, fake_report_gains_nothing);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kb_check_run(suite());
}
