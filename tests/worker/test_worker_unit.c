/* The worker's pure parts, and the evaluation pipeline against a fake
 * sandbox that plays the compiler and the harness. */
#include <check.h>
#include <math.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "build.h"
#include "eval.h"
#include "jobdir.h"
#include "kb_cases.h"
#include "kb_log.h"
#include "kb_popcorn.h"
#include "kb_report.h"
#include "kb_util.h"
#include "pbjson.h"
#include "pbutil.h"
#include "plan.h"
#include "python.h"
#include "service.h"
#include "starve.h"
#include "verdict.h"
#include "worker_fixture.h"
#include "kb_check_main.h"

static int exists(const char *dir, const char *name)
{
	char path[4096];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return lstat(path, &st) == 0;
}

static int dir_is_empty(const char *dir)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A '%s')\"", dir);
	return system(cmd) == 0;
}

static char *slurp(const char *dir, const char *name)
{
	char path[4096], *data = NULL;
	size_t len;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return kb_read_file(path, SIZE_MAX, &data, &len) == 0 ? data : NULL;
}

/* ---- job directory ---------------------------------------------------- */

START_TEST(test_name_ok)
{
	static const char *const good[] = {"submission.c", "eval.cu", "task.h",
					   "a-b_c.py", "x"};
	static const char *const bad[] = {
		"",     "/etc/passwd", "a/b",     "..",   ".",         "../x",
		"a..b", "-o",          ".hidden", "x\ny", "tab\tname",
	};
	char longname[300];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(kb_jobdir_name_ok(good[i]), "%s", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!kb_jobdir_name_ok(bad[i]), "%s", bad[i]);
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	ck_assert(!kb_jobdir_name_ok(longname));
	ck_assert(!kb_jobdir_name_ok(NULL));
}
END_TEST

/* A job directory with its layout, the task in task/. */
static void open_job(struct kb_jobdir *j, const char *root,
		     const Kb__Submission *s)
{
	char err[256] = "";

	ck_assert_int_eq(kb_jobdir_open(j, root, 7, err, sizeof(err)), 0);
	ck_assert_int_eq(kb_jobdir_materialize(j, s->task, &s->code, -1, 1, err,
					       sizeof(err)),
			 0);
}

START_TEST(test_materialize)
{
	Kb__Submission *s = wf_submission("c", KB__MODE__MODE_TEST);
	char *root = wf_tmpdir(), err[256] = "", *sub, *ev;
	struct kb_jobdir j;
	struct stat st;

	ck_assert_ptr_nonnull(root);
	open_job(&j, root, s);
	/* The worker's own directory; the task read-only to commands. */
	ck_assert_int_eq(stat(j.path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0700);
	ck_assert_int_eq(stat(j.task, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0755);
	sub = slurp(j.task, "submission.c");
	ev = slurp(j.task, "eval.c");
	ck_assert_str_eq(sub, "int x;");
	ck_assert_str_eq(ev, "int main(void) { return 0; }\n");
	free(sub);
	free(ev);
	/* The harness's copy leaves the submission out. */
	ck_assert_int_eq(kb_jobdir_materialize(&j, s->task, &s->code, -1, 0,
					       err, sizeof(err)),
			 0);
	ck_assert(exists(j.harness, "eval.c"));
	ck_assert(!exists(j.harness, "submission.c"));
	ck_assert_int_eq(kb_jobdir_close(&j, 0), 0);
	ck_assert(access(j.task, F_OK) < 0);
	ck_assert(dir_is_empty(root));
	kb_jobdir_remove(root);
	free(root);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

/* Each bad name is refused before anything is written. */
START_TEST(test_materialize_rejects)
{
	static const char *const bad[] = {"../escape.c", "/tmp/abs.c",
					  "a/b.c",       "..",
					  "cases.txt",   "eval.out",
					  "submission.c"};
	Kb__Submission *s = wf_submission("c", KB__MODE__MODE_TEST);
	char *root = wf_tmpdir(), err[256] = "";
	struct kb_jobdir j;
	Kb__TaskFile *f;

	ck_assert_ptr_nonnull(root);
	ck_assert_int_eq(kb_jobdir_open(&j, root, 7, err, sizeof(err)), 0);
	wf_add_file(s->task, bad[_i], "evil");
	f = s->task->files[s->task->n_files - 1];
	ck_assert_int_eq(kb_jobdir_materialize(&j, s->task, &s->code, -1, 1,
					       err, sizeof(err)),
			 -EINVAL);
	ck_assert_msg(strstr(err, f->name) != NULL, "err: %s", err);
	ck_assert(!exists(j.task, "eval.c"));
	ck_assert(!exists(j.task, "submission.c"));
	kb_jobdir_close(&j, 0);
	kb_jobdir_remove(root);
	free(root);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

/* What a command leaves in its scratch is copied out only as a regular
 * file: never through a link, never from a FIFO (which must not block the
 * worker), never over an existing file. */
START_TEST(test_step_take)
{
	Kb__Submission *s = wf_submission("c", KB__MODE__MODE_TEST);
	char *root = wf_tmpdir(), *outside = wf_tmpdir(), err[256] = "";
	char path[4200], target[4200], *got;
	struct kb_jobdir j;
	struct stat st;

	open_job(&j, root, s);
	ck_assert_int_eq(kb_jobdir_step_begin(&j, err, sizeof(err)), 0);
	/* A second begin without an end is refused. */
	ck_assert_int_eq(kb_jobdir_step_begin(&j, err, sizeof(err)), -EEXIST);
	snprintf(path, sizeof(path), "%s/real.so", j.step);
	ck_assert_int_eq(kb_write_file(path, "ELF", 3, 0600), 0);
	snprintf(target, sizeof(target), "%s/secret", outside);
	ck_assert_int_eq(kb_write_file(target, "host", 4, 0600), 0);
	snprintf(path, sizeof(path), "%s/link.so", j.step);
	ck_assert_int_eq(symlink(target, path), 0);
	snprintf(path, sizeof(path), "%s/fifo.so", j.step);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	snprintf(path, sizeof(path), "%s/dir.so", j.step);
	ck_assert_int_eq(mkdir(path, 0700), 0);

	ck_assert_int_eq(kb_jobdir_step_take(&j, "real.so", -1, 0755, err,
					     sizeof(err)),
			 0);
	got = slurp(j.out, "real.so");
	ck_assert_str_eq(got, "ELF");
	free(got);
	ck_assert_int_eq(stat(j.out, &st), 0);
	snprintf(path, sizeof(path), "%s/real.so", j.out);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_uid, getuid());
	ck_assert_uint_eq(st.st_mode & 0777, 0755);
	/* Taken once: the copy is not replaced by a later one. */
	ck_assert_int_eq(kb_jobdir_step_take(&j, "real.so", -1, 0755, err,
					     sizeof(err)),
			 -EEXIST);
	ck_assert_int_eq(kb_jobdir_step_take(&j, "link.so", -1, 0755, err,
					     sizeof(err)),
			 -ELOOP);
	ck_assert_msg(strstr(err, "symbolic link"), "%s", err);
	ck_assert_int_eq(kb_jobdir_step_take(&j, "fifo.so", -1, 0755, err,
					     sizeof(err)),
			 -EINVAL);
	ck_assert_int_eq(kb_jobdir_step_take(&j, "dir.so", -1, 0755, err,
					     sizeof(err)),
			 -EINVAL);
	ck_assert_int_eq(kb_jobdir_step_take(&j, "../out/real.so", -1, 0755,
					     err, sizeof(err)),
			 -EINVAL);
	ck_assert(!exists(j.out, "link.so"));
	ck_assert(!exists(j.out, "fifo.so"));
	ck_assert(!exists(j.out, "dir.so"));
	/* The worker's own writes into a fresh step never follow a name. */
	ck_assert_int_eq(kb_jobdir_step_put(&j, "link.so", "x", 1, 0644),
			 -EEXIST);
	got = slurp(outside, "secret");
	ck_assert_str_eq(got, "host");
	free(got);
	ck_assert_int_eq(kb_jobdir_step_end(&j), 0);
	ck_assert(access(j.step, F_OK) < 0);
	/* The next step starts empty. */
	ck_assert_int_eq(kb_jobdir_step_begin(&j, err, sizeof(err)), 0);
	ck_assert(dir_is_empty(j.step));
	ck_assert_int_eq(kb_jobdir_close(&j, 0), 0);
	ck_assert(exists(outside, "secret"));
	kb_jobdir_remove(outside);
	kb_jobdir_remove(root);
	free(outside);
	free(root);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

/* Directories of a worker that was killed are removed at start-up;
 * those of a worker that runs are not. */
START_TEST(test_sweep)
{
	Kb__Submission *s = wf_submission("c", KB__MODE__MODE_TEST);
	char *root = wf_tmpdir(), path[4200];
	struct kb_jobdir live;
	pid_t pid;
	int st;

	open_job(&live, root, s);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct kb_jobdir dead;

		open_job(&dead, root, s);
		_exit(0); /* killed mid-job: its lock goes with it */
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	snprintf(path, sizeof(path), "%s/job-7-old", root);
	ck_assert_int_eq(mkdir(path, 0700), 0); /* from before locks */
	snprintf(path, sizeof(path), "%s/unrelated", root);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	ck_assert_int_eq(kb_jobdir_sweep(root), 2);
	ck_assert(access(live.task, F_OK) == 0);
	ck_assert(access(path, F_OK) == 0);
	ck_assert_int_eq(kb_jobdir_close(&live, 0), 0);
	ck_assert_int_eq(kb_jobdir_sweep(root), 0);
	kb_jobdir_remove(root);
	free(root);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

/* A submission may leave unreadable directories and symlinks behind;
 * removal copes, and never follows a link out of the job. */
START_TEST(test_remove_hostile_tree)
{
	char *dir = wf_tmpdir(), *outside = wf_tmpdir(), path[4096];

	ck_assert_ptr_nonnull(dir);
	ck_assert_ptr_nonnull(outside);
	snprintf(path, sizeof(path), "%s/keep", outside);
	ck_assert_int_eq(kb_write_file(path, "x", 1, 0644), 0);
	snprintf(path, sizeof(path), "%s/link", dir);
	ck_assert_int_eq(symlink(outside, path), 0);
	snprintf(path, sizeof(path), "%s/d1", dir);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/d1/f", dir);
	ck_assert_int_eq(kb_write_file(path, "x", 1, 0000), 0);
	snprintf(path, sizeof(path), "%s/d1", dir);
	ck_assert_int_eq(chmod(path, 0000), 0);
	ck_assert_int_eq(kb_jobdir_remove(dir), 0);
	ck_assert(access(dir, F_OK) < 0);
	ck_assert(exists(outside, "keep"));
	ck_assert_int_eq(kb_jobdir_remove(outside), 0);
	free(dir);
	free(outside);
}
END_TEST

/* ---- the Python runtime ----------------------------------------------- */

START_TEST(test_python_parse)
{
	struct kb_python py;

	memset(&py, 0, sizeof(py));
	ck_assert_int_eq(
		kb_python_parse("exe=/opt/venv/bin/python3\n"
				"version=3.12.1\n"
				"dir=/opt/venv\ndir=/usr\n"
				"dir=/usr/lib/python3/dist-packages\n"
				"dir=/opt/venv/lib/python3.12/site-packages\n"
				"dir=relative\ntorch=2.11.0\n",
				&py),
		0);
	ck_assert_str_eq(py.exe, "/opt/venv/bin/python3");
	ck_assert_str_eq(py.bindir, "/opt/venv/bin");
	ck_assert_str_eq(py.version, "3.12.1");
	ck_assert_str_eq(py.torch, "2.11.0");
	/* System directories are bound anyway; relative ones never. */
	ck_assert_str_eq(py.dirs[0], "/opt/venv");
	ck_assert_str_eq(py.dirs[1], "/opt/venv/lib/python3.12/site-packages");
	ck_assert_ptr_null(py.dirs[2]);
	ck_assert_int_eq(kb_python_parse("version=3.11.2\n", &py), -EINVAL);
	ck_assert_int_eq(kb_python_parse("exe=python3\nversion=3\n", &py),
			 -EINVAL);
}
END_TEST

/* ---- the service's pure parts ----------------------------------------- */

/* The longest job bounds the watchdog and the poll interval: every step
 * at its limit, for every infra retry, under a day. */
START_TEST(test_job_max)
{
	struct kb_service_opts o = {.infra_attempts = 3};

	o.eval.build_timeout_s = 60;
	o.eval.run_timeout_cap_s = 900;
	ck_assert_double_eq_tol(kb_service_job_max_s(&o),
				(1800 + 60 + 3 * 900 + 60) * 3.0, 1e-9);
	/* No cap: an hour per run. */
	o.eval.run_timeout_cap_s = 0;
	ck_assert_double_eq_tol(kb_service_job_max_s(&o),
				(1800 + 60 + 3 * 3600 + 60) * 3.0, 1e-9);
	o.infra_attempts = 10;
	ck_assert_double_eq(kb_service_job_max_s(&o), 86400);
}
END_TEST

/* ---- run plan --------------------------------------------------------- */

START_TEST(test_plan_modes)
{
	Kb__Submission *s = wf_submission("c", KB__MODE__MODE_TEST);
	struct kb_plan_run p[KB_PLAN_MAX];
	size_t n;

	ck_assert_int_eq(kb_plan_make(KB__MODE__MODE_TEST, s->task, NULL, 0, p),
			 1);
	ck_assert_str_eq(p[0].key, "test");
	ck_assert_str_eq(p[0].harness_mode, "test");
	ck_assert_int_eq(p[0].secret, 0);
	ck_assert_double_eq(p[0].timeout_s, 7);
	ck_assert_ptr_eq(kb_plan_cases(&p[0], s->task, &n), s->task->tests);
	ck_assert_uint_eq(n, 2);

	ck_assert_int_eq(
		kb_plan_make(KB__MODE__MODE_BENCHMARK, s->task, NULL, 0, p), 1);
	ck_assert_str_eq(p[0].key, "benchmark");
	ck_assert_str_eq(p[0].harness_mode, "benchmark");
	ck_assert_double_eq(p[0].timeout_s, 8);
	ck_assert_ptr_eq(kb_plan_cases(&p[0], s->task, &n),
			 s->task->benchmarks);
	ck_assert_uint_eq(n, 2);

	/* Profile: upstream's profile.N, one run per benchmark case. */
	ck_assert_int_eq(
		kb_plan_make(KB__MODE__MODE_PROFILE, s->task, NULL, 0, p), 2);
	ck_assert_str_eq(p[0].key, "profile.0");
	ck_assert_str_eq(p[1].key, "profile.1");
	ck_assert_str_eq(p[0].harness_mode, "profile");
	ck_assert_int_eq(p[0].profile, 1);
	ck_assert_double_eq(p[1].timeout_s, 8);
	ck_assert_ptr_eq(kb_plan_cases(&p[1], s->task, &n),
			 s->task->benchmarks + 1);
	ck_assert_uint_eq(n, 1);

	ck_assert_int_eq(kb_plan_make(KB__MODE__MODE_UNSPECIFIED, s->task, NULL,
				      0, p),
			 -EINVAL);
	ck_assert_int_eq(kb_plan_make((Kb__Mode)99, s->task, NULL, 0, p),
			 -EINVAL);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

START_TEST(test_plan_leaderboard)
{
	Kb__Submission *s = wf_submission("c", KB__MODE__MODE_LEADERBOARD);
	struct kb_plan_run p[KB_PLAN_MAX];
	char *const *c;
	size_t n;

	ck_assert_int_eq(kb_plan_make(KB__MODE__MODE_LEADERBOARD, s->task, NULL,
				      0, p),
			 3);
	ck_assert_str_eq(p[0].key, "test");
	ck_assert_str_eq(p[1].key, "leaderboard");
	ck_assert_str_eq(p[1].harness_mode, "leaderboard");
	ck_assert_str_eq(p[2].key, "private");
	ck_assert_str_eq(p[2].harness_mode, "leaderboard");
	ck_assert_int_eq(p[0].secret + p[1].secret, 0);
	ck_assert_int_eq(p[2].secret, 1);
	ck_assert_double_eq(p[0].timeout_s, 7);
	ck_assert_double_eq(p[1].timeout_s, 9);
	ck_assert_double_eq(p[2].timeout_s, 9);
	ck_assert_int_eq(p[1].stage, KB__STAGE__STAGE_RANKED_RUN);
	ck_assert_int_eq(p[2].stage, KB__STAGE__STAGE_SECRET_RUN);
	kb_plan_cases(&p[1], s->task, &n);
	ck_assert_uint_eq(n, 2); /* ranking_by mean: every benchmark */

	/* ranking_by last ranks on the last benchmark only; the secret run
	 * still checks all of them. */
	kb__pb_set_str(&s->task->ranking_by, "last");
	kb_plan_make(KB__MODE__MODE_LEADERBOARD, s->task, NULL, 0, p);
	c = kb_plan_cases(&p[1], s->task, &n);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(c[0], "size: 4; seed: 14");
	kb_plan_cases(&p[2], s->task, &n);
	ck_assert_uint_eq(n, 2);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

START_TEST(test_plan_timeouts)
{
	Kb__Submission *s = wf_submission("c", KB__MODE__MODE_LEADERBOARD);
	struct kb_plan_run p[KB_PLAN_MAX];

	s->task->test_timeout = 0; /* unset: the task.yml default */
	s->task->ranked_timeout = 5000;
	kb_plan_make(KB__MODE__MODE_LEADERBOARD, s->task, NULL, 600, p);
	ck_assert_double_eq(p[0].timeout_s, KB_PLAN_DEFAULT_TIMEOUT_S);
	ck_assert_double_eq(p[1].timeout_s, 600);
	kb_plan_make(KB__MODE__MODE_LEADERBOARD, s->task, NULL, 0, p);
	ck_assert_double_eq(p[1].timeout_s, 5000);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

/* ---- verdicts and scores ---------------------------------------------- */

static struct kb_run_outcome run(const char *key, enum kb_run_end end)
{
	struct kb_run_outcome o = {.key = key, .end = end, .timeout_s = 9};

	o.label = strcmp(key, "private") == 0 ? "secret run"
		  : strcmp(key, "test") == 0  ? "tests"
					      : "ranked run";
	return o;
}

static struct kb_verdict_in ranked_in(struct kb_run_outcome *runs, size_t n,
				      const char *ranking_by)
{
	return (struct kb_verdict_in){
		.mode = KB__MODE__MODE_LEADERBOARD,
		.ranking_by = ranking_by,
		.build = KB_BUILD_OK,
		.runs = runs,
		.nruns = n,
		.nplanned = 3,
	};
}

START_TEST(test_verdict_passed_scores)
{
	static const struct {
		const char *by;
		double score;
	} cases[] = {{"mean", 2e-6}, {"last", 3e-6}, {"geom", 1.7320508e-6}};
	double means[] = {1000, 3000};
	struct kb_run_outcome r[3] = {run("test", KB_RUN_OK),
				      run("leaderboard", KB_RUN_OK),
				      run("private", KB_RUN_OK)};
	struct kb_verdict_in in;
	struct kb_verdict v;

	r[1].means = means;
	r[1].nmeans = 2;
	in = ranked_in(r, 3, cases[_i].by);
	kb_verdict_assemble(&in, &v);
	ck_assert_int_eq(v.verdict, KB__VERDICT__VERDICT_PASSED);
	ck_assert_int_eq(v.fault, KB__FAULT__FAULT_NONE);
	ck_assert_int_eq(v.has_score, 1);
	ck_assert_double_eq_tol(v.score, cases[_i].score, 1e-12);
	ck_assert_str_eq(v.error, "");
}
END_TEST

static double one_mean[] = {1000};

/* The three passing runs of a ranked submission, its ranked run reporting
 * one 1 µs mean. */
static void ranked_runs(struct kb_run_outcome r[3])
{
	r[0] = run("test", KB_RUN_OK);
	r[1] = run("leaderboard", KB_RUN_OK);
	r[2] = run("private", KB_RUN_OK);
	r[1].means = one_mean;
	r[1].nmeans = 1;
}

START_TEST(test_verdict_private_fails)
{
	struct kb_run_outcome r[3];
	struct kb_verdict_in in = ranked_in(r, 3, "mean");
	struct kb_verdict v;

	ranked_runs(r);
	r[2].end = KB_RUN_CRASHED;
	r[2].signal = 11;
	kb_verdict_assemble(&in, &v);
	ck_assert_int_eq(v.verdict, KB__VERDICT__VERDICT_CRASHED);
	ck_assert_int_eq(v.fault, KB__FAULT__FAULT_USER);
	ck_assert_int_eq(v.has_score, 0);
	/* Nothing about how the secret run crashed. */
	ck_assert_str_eq(v.error, "secret run crashed");

	r[2].end = KB_RUN_FAILED;
	kb_verdict_assemble(&in, &v);
	ck_assert_int_eq(v.verdict, KB__VERDICT__VERDICT_FAILED);
	ck_assert_str_eq(v.error, "secret run failed");
	ck_assert_int_eq(v.has_score, 0);
}
END_TEST

/* Judges run between two host samples its wall time apart: cpu_stall
 * and mem_stall of that time under pressure (psi: figures given), busy
 * of the host's CPU time busy. why: 192 bytes. */
static int judge(const struct kb_starve_run *run, int psi, double cpu_stall,
		 double mem_stall, double busy, char *why)
{
	struct kb_starve_sample a = {.psi = psi,
				     .stat = 1,
				     .cpu_some_us = 1000,
				     .mem_some_us = 2000,
				     .busy = 500,
				     .total = 1000};
	struct kb_starve_sample b = a;

	b.cpu_some_us += (uint64_t)(cpu_stall * run->wall_s * 1e6);
	b.mem_some_us += (uint64_t)(mem_stall * run->wall_s * 1e6);
	b.total += 1000;
	b.busy += (uint64_t)(busy * 1000);
	return kb_starve_judge(&a, &b, run, why, 192);
}

START_TEST(test_starve_judge)
{
	struct kb_starve_run run = {.wall_s = 10, .cpu_s = 2, .timed_out = 1};
	char why[192] = "";

	/* Starved: little CPU while tasks waited for one. */
	ck_assert_int_eq(judge(&run, 1, 0.9, 0, 1, why), 1);
	ck_assert_msg(strstr(why, "2.0 s of CPU in 10.0 s") &&
			      strstr(why, "CPU pressure 90 %"),
		      "%s", why);
	/* The same run on a quiet host slept or blocked: the user's. */
	ck_assert_int_eq(judge(&run, 1, 0.1, 0, 0.2, why), 0);
	/* Busy host, but the run had its CPU (it overloaded it itself). */
	run.cpu_s = 9;
	ck_assert_int_eq(judge(&run, 1, 0.9, 0, 1, why), 0);
	/* No pressure figures: the host's busy share decides. */
	run.cpu_s = 2;
	ck_assert_int_eq(judge(&run, 0, 0, 0, 0.97, why), 1);
	ck_assert_msg(strstr(why, "97 % busy"), "%s", why);
	ck_assert_int_eq(judge(&run, 0, 0, 0, 0.5, why), 0);
	/* Memory pressure: a timeout, and a kill that was not its limit. */
	run.cpu_s = 9;
	ck_assert_int_eq(judge(&run, 1, 0, 0.6, 0.5, why), 1);
	run.timed_out = 0;
	run.killed = 1;
	ck_assert_int_eq(judge(&run, 1, 0, 0.3, 0.5, why), 1);
	ck_assert_msg(strstr(why, "ran out of memory"), "%s", why);
	run.oom = 1; /* its own memory limit: the user's */
	ck_assert_int_eq(judge(&run, 1, 0, 0.3, 0.5, why), 0);
	/* A run that reached its own limit made the pressure itself
	 * (thrashing): neither its kill nor its timeout is the host's. */
	run.oom = 0;
	run.at_limit = 1;
	ck_assert_int_eq(judge(&run, 1, 0, 0.3, 0.5, why), 0);
	run.killed = 0;
	run.timed_out = 1;
	ck_assert_int_eq(judge(&run, 1, 0, 0.6, 0.5, why), 0);
	run.at_limit = 0; /* ablation: the same timeout, judged the host's */
	ck_assert_int_eq(judge(&run, 1, 0, 0.6, 0.5, why), 1);
	run.timed_out = 0;
	/* A run that failed on its own is never the host's. */
	run.killed = run.oom = 0;
	run.cpu_s = 1;
	ck_assert_int_eq(judge(&run, 1, 1, 1, 1, why), 0);
}
END_TEST

/* The host's figures are readable here (Linux), and move forward. */
START_TEST(test_starve_sample)
{
	struct kb_starve_sample a, b;

	kb_starve_sample(&a);
	for (volatile long i = 0; i < 20000000; i++)
		;
	kb_starve_sample(&b);
	ck_assert_int_eq(a.stat, 1);
	ck_assert_msg(b.total > a.total && b.busy >= a.busy,
		      "total %lu -> %lu, busy %lu -> %lu",
		      (unsigned long)a.total, (unsigned long)b.total,
		      (unsigned long)a.busy, (unsigned long)b.busy);
}
END_TEST

START_TEST(test_verdict_user_ends)
{
	struct kb_run_outcome r[1] = {run("test", KB_RUN_FAILED)};
	struct kb_verdict_in in = ranked_in(r, 1, "mean");
	struct kb_verdict v;

	kb_verdict_assemble(&in, &v);
	ck_assert_int_eq(v.verdict, KB__VERDICT__VERDICT_FAILED);
	ck_assert_int_eq(v.fault, KB__FAULT__FAULT_USER);
	ck_assert_str_eq(v.error, "tests failed");

	r[0].end = KB_RUN_TIMEOUT;
	kb_verdict_assemble(&in, &v);
	ck_assert_int_eq(v.verdict, KB__VERDICT__VERDICT_TIMEOUT);
	ck_assert_str_eq(v.error, "tests timed out after 9 s");

	r[0].end = KB_RUN_CRASHED;
	r[0].signal = 11;
	kb_verdict_assemble(&in, &v);
	ck_assert_int_eq(v.verdict, KB__VERDICT__VERDICT_CRASHED);
	ck_assert_msg(strstr(v.error, "signal 11") != NULL, "%s", v.error);

	r[0].signal = 0;
	r[0].exit_code = 3;
	kb_verdict_assemble(&in, &v);
	ck_assert_str_eq(v.error, "tests exited with status 3");

	r[0].bad_report = 1;
	r[0].exit_code = 0;
	kb_verdict_assemble(&in, &v);
	ck_assert_str_eq(v.error, "tests produced no valid harness report");
	ck_assert_int_eq(v.has_score, 0);

	/* The harness's "device API error" after user code ran: the user's
	 * (kb_run_classify_started), said plainly. */
	r[0].exit_code = 110;
	r[0].user_started = 1;
	kb_verdict_assemble(&in, &v);
	ck_assert_int_eq(v.verdict, KB__VERDICT__VERDICT_CRASHED);
	ck_assert_int_eq(v.fault, KB__FAULT__FAULT_USER);
	ck_assert_str_eq(
		v.error,
		"tests crashed: exit status 110 after your code started");

	/* A crash the harness explained (the CUDA relay's crash key). */
	r[0].exit_code = 115;
	r[0].user_started = 0;
	snprintf(r[0].why, sizeof(r[0].why), "forged results?");
	kb_verdict_assemble(&in, &v);
	ck_assert_int_eq(v.verdict, KB__VERDICT__VERDICT_CRASHED);
	ck_assert_str_eq(v.error, "tests crashed: forged results?");
}
END_TEST

START_TEST(test_verdict_build)
{
	struct kb_verdict_in in = {.mode = KB__MODE__MODE_TEST,
				   .ranking_by = "mean",
				   .build = KB_BUILD_FAILED,
				   .build_exit_code = 1,
				   .nplanned = 1};
	struct kb_verdict v;

	kb_verdict_assemble(&in, &v);
	ck_assert_int_eq(v.verdict, KB__VERDICT__VERDICT_COMPILE_ERROR);
	ck_assert_int_eq(v.fault, KB__FAULT__FAULT_USER);
	ck_assert_str_eq(v.error, "compilation failed (exit status 1)");

	in.build = KB_BUILD_TIMEOUT;
	in.build_timeout_s = 60;
	kb_verdict_assemble(&in, &v);
	ck_assert_int_eq(v.verdict, KB__VERDICT__VERDICT_COMPILE_ERROR);
	ck_assert_str_eq(v.error, "compilation timed out after 60 s");

	/* A language this worker cannot build is a compile error the user
	 * sees, but never charged to them. */
	in.build = KB_BUILD_UNSUPPORTED;
	in.build_msg = "lang cu is not supported";
	kb_verdict_assemble(&in, &v);
	ck_assert_int_eq(v.verdict, KB__VERDICT__VERDICT_COMPILE_ERROR);
	ck_assert_int_eq(v.fault, KB__FAULT__FAULT_INFRA);

	in.build = KB_BUILD_INFRA;
	in.build_msg = "no sandbox";
	kb_verdict_assemble(&in, &v);
	ck_assert_int_eq(v.verdict, KB__VERDICT__VERDICT_INFRA_ERROR);
	ck_assert_int_eq(v.fault, KB__FAULT__FAULT_INFRA);
}
END_TEST

START_TEST(test_verdict_infra)
{
	struct kb_run_outcome r[3];
	struct kb_verdict_in in = ranked_in(r, 2, "mean");
	struct kb_verdict v;

	ranked_runs(r);
	r[1].end = KB_RUN_INFRA;
	r[1].means = NULL;
	r[1].nmeans = 0;

	snprintf(r[1].why, sizeof(r[1].why), "exit status 113 (bad test spec)");
	kb_verdict_assemble(&in, &v);
	ck_assert_int_eq(v.verdict, KB__VERDICT__VERDICT_INFRA_ERROR);
	ck_assert_int_eq(v.fault, KB__FAULT__FAULT_INFRA);
	ck_assert_msg(strstr(v.error, "bad test spec") != NULL, "%s", v.error);

	/* A setup failure outranks everything. */
	in.infra = "mkdtemp failed";
	kb_verdict_assemble(&in, &v);
	ck_assert_str_eq(v.error, "infrastructure error: mkdtemp failed");

	/* Runs that stopped early with nothing failing: the platform's. */
	r[1].end = KB_RUN_OK;
	in = ranked_in(r, 2, "mean");
	kb_verdict_assemble(&in, &v);
	ck_assert_int_eq(v.verdict, KB__VERDICT__VERDICT_INFRA_ERROR);

	/* A passing ranked run without means cannot be scored. */
	in = ranked_in(r, 3, "mean");
	kb_verdict_assemble(&in, &v);
	ck_assert_int_eq(v.verdict, KB__VERDICT__VERDICT_INFRA_ERROR);
	ck_assert_int_eq(v.has_score, 0);
	r[1].means = one_mean;
	r[1].nmeans = 1;
	kb_verdict_assemble(&in, &v);
	ck_assert_int_eq(v.verdict, KB__VERDICT__VERDICT_PASSED);
}
END_TEST

START_TEST(test_verdict_suspect)
{
	struct kb_run_outcome r[3];
	struct kb_verdict_in in = ranked_in(r, 3, "mean");
	struct kb_verdict v;

	ranked_runs(r);
	r[2].suspect = 1;
	snprintf(r[2].why, sizeof(r[2].why), "benchmark 1 seed 12345");
	kb_verdict_assemble(&in, &v);
	ck_assert_int_eq(v.verdict, KB__VERDICT__VERDICT_SUSPECT);
	ck_assert_int_eq(v.has_score, 0);
	ck_assert_msg(strstr(v.error, "12345") == NULL, "%s", v.error);

	/* A failure is the more useful thing to tell. */
	r[0].suspect = 1;
	r[2].end = KB_RUN_FAILED;
	kb_verdict_assemble(&in, &v);
	ck_assert_int_eq(v.verdict, KB__VERDICT__VERDICT_FAILED);
}
END_TEST

static int parse(const char *text, struct kb_popcorn *p)
{
	char err[256];
	int rc = kb_popcorn_parse(text, strlen(text), p, err, sizeof(err));

	ck_assert_msg(rc == 0, "parse: %s", err);
	return rc;
}

START_TEST(test_suspect_detection)
{
	struct kb_popcorn p = {0};
	char why[192] = "";

	parse("benchmark-count: 2\n"
	      "benchmark.0.runs: 10\nbenchmark.0.mean: 1000000\n"
	      "benchmark.1.runs: 10\nbenchmark.1.mean: 1000000\n"
	      "check: pass\n",
	      &p);
	/* 20 ms of device time */
	ck_assert_int_eq(kb_verdict_suspect(&p, 1.0, why, sizeof(why)), 0);
	ck_assert_int_eq(kb_verdict_suspect(&p, 0.010, why, sizeof(why)), 1);
	ck_assert_msg(strstr(why, "wall time") != NULL, "%s", why);
	kb_popcorn_clear(&p);

	parse("benchmark-count: 2\n"
	      "benchmark.0.mean: 10\nbenchmark.1.mean: 10\n"
	      "benchmark.1.status: suspect\ncheck: pass\n",
	      &p);
	ck_assert_int_eq(kb_verdict_suspect(&p, 1.0, why, sizeof(why)), 1);
	ck_assert_msg(strstr(why, "benchmark 1") != NULL, "%s", why);
	kb_popcorn_clear(&p);

	/* The harness's reason is passed on, not replaced by a guess. */
	parse("benchmark-count: 1\nbenchmark.0.mean: 10\n"
	      "benchmark.0.status: suspect\n"
	      "benchmark.0.error: 5 of 38 timed calls took longer\n"
	      "check: pass\n",
	      &p);
	ck_assert_int_eq(kb_verdict_suspect(&p, 1.0, why, sizeof(why)), 1);
	ck_assert_msg(strstr(why,
			     "benchmark 0: 5 of 38 timed calls took longer") &&
			      !strstr(why, "floor"),
		      "%s", why);
	kb_popcorn_clear(&p);
}
END_TEST

START_TEST(test_private_keys)
{
	static const char *const kept[] = {
		"check",
		"test-count",
		"benchmark-count",
		"test.0.status",
		"benchmark.3.mean",
		"benchmark.3.runs",
		"benchmark.3.status",
		"benchmark.0.best",
		"benchmark.0.worst",
		"benchmark.0.err",
	};
	static const char *const dropped[] = {
		"test.0.spec",
		"test.0.message",
		"test.0.error",
		"benchmark.0.spec",
		"benchmark.0.error",
		"benchmark.0.gbps",
		"seed",
		"other",
	};

	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		ck_assert_msg(kb_verdict_private_key_ok(kept[i]), "%s",
			      kept[i]);
	for (size_t i = 0; i < sizeof(dropped) / sizeof(dropped[0]); i++)
		ck_assert_msg(!kb_verdict_private_key_ok(dropped[i]), "%s",
			      dropped[i]);
}
END_TEST

/* ---- the evaluation, with a fake sandbox ------------------------------ */

#define FAKE_MAX 8

/* Harness runs are numbered from 0 in the order they start; compiler
 * commands are kept apart (builds[]), `cc --version` not at all. */
static struct fake {
	int calls;
	char argv[FAKE_MAX][256];
	char env[FAKE_MAX][1024];
	char cases[FAKE_MAX][512];
	char workdir[FAKE_MAX][4096];
	int want_report[FAKE_MAX];
	double timeout[FAKE_MAX];
	int builds;
	char build_argv[FAKE_MAX][512];
	char build_env[FAKE_MAX][1024];
	char build_cwd[FAKE_MAX][4096];
	int build_exit;     /* the submission compile's exit status */
	int build_infra;    /* 1-based compiler command whose sandbox fails */
	int fail_mode_call; /* 1-based run that reports check: fail */
	int infra_call;     /* 1-based run whose sandbox fails */
	int timeout_call;
	int exit_call;          /* 1-based run that exits with exit_code */
	int exit_code;          /* ... after a partial report */
	int exit_started;       /* ... that says user-code: started */
	const char *exit_crash; /* ... and crash: <this>, check: fail */
} fake;

static void join(char *out, size_t n, char *const *v)
{
	out[0] = '\0';
	for (size_t i = 0; v && v[i]; i++) {
		strncat(out, v[i], n - strlen(out) - 2);
		strncat(out, "|", n - strlen(out) - 1);
	}
}

static int has_arg(char *const *argv, const char *arg)
{
	for (int i = 0; argv[i]; i++)
		if (strcmp(argv[i], arg) == 0)
			return 1;
	return 0;
}

static void set_output(struct kb_sandbox_result *r, const char *out,
		       const char *err)
{
	r->exited = 1;
	r->out = kb__xstrdup(out);
	r->out_len = strlen(r->out);
	r->err = kb__xstrdup(err);
	r->err_len = strlen(r->err);
}

/* Plays cc: writes the file named after -o (relative to its working
 * directory), or fails as the test asks. */
static int fake_cc(const struct kb_sandbox_opts *o, struct kb_sandbox_result *r,
		   char *err, size_t err_size)
{
	const int k = fake.builds++;
	char path[8400];

	if (has_arg(o->argv, "--version")) {
		fake.builds--;
		set_output(r, "cc (fake) 1.0\n", "");
		return 0;
	}
	ck_assert_int_lt(k, FAKE_MAX);
	join(fake.build_argv[k], sizeof(fake.build_argv[k]), o->argv);
	join(fake.build_env[k], sizeof(fake.build_env[k]), o->env);
	snprintf(fake.build_cwd[k], sizeof(fake.build_cwd[k]), "%s",
		 o->cwd ? o->cwd : o->workdir);
	ck_assert_int_eq(o->want_report, 0);
	if (fake.build_infra == k + 1) {
		r->infra_error = 1;
		snprintf(err, err_size, "fake sandbox failure");
		return -EIO;
	}
	if (fake.build_exit && has_arg(o->argv, "-shared")) {
		set_output(r, "", "submission.c:1: error: boom");
		r->exit_code = fake.build_exit;
		return 0;
	}
	for (int i = 0; o->argv[i]; i++)
		if (strcmp(o->argv[i], "-o") == 0 && o->argv[i + 1]) {
			snprintf(path, sizeof(path), "%s/%s", fake.build_cwd[k],
				 o->argv[i + 1]);
			ck_assert_int_eq(kb_write_file(path, "ELF", 3, 0755),
					 0);
		}
	set_output(r, "", "");
	return 0;
}

/* Plays a harness that reports one spec per case line. */
static int fake_sandbox(const struct kb_sandbox_opts *o,
			struct kb_sandbox_result *r, char *err, size_t err_size)
{
	if (strcmp(o->argv[0], "cc") == 0)
		return fake_cc(o, r, err, err_size);
	const int k = fake.calls++;
	struct kb_buf rep = {0};
	char *cases;

	ck_assert_int_lt(k, FAKE_MAX);
	join(fake.argv[k], sizeof(fake.argv[k]), o->argv);
	join(fake.env[k], sizeof(fake.env[k]), o->env);
	snprintf(fake.workdir[k], sizeof(fake.workdir[k]), "%s", o->workdir);
	fake.want_report[k] = o->want_report;
	fake.timeout[k] = o->wall_timeout_s;
	r->wall_s = 0.5;
	if (fake.infra_call == k + 1) {
		r->infra_error = 1;
		snprintf(err, err_size, "fake sandbox failure");
		return -EIO;
	}
	if (fake.timeout_call == k + 1) {
		r->timed_out = 1;
		r->out = kb__xstrdup("");
		r->err = kb__xstrdup("");
		return 0;
	}
	if (fake.exit_call == k + 1) {
		/* A harness that stops mid-run (no check line). */
		kb_buf_printf(&rep, "test-count: 1\n");
		if (fake.exit_started)
			kb_buf_printf(&rep, "user-code: started\n");
		if (fake.exit_crash)
			kb_buf_printf(&rep, "crash: %s\ncheck: fail\n",
				      fake.exit_crash);
		set_output(r, "", "eval.out: CUDA error: ECC");
		r->exit_code = fake.exit_code;
		r->report = rep.data;
		r->report_len = rep.len;
		return 0;
	}
	cases = slurp(o->workdir, "cases.txt");
	ck_assert_ptr_nonnull(cases);
	snprintf(fake.cases[k], sizeof(fake.cases[k]), "%s", cases);
	if (strcmp(o->argv[1], "test") == 0) {
		long i = 0;

		kb_buf_printf(&rep, "test-count: 2\n");
		for (char *line = strtok(cases, "\n"); line;
		     line = strtok(NULL, "\n"), i++)
			kb_buf_printf(
				&rep,
				"test.%ld.spec: %s\ntest.%ld.status: pass\n", i,
				line, i);
	} else {
		long i = 0, n = 0;

		for (const char *c = cases; *c; c++)
			n += *c == '\n';
		kb_buf_printf(&rep, "benchmark-count: %ld\n", n);
		for (char *line = strtok(cases, "\n"); line;
		     line = strtok(NULL, "\n"), i++)
			kb_buf_printf(
				&rep,
				"benchmark.%ld.spec: %s\nbenchmark.%ld.runs: 10\n"
				"benchmark.%ld.mean: %ld\nbenchmark.%ld.err: 1\n",
				i, line, i, i, 1000 * (i + 1), i);
	}
	kb_buf_printf(&rep, "check: %s\n",
		      fake.fail_mode_call == k + 1 ? "fail" : "pass");
	r->exited = 1;
	r->exit_code = fake.fail_mode_call == k + 1 ? 112 : 0;
	r->report = rep.data;
	r->report_len = rep.len;
	r->out = kb__xasprintf("harness stdout [%s]", fake.cases[k]);
	r->out_len = strlen(r->out);
	r->err = kb__xstrdup("harness stderr");
	r->err_len = strlen(r->err);
	free(cases);
	return 0;
}

static char *workroot, *cacheroot;

static void fake_setup(void)
{
	memset(&fake, 0, sizeof(fake));
	workroot = wf_tmpdir();
	cacheroot = wf_tmpdir();
}

static void fake_teardown(void)
{
	kb_jobdir_remove(workroot);
	kb_jobdir_remove(cacheroot);
	free(workroot);
	free(cacheroot);
}

/* A CPU worker's options, its commands run by fake_sandbox. */
static struct kb_eval_opts fake_opts(void)
{
	return (struct kb_eval_opts){
		.workdir = workroot,
		.cache_dir = cacheroot,
		.worker = "test-worker",
		.gpu = "CPU",
		.build_timeout_s = 60,
		.run_timeout_cap_s = 0,
		.sandbox = fake_sandbox,
	};
}

static Kb__Result *evaluate(const Kb__Submission *s, const atomic_int *cancel)
{
	struct kb_eval_opts o = fake_opts();

	o.cancel = cancel;
	return kb_eval_run(&o, s);
}

static const Kb__RunResult *run_of(const Kb__Result *r, const char *key)
{
	for (size_t i = 0; i < r->n_runs; i++)
		if (strcmp(r->runs[i]->key, key) == 0)
			return r->runs[i];
	return NULL;
}

static int dir_empty(const char *dir)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A '%s')\"", dir);
	return system(cmd) == 0;
}

START_TEST(test_eval_leaderboard)
{
	Kb__Submission *s = wf_submission("c", KB__MODE__MODE_LEADERBOARD);
	Kb__Result *r = evaluate(s, NULL);
	const Kb__RunResult *priv;
	char combined[32], seed[24], *report;
	uint8_t *packed;
	size_t len;

	ck_assert_str_eq(kb_report_verdict_name(r->verdict), "passed");
	/* The harness alone, cached; then the submission alone, as a
	 * shared object; both from task/, into the step. */
	ck_assert_int_eq(fake.builds, 2);
	ck_assert_str_eq(fake.build_argv[0],
			 "cc|-O3|-march=native|-fopenmp|eval.c|-o|"
			 "../step/eval.out|-lm|-ldl|");
	ck_assert_msg(strstr(fake.build_cwd[0], "/harness") != NULL, "%s",
		      fake.build_cwd[0]);
	/* The submission without -lm, as the CPU tasks' text says. */
	ck_assert_str_eq(
		fake.build_argv[1],
		"cc|-O3|-march=native|-fopenmp|-shared|-fPIC|"
		"-Wl,--no-undefined|-Wl,--require-defined=custom_kernel|"
		"submission.c|-o|../step/submission.so|");
	ck_assert_msg(strstr(fake.build_cwd[1], "/task") != NULL, "%s",
		      fake.build_cwd[1]);
	ck_assert_int_eq(fake.calls, 3);
	ck_assert_str_eq(fake.argv[0], "../out/eval.out|test|cases.txt|");
	ck_assert_str_eq(fake.argv[1],
			 "../out/eval.out|leaderboard|cases.txt|");
	ck_assert_str_eq(fake.argv[2],
			 "../out/eval.out|leaderboard|cases.txt|");
	/* Minimal environment; the report channel and the submission's
	 * object only for harness runs. */
	for (int k = 0; k < 2; k++) {
		ck_assert_msg(strstr(fake.build_env[k], "POPCORN_FD") == NULL,
			      "%s", fake.build_env[k]);
		ck_assert_msg(strstr(fake.build_env[k], "KBH_SUBMISSION") ==
				      NULL,
			      "%s", fake.build_env[k]);
	}
	for (int k = 0; k < 3; k++) {
		ck_assert_msg(strstr(fake.env[k], "POPCORN_FD=3|") != NULL,
			      "%s", fake.env[k]);
		ck_assert_msg(strstr(fake.env[k],
				     "PATH=/usr/local/bin:/usr/bin:/bin|") !=
				      NULL,
			      "%s", fake.env[k]);
		ck_assert_msg(strstr(fake.env[k], "/out/submission.so|") !=
				      NULL,
			      "%s", fake.env[k]);
		ck_assert_int_eq(fake.want_report[k], 1);
	}
	/* Every run in a fresh scratch of the same name. */
	ck_assert_str_eq(fake.workdir[0], fake.workdir[2]);
	ck_assert_double_eq(fake.timeout[0], 7);
	ck_assert_double_eq(fake.timeout[1], 9);
	/* Public runs get the task's seeds, the secret run combined ones. */
	ck_assert_str_eq(fake.cases[0],
			 "size: 1; seed: 11\nsize: 2; seed: 12\n");
	ck_assert_str_eq(fake.cases[1],
			 "size: 3; seed: 13\nsize: 4; seed: 14\n");
	snprintf(seed, sizeof(seed), "%llu",
		 (unsigned long long)kb_seed_combine(14, WF_SECRET));
	snprintf(combined, sizeof(combined), "seed: %s\n", seed);
	ck_assert_msg(strstr(fake.cases[2], combined) != NULL, "%s",
		      fake.cases[2]);
	for (int k = 0; k < 3; k++) {
		ck_assert(strstr(fake.argv[k], WF_SECRET_TEXT) == NULL);
		ck_assert(strstr(fake.env[k], WF_SECRET_TEXT) == NULL);
	}
	/* Score: mean of the ranked run's means (1000, 2000 ns). */
	ck_assert_int_eq(r->has_score, 1);
	ck_assert_double_eq_tol(r->score, 1.5e-6, 1e-15);
	ck_assert_uint_eq(r->n_runs, 3);
	ck_assert_ptr_nonnull(r->compile);
	ck_assert_int_eq(r->compile->success, 1);
	ck_assert_str_eq(r->worker, "test-worker");
	ck_assert_str_eq(r->system->runtime, "cpu");
	ck_assert_double_eq_tol(r->harness_s, 1.5, 1e-9);
	/* The secret run keeps neither output nor anything seed-derived. */
	priv = run_of(r, "private");
	ck_assert_ptr_nonnull(priv);
	ck_assert_int_eq(priv->passed, 1);
	ck_assert_str_eq(priv->stdout, "");
	ck_assert_str_eq(priv->stderr, "");
	for (size_t i = 0; i < priv->n_result; i++)
		ck_assert_msg(strstr(priv->result[i]->key, "spec") == NULL,
			      "%s", priv->result[i]->key);
	len = kb__result__get_packed_size(r);
	packed = kb__xcalloc(1, len + 1);
	kb__result__pack(r, packed);
	ck_assert_ptr_null(memmem(packed, len, seed, strlen(seed)));
	ck_assert_ptr_null(
		memmem(packed, len, WF_SECRET_TEXT, strlen(WF_SECRET_TEXT)));
	free(packed);
	report = kb_report_render(r);
	ck_assert_ptr_nonnull(strstr(report, "Secret run passed"));
	ck_assert_ptr_nonnull(strstr(report, "Score: 1.500 µs"));
	ck_assert_ptr_null(strstr(report, seed));
	free(report);
	/* The job directory is gone. */
	ck_assert(dir_empty(workroot));
	kb__result__free_unpacked(r, NULL);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

START_TEST(test_eval_stops_at_failure)
{
	Kb__Submission *s = wf_submission("c", KB__MODE__MODE_LEADERBOARD);
	Kb__Result *r;

	fake.fail_mode_call = 1; /* the test run */
	r = evaluate(s, NULL);
	ck_assert_int_eq(r->verdict, KB__VERDICT__VERDICT_FAILED);
	ck_assert_int_eq(r->fault, KB__FAULT__FAULT_USER);
	ck_assert_int_eq(fake.calls, 1);
	ck_assert_uint_eq(r->n_runs, 1);
	ck_assert_int_eq(r->runs[0]->passed, 0);
	ck_assert_int_eq(r->runs[0]->success, 1);
	ck_assert_int_eq(r->has_score, 0);
	ck_assert_str_eq(r->runs[0]->stderr, "harness stderr");
	kb__result__free_unpacked(r, NULL);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

START_TEST(test_eval_infra_exit)
{
	Kb__Submission *s = wf_submission("c", KB__MODE__MODE_LEADERBOARD);
	Kb__Result *r;

	/* Exit 110 before user code ran: the platform's. */
	fake.exit_call = 2; /* the ranked run */
	fake.exit_code = 110;
	r = evaluate(s, NULL);
	ck_assert_int_eq(r->verdict, KB__VERDICT__VERDICT_INFRA_ERROR);
	ck_assert_int_eq(r->fault, KB__FAULT__FAULT_INFRA);
	kb__result__free_unpacked(r, NULL);

	/* After "user-code: started": the user's. */
	fake.calls = 0;
	fake.exit_started = 1;
	r = evaluate(s, NULL);
	ck_assert_int_eq(r->verdict, KB__VERDICT__VERDICT_CRASHED);
	ck_assert_int_eq(r->fault, KB__FAULT__FAULT_USER);
	ck_assert_str_eq(r->error, "ranked run crashed: exit status 110 after "
				   "your code started");
	ck_assert_int_eq(r->has_score, 0);
	/* The harness runs are asked to remove their cases file. */
	ck_assert_msg(strstr(fake.env[0], "KBH_CASES_UNLINK=1") != NULL, "%s",
		      fake.env[0]);
	kb__result__free_unpacked(r, NULL);

	/* The CUDA relay's own verdict: crashed, with its reason. */
	fake.calls = 0;
	fake.exit_code = 115;
	fake.exit_crash = "custom_kernel ended the process (exit status 110)";
	r = evaluate(s, NULL);
	ck_assert_int_eq(r->verdict, KB__VERDICT__VERDICT_CRASHED);
	ck_assert_int_eq(r->fault, KB__FAULT__FAULT_USER);
	ck_assert_str_eq(r->error,
			 "ranked run crashed: custom_kernel ended the "
			 "process (exit status 110)");
	kb__result__free_unpacked(r, NULL);

	/* ... never quoted from the secret run. */
	fake.calls = 0;
	fake.exit_call = 3;
	r = evaluate(s, NULL);
	ck_assert_int_eq(r->verdict, KB__VERDICT__VERDICT_CRASHED);
	ck_assert_str_eq(r->error, "secret run crashed");
	kb__result__free_unpacked(r, NULL);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

START_TEST(test_eval_compile_error)
{
	Kb__Submission *s = wf_submission("c", KB__MODE__MODE_TEST);
	Kb__Result *r;
	char *report;

	fake.build_exit = 1;
	r = evaluate(s, NULL);
	ck_assert_int_eq(r->verdict, KB__VERDICT__VERDICT_COMPILE_ERROR);
	ck_assert_int_eq(r->fault, KB__FAULT__FAULT_USER);
	ck_assert_int_eq(fake.calls, 0);
	ck_assert_uint_eq(r->n_runs, 0);
	ck_assert_int_eq(r->compile->exit_code, 1);
	ck_assert_str_eq(r->compile->stderr, "submission.c:1: error: boom\n");
	report = kb_report_render(r);
	ck_assert_ptr_nonnull(strstr(report, "error: boom"));
	ck_assert_ptr_nonnull(strstr(report, "Compilation failed"));
	free(report);
	kb__result__free_unpacked(r, NULL);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

START_TEST(test_eval_timeout)
{
	Kb__Submission *s = wf_submission("c", KB__MODE__MODE_TEST);
	Kb__Result *r;

	fake.timeout_call = 1;
	r = evaluate(s, NULL);
	ck_assert_int_eq(r->verdict, KB__VERDICT__VERDICT_TIMEOUT);
	ck_assert_int_eq(r->fault, KB__FAULT__FAULT_USER);
	ck_assert_int_eq(r->runs[0]->timed_out, 1);
	ck_assert_int_eq(r->runs[0]->success, 0);
	kb__result__free_unpacked(r, NULL);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

/* The harness's own watchdog (exit 114) is a timeout like the worker's
 * kill, and every surface says so with the time it fired: the run is
 * timed_out, the verdict and the report give the same cause. */
START_TEST(test_eval_watchdog_timeout)
{
	Kb__Submission *s = wf_submission("c", KB__MODE__MODE_TEST);
	Kb__Result *r;
	char *report;

	fake.exit_call = 1;
	fake.exit_code = 114;
	fake.exit_started = 1;
	r = evaluate(s, NULL);
	ck_assert_int_eq(r->verdict, KB__VERDICT__VERDICT_TIMEOUT);
	ck_assert_int_eq(r->fault, KB__FAULT__FAULT_USER);
	ck_assert_int_eq(r->runs[0]->timed_out, 1);
	ck_assert_str_eq(r->error, "tests timed out after 0 s");
	report = kb_report_render(r);
	ck_assert_msg(strstr(report, "Tests timed out after 0.50 s") &&
			      !strstr(report, "crashed"),
		      "%s", report);
	free(report);
	kb__result__free_unpacked(r, NULL);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

START_TEST(test_eval_sandbox_failure)
{
	Kb__Submission *s = wf_submission("c", KB__MODE__MODE_LEADERBOARD);
	Kb__Result *r;

	fake.infra_call = 2; /* the ranked run */
	r = evaluate(s, NULL);
	ck_assert_int_eq(r->verdict, KB__VERDICT__VERDICT_INFRA_ERROR);
	ck_assert_int_eq(r->fault, KB__FAULT__FAULT_INFRA);
	ck_assert_msg(strstr(r->error, "fake sandbox failure") != NULL, "%s",
		      r->error);
	kb__result__free_unpacked(r, NULL);

	memset(&fake, 0, sizeof(fake));
	fake.build_infra = 1; /* the harness's build */
	r = evaluate(s, NULL);
	ck_assert_int_eq(r->verdict, KB__VERDICT__VERDICT_INFRA_ERROR);
	ck_assert_ptr_null(r->compile);
	kb__result__free_unpacked(r, NULL);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

/* Submissions the gateway should never have sent are the platform's
 * fault and start no command. */
START_TEST(test_eval_bad_submissions)
{
	Kb__Submission *s = wf_submission("c", KB__MODE__MODE_LEADERBOARD);
	Kb__Result *r;

	s->has_secret_seed = 0;
	r = evaluate(s, NULL);
	ck_assert_int_eq(r->verdict, KB__VERDICT__VERDICT_INFRA_ERROR);
	kb__result__free_unpacked(r, NULL);

	s->has_secret_seed = 1;
	kb__pb_set_str(&s->gpu, "H100");
	r = evaluate(s, NULL);
	ck_assert_int_eq(r->verdict, KB__VERDICT__VERDICT_INFRA_ERROR);
	ck_assert_msg(strstr(r->error, "H100") != NULL, "%s", r->error);
	kb__result__free_unpacked(r, NULL);

	kb__pb_set_str(&s->gpu, "CPU");
	wf_add_file(s->task, "../escape.c", "x");
	r = evaluate(s, NULL);
	ck_assert_int_eq(r->verdict, KB__VERDICT__VERDICT_INFRA_ERROR);
	kb__result__free_unpacked(r, NULL);

	kb__pb_set_str(&s->task->lang, "fortran");
	r = evaluate(s, NULL);
	ck_assert_int_eq(r->verdict, KB__VERDICT__VERDICT_INFRA_ERROR);
	kb__result__free_unpacked(r, NULL);
	ck_assert_int_eq(fake.calls, 0);
	ck_assert(dir_empty(workroot));
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

START_TEST(test_eval_languages)
{
	Kb__Submission *s = wf_submission("py", KB__MODE__MODE_TEST);
	Kb__Result *r = evaluate(s, NULL);

	ck_assert_int_eq(r->verdict, KB__VERDICT__VERDICT_PASSED);
	ck_assert_int_eq(fake.calls, 1);
	ck_assert_str_eq(fake.argv[0],
			 "python3|../task/eval.c|test|cases.txt|");
	ck_assert_ptr_null(r->compile);
	kb__result__free_unpacked(r, NULL);
	kb__submission__free_unpacked(s, NULL);

	memset(&fake, 0, sizeof(fake));
	s = wf_submission("cu", KB__MODE__MODE_TEST);
	r = evaluate(s, NULL);
	ck_assert_int_eq(r->verdict, KB__VERDICT__VERDICT_COMPILE_ERROR);
	ck_assert_int_eq(r->fault, KB__FAULT__FAULT_INFRA);
	ck_assert_int_eq(fake.calls, 0);
	ck_assert_msg(strstr(r->compile->stderr, "not supported") != NULL, "%s",
		      r->compile->stderr);
	kb__result__free_unpacked(r, NULL);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

/* Python tasks follow upstream's protocol for the secret run: the public
 * seeds in the cases file and the secret in POPCORN_SEED, for that run
 * alone, in upstream's range (kb_seed_env: WF_SECRET is above 2**32, which
 * upstream's set_seed would refuse); the interpreter's caches live in the
 * job's home. */
START_TEST(test_eval_python_secret)
{
	Kb__Submission *s = wf_submission("py", KB__MODE__MODE_LEADERBOARD);
	Kb__Result *r = evaluate(s, NULL);
	char want[64];

	ck_assert_msg(r->verdict == KB__VERDICT__VERDICT_PASSED, "%s",
		      r->error);
	ck_assert_int_eq(fake.calls, 3);
	ck_assert_int_eq(fake.builds, 0);
	ck_assert_str_eq(fake.cases[2],
			 "size: 3; seed: 13\nsize: 4; seed: 14\n");
	ck_assert_uint_gt(WF_SECRET, 0xffffffffull);
	snprintf(want, sizeof(want), "|POPCORN_SEED=%llu|",
		 (unsigned long long)kb_seed_env(WF_SECRET));
	ck_assert_msg(strstr(fake.env[2], want), "%s", fake.env[2]);
	for (int k = 0; k < 2; k++)
		ck_assert_msg(!strstr(fake.env[k], "POPCORN_SEED"), "%s",
			      fake.env[k]);
	for (int k = 0; k < 3; k++)
		ck_assert_msg(strstr(fake.env[k], "TORCH_EXTENSIONS_DIR=") &&
				      strstr(fake.env[k],
					     "TRITON_CACHE_DIR=") &&
				      strstr(fake.env[k], "/home/"),
			      "%s", fake.env[k]);
	kb__result__free_unpacked(r, NULL);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

/* KB_PY_SENTINEL: every Python harness run gets KBH_SENTINEL=1 (the
 * harness uses it where it times on an NVIDIA GPU); without it, none. */
START_TEST(test_eval_python_sentinel_env)
{
	Kb__Submission *s = wf_submission("py", KB__MODE__MODE_LEADERBOARD);
	struct kb_eval_opts o = fake_opts();
	Kb__Result *r;

	o.py_sentinel = 1;
	r = kb_eval_run(&o, s);

	ck_assert_msg(r->verdict == KB__VERDICT__VERDICT_PASSED, "%s",
		      r->error);
	ck_assert_int_eq(fake.calls, 3);
	for (int k = 0; k < 3; k++)
		ck_assert_msg(strstr(fake.env[k], "|KBH_SENTINEL=1|"), "%s",
			      fake.env[k]);
	kb__result__free_unpacked(r, NULL);
	fake.calls = 0;
	r = evaluate(s, NULL);
	ck_assert_int_eq(fake.calls, 3);
	for (int k = 0; k < 3; k++)
		ck_assert_msg(!strstr(fake.env[k], "KBH_SENTINEL"), "%s",
			      fake.env[k]);
	kb__result__free_unpacked(r, NULL);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

/* A worker whose KB_PYTHON did not resolve: its Python jobs are the
 * platform's fault, and start nothing. */
START_TEST(test_eval_python_missing)
{
	Kb__Submission *s = wf_submission("py", KB__MODE__MODE_TEST);
	struct kb_eval_opts o = fake_opts();
	Kb__Result *r;

	o.python_why = "KB_PYTHON python3: not found in PATH";
	r = kb_eval_run(&o, s);

	ck_assert_int_eq(r->verdict, KB__VERDICT__VERDICT_INFRA_ERROR);
	ck_assert_int_eq(r->fault, KB__FAULT__FAULT_INFRA);
	ck_assert_msg(strstr(r->error, "no Python runtime"), "%s", r->error);
	ck_assert_int_eq(fake.calls, 0);
	kb__result__free_unpacked(r, NULL);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

START_TEST(test_eval_cancelled)
{
	Kb__Submission *s = wf_submission("c", KB__MODE__MODE_TEST);
	atomic_int cancel;
	Kb__Result *r;

	atomic_init(&cancel, 1);
	r = evaluate(s, &cancel);
	ck_assert_int_eq(fake.calls, 0);
	ck_assert_int_eq(r->verdict, KB__VERDICT__VERDICT_INFRA_ERROR);
	kb__result__free_unpacked(r, NULL);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

/* ---- reports ---------------------------------------------------------- */

static void add_kv(Kb__RunResult *rr, const char *k, const char *v)
{
	Kb__KeyValue *kv = kb__xcalloc(1, sizeof(*kv));

	kb__key_value__init(kv);
	kv->key = kb__xstrdup(k);
	kv->value = kb__xstrdup(v);
	kb__pb_append(&rr->result, &rr->n_result, kv);
}

static Kb__RunResult *add_run(Kb__Result *r, const char *key, int passed)
{
	Kb__RunResult *rr = kb__xcalloc(1, sizeof(*rr));

	kb__run_result__init(rr);
	rr->key = kb__xstrdup(key);
	rr->success = 1;
	rr->passed = passed;
	rr->duration_s = 1.25;
	kb__pb_append(&r->runs, &r->n_runs, rr);
	return rr;
}

/* A Result as a careless producer might fill it: the secret run with its
 * output and specs. The report must show none of it. */
static Kb__Result *leaky_result(int private_passed)
{
	Kb__Result *r = kb__xcalloc(1, sizeof(*r));
	Kb__RunResult *rr;

	kb__result__init(r);
	r->leaderboard = kb__xstrdup("vectorsum_cpu");
	r->gpu = kb__xstrdup("CPU");
	r->mode = KB__MODE__MODE_LEADERBOARD;
	rr = add_run(r, "test", 1);
	add_kv(rr, "test-count", "1");
	add_kv(rr, "test.0.spec", "size: 1024; seed: 1");
	add_kv(rr, "test.0.status", "pass");
	add_kv(rr, "check", "pass");
	rr = add_run(r, "leaderboard", 1);
	add_kv(rr, "benchmark-count", "1");
	add_kv(rr, "benchmark.0.spec", "size: 4096; seed: 5");
	add_kv(rr, "benchmark.0.runs", "100");
	add_kv(rr, "benchmark.0.mean", "1234.5");
	add_kv(rr, "benchmark.0.err", "1.5");
	add_kv(rr, "benchmark.0.best", "1200");
	add_kv(rr, "benchmark.0.worst", "1400");
	add_kv(rr, "benchmark.0.gbps", "13.27");
	add_kv(rr, "check", "pass");
	rr = add_run(r, "private", private_passed);
	kb__pb_set_str(&rr->stdout, "PRIVATE-STDOUT");
	kb__pb_set_str(&rr->stderr, "PRIVATE-STDERR");
	add_kv(rr, "benchmark-count", "1");
	add_kv(rr, "benchmark.0.spec", "size: 4096; seed: 31415926535");
	add_kv(rr, "benchmark.0.error", "mismatch for seed 31415926535");
	add_kv(rr, "benchmark.0.mean", "7777.5");
	add_kv(rr, "check", private_passed ? "pass" : "fail");
	r->has_score = private_passed;
	r->score = 1234.5e-9;
	r->verdict = private_passed ? KB__VERDICT__VERDICT_PASSED
				    : KB__VERDICT__VERDICT_FAILED;
	r->fault = private_passed ? KB__FAULT__FAULT_NONE
				  : KB__FAULT__FAULT_USER;
	kb__pb_set_str(&r->error, private_passed ? "" : "secret run failed");
	return r;
}

START_TEST(test_report_hides_private)
{
	static const char *const secret[] = {"PRIVATE", "31415926535", "7.777",
					     "7777"};
	Kb__Result *r = leaky_result(_i);
	char *text = kb_report_render(r);
	json_t *j;
	char *js;

	ck_assert_ptr_nonnull(text);
	for (size_t i = 0; i < sizeof(secret) / sizeof(secret[0]); i++)
		ck_assert_msg(strstr(text, secret[i]) == NULL,
			      "report shows \"%s\":\n%s", secret[i], text);
	ck_assert_ptr_nonnull(strstr(text, _i ? "✅ Secret run passed"
					      : "❌ Secret run failed"));
	ck_assert_ptr_nonnull(strstr(text, "size: 1024; seed: 1"));
	ck_assert_ptr_nonnull(strstr(text, "size: 4096; seed: 5"));
	ck_assert_ptr_nonnull(strstr(text, "1.234 µs ± 1.5 ns"));
	ck_assert_ptr_nonnull(strstr(text, "runs 100"));
	ck_assert_ptr_nonnull(strstr(text, "📈 13.27 GB/s"));
	ck_assert_ptr_nonnull(
		strstr(text, _i ? "Verdict: passed" : "Verdict: failed"));
	ck_assert(!!strstr(text, "Score:") == _i);
	free(text);

	kb_report_redact(r);
	j = kb_pbjson(&r->base);
	js = json_dumps(j, 0);
	for (size_t i = 0; i < sizeof(secret) / sizeof(secret[0]); i++)
		ck_assert_msg(strstr(js, secret[i]) == NULL,
			      "json shows %s: %s", secret[i], js);
	ck_assert_ptr_nonnull(strstr(js, "\"benchmark.0.gbps\": \"13.27\""));
	ck_assert_ptr_nonnull(strstr(js, "\"mode\": \"MODE_LEADERBOARD\""));
	free(js);
	json_decref(j);
	kb__result__free_unpacked(r, NULL);
}
END_TEST

/* JSON of a Result whose output is not UTF-8 and whose numbers are not
 * finite: the bad bytes become U+FFFD and the numbers null, and nothing
 * else is lost. */
START_TEST(test_pbjson_bad_text)
{
	Kb__Result *r = leaky_result(0);
	Kb__RunResult *t = r->runs[0];

	kb__pb_set_str(&t->stdout, "ok \xff\xfe end \xe2\x82");
	add_kv(t, "bad\xc3key", "v\x80");
	t->duration_s = NAN;
	r->score = INFINITY;
	/* A profile without a trace (bytes of length 0, data NULL). */
	t->profile = kb__xcalloc(1, sizeof(*t->profile));
	kb__profile__init(t->profile);
	json_t *j = kb_pbjson(&r->base);
	ck_assert_ptr_nonnull(j);
	json_t *run = json_array_get(json_object_get(j, "runs"), 0);
	ck_assert_str_eq(
		json_string_value(json_object_get(run, "stdout")),
		"ok \xef\xbf\xbd\xef\xbf\xbd end \xef\xbf\xbd\xef\xbf\xbd");
	ck_assert(json_is_null(json_object_get(run, "duration_s")));
	ck_assert(json_is_null(json_object_get(j, "score")));
	ck_assert_str_eq(json_string_value(
				 json_object_get(json_object_get(run, "result"),
						 "bad\xef\xbf\xbdkey")),
			 "v\xef\xbf\xbd");
	ck_assert_str_eq(json_string_value(json_object_get(
				 json_object_get(run, "profile"), "trace")),
			 "");
	json_decref(j);
	kb__result__free_unpacked(r, NULL);
}
END_TEST

START_TEST(test_report_failures)
{
	Kb__Result *r = leaky_result(1);
	Kb__RunResult *t = r->runs[0];
	char *text;

	/* A failed test shows its message and the program's output. */
	t->passed = 0;
	kb__pb_set_str(&t->result[2]->value, "fail");
	add_kv(t, "test.0.error", "mismatch at index 7");
	kb__pb_set_str(&t->stderr, "debug print from the submission");
	r->n_runs = 1; /* later runs never happened */
	text = kb_report_render(r);
	ck_assert_ptr_nonnull(strstr(text, "❌ Tests failed (0/1"));
	ck_assert_ptr_nonnull(strstr(text, "mismatch at index 7"));
	ck_assert_ptr_nonnull(strstr(text, "debug print from the submission"));
	free(text);
	t->timed_out = 1;
	t->success = 0;
	text = kb_report_render(r);
	ck_assert_ptr_nonnull(strstr(text, "Tests timed out"));
	free(text);

	/* A crash in the first of three tests: the rest were never run. */
	t->timed_out = 0;
	t->signal = 11;
	kb__pb_set_str(&t->result[0]->value, "3");
	kb__key_value__free_unpacked(t->result[2], NULL);
	t->result[2] = t->result[--t->n_result]; /* drop test.0.status */
	text = kb_report_render(r);
	ck_assert_ptr_nonnull(strstr(text, "❌ Tests crashed (signal 11"));
	ck_assert_ptr_nonnull(
		strstr(text, "❌ size: 1024; seed: 1 (no result)"));
	ck_assert_ptr_nonnull(strstr(text, "… 2 more not reached"));
	ck_assert_ptr_null(strstr(text, "❌ ?"));
	free(text);
	r->n_runs = 3;
	kb__result__free_unpacked(r, NULL);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("worker");
	TCase *tc;

	tc = tcase_create("jobdir");
	tcase_add_test(tc, test_name_ok);
	tcase_add_test(tc, test_materialize);
	tcase_add_loop_test(tc, test_materialize_rejects, 0, 7);
	tcase_add_test(tc, test_step_take);
	tcase_add_test(tc, test_sweep);
	tcase_add_test(tc, test_remove_hostile_tree);
	suite_add_tcase(s, tc);

	tc = tcase_create("plan");
	tcase_add_test(tc, test_python_parse);
	tcase_add_test(tc, test_job_max);
	tcase_add_test(tc, test_plan_modes);
	tcase_add_test(tc, test_plan_leaderboard);
	tcase_add_test(tc, test_plan_timeouts);
	suite_add_tcase(s, tc);

	tc = tcase_create("verdict");
	tcase_add_loop_test(tc, test_verdict_passed_scores, 0, 3);
	tcase_add_test(tc, test_verdict_private_fails);
	tcase_add_test(tc, test_verdict_user_ends);
	tcase_add_test(tc, test_verdict_build);
	tcase_add_test(tc, test_verdict_infra);
	tcase_add_test(tc, test_verdict_suspect);
	tcase_add_test(tc, test_suspect_detection);
	tcase_add_test(tc, test_private_keys);
	suite_add_tcase(s, tc);

	tc = tcase_create("starve");
	tcase_add_test(tc, test_starve_judge);
	tcase_add_test(tc, test_starve_sample);
	suite_add_tcase(s, tc);

	tc = tcase_create("eval");
	tcase_add_checked_fixture(tc, fake_setup, fake_teardown);
	tcase_add_test(tc, test_eval_leaderboard);
	tcase_add_test(tc, test_eval_stops_at_failure);
	tcase_add_test(tc, test_eval_infra_exit);
	tcase_add_test(tc, test_eval_compile_error);
	tcase_add_test(tc, test_eval_timeout);
	tcase_add_test(tc, test_eval_watchdog_timeout);
	tcase_add_test(tc, test_eval_sandbox_failure);
	tcase_add_test(tc, test_eval_bad_submissions);
	tcase_add_test(tc, test_eval_languages);
	tcase_add_test(tc, test_eval_cancelled);
	tcase_add_test(tc, test_eval_python_secret);
	tcase_add_test(tc, test_eval_python_sentinel_env);
	tcase_add_test(tc, test_eval_python_missing);
	suite_add_tcase(s, tc);

	tc = tcase_create("report");
	tcase_add_loop_test(tc, test_report_hides_private, 0, 2);
	tcase_add_test(tc, test_report_failures);
	tcase_add_test(tc, test_pbjson_bad_text);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	kb_log_init("worker-test", KB_LOG_ERROR, 0);
	return kb_check_run(suite());
}
