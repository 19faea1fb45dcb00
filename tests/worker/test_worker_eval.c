/* `kb-worker eval` end to end on the CPU problems: the real compiler, the
 * real harness, the real sandbox (isolated where this host allows). */
#include <check.h>
#include <dirent.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "eval.h"
#include "eval_ready.h"
#include "jobdir.h"
#include "kb_budget.h"
#include "kb_cases.h"
#include "kb_log.h"
#include "kb_sandbox.h"
#include "kb_task.h"
#include "kb_util.h"
#include "pbutil.h"
#include "python.h"
#include "worker_fixture.h"
#include "kb_check_main.h"

#define WORKER KB_BINARY_DIR "/worker/kb-worker"
#define PROBLEMS KB_SOURCE_DIR "/problems"
#define SHORT_TIMEOUT_S 3

static char *tmp;     /* scratch: submissions, task copies */
static char *workdir; /* KB_WORKDIR of the worker under test */
static char env_workdir[4200];
static const char *isolate_env = "KB_SANDBOX_ISOLATE=1";

struct eval {
	int status; /* exit status, or -1 when it did not exit */
	char *out, *err;
	double wall_s;
};

static void setup(void)
{
	struct kb_sandbox_caps caps;
	char err[256];

	tmp = wf_tmpdir();
	workdir = wf_tmpdir();
	ck_assert_ptr_nonnull(tmp);
	ck_assert_ptr_nonnull(workdir);
	snprintf(env_workdir, sizeof(env_workdir), "KB_WORKDIR=%s", workdir);
	/* Isolation where the host allows it; the tests are about the worker,
	 * and the sandbox has suites of its own. */
	if (kb_sandbox_probe(&caps, err, sizeof(err)) < 0 || !caps.isolate_ok)
		isolate_env = "KB_SANDBOX_ISOLATE=0";
}

static void teardown(void)
{
	kb_jobdir_remove(tmp);
	kb_jobdir_remove(workdir);
	free(tmp);
	free(workdir);
}

static struct eval run_eval(const char *problem, const char *file,
			    const char *mode, const char *extra1,
			    const char *extra2)
{
	char *argv[] = {WORKER,         "eval",         (char *)problem,
			(char *)file,   "--mode",       (char *)mode,
			(char *)extra1, (char *)extra2, NULL};
	char *env[] = {env_workdir, (char *)isolate_env, "KB_GPU=CPU",
		       "KB_PYTHON=" KB_TEST_PYTHON, NULL};
	struct eval e;
	int st = wf_run(argv, env, &e.out, &e.err, &e.wall_s);

	e.status = st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return e;
}

static void eval_free(struct eval *e)
{
	free(e->out);
	free(e->err);
}

static char *write_tmp(const char *name, const char *text)
{
	char *path = kb__xasprintf("%s/%s", tmp, name);

	ck_assert_int_eq(kb_write_file(path, text, strlen(text), 0644), 0);
	return path;
}

static int workdir_empty(void)
{
	char cmd[4300];

	/* The harness cache stays; no job directory may. */
	snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A '%s' | grep -vx cache)\"",
		 workdir);
	return system(cmd) == 0;
}

#define assert_has(e, needle)                                                  \
	ck_assert_msg(strstr((e).out, needle) != NULL,                         \
		      "stdout lacks \"%s\":\n%s\nstderr:\n%s", needle,         \
		      (e).out, (e).err)

START_TEST(test_correct_leaderboard)
{
	static const char *const problems[] = {"vectorsum_cpu", "matmul_cpu"};
	char dir[4096], file[4200];
	struct eval e;

	snprintf(dir, sizeof(dir), "%s/%s", PROBLEMS, problems[_i]);
	snprintf(file, sizeof(file), "%s/submission_ok.c", dir);
	/* A loaded machine can make the harness distrust its timings
	 * (verdict suspect): then once more, up to three times. */
	for (int attempt = 1;; attempt++) {
		e = run_eval(dir, file, "leaderboard", NULL, NULL);
		if (attempt == 3 || !e.out ||
		    !strstr(e.out, "Verdict: suspect"))
			break;
		fprintf(stderr, "%s: attempt %d suspect\n", problems[_i],
			attempt);
		eval_free(&e);
	}
	ck_assert_msg(e.status == 0, "exit %d\n%s\n%s", e.status, e.out, e.err);
	assert_has(e, "✅ Compilation successful");
	assert_has(e, "✅ Tests passed");
	assert_has(e, "✅ Ranked run passed");
	assert_has(e, "✅ Secret run passed");
	assert_has(e, "Score: ");
	assert_has(e, "Verdict: passed");
	ck_assert(workdir_empty());
	eval_free(&e);
}
END_TEST

START_TEST(test_wrong_fails)
{
	static const char *const problems[] = {"vectorsum_cpu", "matmul_cpu"};
	char dir[4096], file[4200];
	struct eval e;

	snprintf(dir, sizeof(dir), "%s/%s", PROBLEMS, problems[_i]);
	snprintf(file, sizeof(file), "%s/submission_wrong.c", dir);
	e = run_eval(dir, file, "leaderboard", NULL, NULL);
	ck_assert_msg(e.status == 1, "exit %d\n%s\n%s", e.status, e.out, e.err);
	assert_has(e, "❌ Tests failed");
	assert_has(e, "Verdict: failed");
	ck_assert_msg(strstr(e.out, "Score:") == NULL, "%s", e.out);
	ck_assert_msg(strstr(e.out, "Ranked run") == NULL, "%s", e.out);
	eval_free(&e);
}
END_TEST

/* CPU harness runs get OMP_WAIT_POLICY=passive (worker/run/eval.c: spinning
 * OpenMP threads in the stopped-between-calls child wrecked timings on
 * many cores). The submission sums correctly only when it sees it. */
START_TEST(test_cpu_env_omp_passive)
{
	static const char sub[] =
		"#include <stddef.h>\n"
		"#include <stdlib.h>\n"
		"#include <string.h>\n"
		"float custom_kernel(const float *d, size_t n)\n"
		"{\n"
		"\tconst char *w = getenv(\"OMP_WAIT_POLICY\");\n"
		"\tdouble s = w && !strcmp(w, \"passive\") ? 0 : 1e6;\n"
		"\tfor (size_t i = 0; i < n; i++)\n"
		"\t\ts += d[i];\n"
		"\treturn (float)s;\n"
		"}\n";
	char dir[4096];
	char *file = write_tmp("omp_env.c", sub);
	struct eval e;

	snprintf(dir, sizeof(dir), "%s/vectorsum_cpu", PROBLEMS);
	e = run_eval(dir, file, "test", NULL, NULL);
	ck_assert_msg(e.status == 0, "exit %d\n%s\n%s", e.status, e.out, e.err);
	assert_has(e, "✅ Tests passed");
	eval_free(&e);
	free(file);
}
END_TEST

START_TEST(test_syntax_error)
{
	char *file = write_tmp("syntax.c",
			       "#include <stddef.h>\n"
			       "float custom_kernel(const float *d, size_t n)\n"
			       "{\n\treturn d[0] +;\n}\n");
	struct eval e =
		run_eval(PROBLEMS "/vectorsum_cpu", file, "test", NULL, NULL);

	ck_assert_msg(e.status == 1, "exit %d\n%s\n%s", e.status, e.out, e.err);
	assert_has(e, "❌ Compilation failed (exit status 1)");
	assert_has(e, "submission.c:4:"); /* the compiler names the line */
	assert_has(e, "error:");
	assert_has(e, "Verdict: compile_error");
	free(file);
	eval_free(&e);
}
END_TEST

/* Code that runs when the submission is loaded -- a constructor that
 * forges a passing report and exits -- runs in the harness's confined
 * child, where the report channel is not: the run ends as a crash, with
 * nothing forged. */
START_TEST(test_constructor_contained)
{
	char *file = write_tmp(
		"ctor.c",
		"#include <stddef.h>\n"
		"#include <unistd.h>\n"
		"__attribute__((constructor)) static void f(void)\n"
		"{ (void)!write(3, \"check: pass\\n\", 12); _exit(0); }\n"
		"float custom_kernel(const float *d, size_t n)\n"
		"{ float s = 0; for (size_t i = 0; i < n; i++) s += d[i];"
		" return s; }\n");
	struct eval e =
		run_eval(PROBLEMS "/vectorsum_cpu", file, "test", NULL, NULL);

	ck_assert_msg(e.status == 1, "exit %d\n%s\n%s", e.status, e.out, e.err);
	assert_has(e, "Compilation successful");
	assert_has(e, "exited with status 0 while loading it");
	assert_has(e, "Verdict: crashed");
	free(file);
	eval_free(&e);
}
END_TEST

/* Copies every regular file of src into the new directory dst. */
static void copy_dir(const char *src, const char *dst)
{
	DIR *d = opendir(src);
	struct dirent *e;

	ck_assert_ptr_nonnull(d);
	ck_assert_int_eq(mkdir(dst, 0755), 0);
	while ((e = readdir(d))) {
		char from[4400], to[4400];
		struct stat st;

		snprintf(from, sizeof(from), "%s/%s", src, e->d_name);
		snprintf(to, sizeof(to), "%s/%s", dst, e->d_name);
		if (stat(from, &st) == 0 && S_ISREG(st.st_mode))
			ck_assert_int_eq(wf_copy_file(from, to), 0);
	}
	closedir(d);
}

/* A copy of vectorsum_cpu (with the harness beside it, where the task's
 * relative sources expect it) whose timeout key (test_timeout, ...) is
 * seconds. */
static char *vectorsum_with_timeout(const char *key, int seconds)
{
	char *dir = kb__xasprintf("%s/vectorsum_cpu", tmp);
	char *harness = kb__xasprintf("%s/harness", tmp);
	char *yml, *line, *text, path[4200], find[64];
	size_t len;

	copy_dir(PROBLEMS "/harness", harness);
	copy_dir(PROBLEMS "/vectorsum_cpu", dir);
	snprintf(path, sizeof(path), "%s/task.yml", dir);
	ck_assert_int_eq(kb_read_file(path, SIZE_MAX, &yml, &len), 0);
	snprintf(find, sizeof(find), "\n%s:", key);
	line = strstr(yml, find);
	ck_assert_ptr_nonnull(line);
	line[1] = '#'; /* comment the original out, then add ours */
	text = kb__xasprintf("%s\n%s: %d\n", yml, key, seconds);
	ck_assert_int_eq(kb_write_file(path, text, strlen(text), 0644), 0);
	free(text);
	free(yml);
	free(harness);
	return dir;
}

static char *short_timeout_task(void)
{
	return vectorsum_with_timeout("test_timeout", SHORT_TIMEOUT_S);
}

/* Spinners, each in a session of its own (so in its own scheduler
 * autogroup, as other tenants' processes are), n of them; returns their
 * pids in pids. */
static void load_start(pid_t *pids, int n)
{
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		ck_assert_int_ge(pids[i], 0);
		if (pids[i] == 0) {
			setsid();
			alarm(120); /* never outlives a crashed test for long */
			for (volatile unsigned long x = 0;; x++)
				;
		}
	}
}

static void load_stop(const pid_t *pids, int n)
{
	for (int i = 0; i < n; i++) {
		kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, 0);
	}
}

/* An honest ranked submission on a host that other load starves (four
 * spinners per CPU) is never charged a timeout: its ranked run, 2 s of
 * work alone, cannot finish within its 3 s limit there, and the worker
 * sees that the host, not the code, took the time (infra_error, the
 * platform's fault), or it passes. */
START_TEST(test_starved_run_not_charged)
{
	char *task = vectorsum_with_timeout("ranked_timeout", 3);
	char *file = kb__xasprintf("%s/submission_ok.c", task);
	int n = 4 * (int)sysconf(_SC_NPROCESSORS_ONLN);
	pid_t pids[256];
	json_error_t jerr;
	json_t *j;
	struct eval e;

	if (n > 256)
		n = 256;
	load_start(pids, n);
	e = run_eval(task, file, "leaderboard", "--json", NULL);
	load_stop(pids, n);
	j = json_loads(e.out, 0, &jerr);
	ck_assert_msg(j != NULL, "not JSON (%s):\n%s\n%s", jerr.text, e.out,
		      e.err);
	const char *verdict = json_string_value(json_object_get(j, "verdict"));
	const char *fault = json_string_value(json_object_get(j, "fault"));
	const char *error = json_string_value(json_object_get(j, "error"));
	ck_assert_msg(strcmp(verdict, "VERDICT_TIMEOUT") != 0 &&
			      strcmp(fault ? fault : "", "FAULT_USER") != 0,
		      "charged: %s %s: %s\n%s", verdict, fault, error, e.err);
	if (strcmp(verdict, "VERDICT_INFRA_ERROR") == 0)
		ck_assert_msg(error &&
				      strstr(error, "the host starved the run"),
			      "%s", error);
	fprintf(stderr, "starved run: %s %s %s\n", verdict, fault ? fault : "",
		error ? error : "");
	ck_assert(workdir_empty());
	json_decref(j);
	free(file);
	free(task);
	eval_free(&e);
}
END_TEST

START_TEST(test_infinite_loop_times_out)
{
	char *task = short_timeout_task();
	char *file = write_tmp("loop.c",
			       "#include <stddef.h>\n"
			       "float custom_kernel(const float *d, size_t n)\n"
			       "{\n\tvolatile int spin = 1;\n\twhile (spin)\n"
			       "\t\t;\n\treturn 0;\n}\n");
	struct eval e = run_eval(task, file, "test", "--json", NULL);
	json_error_t jerr;
	json_t *j = json_loads(e.out, 0, &jerr), *run;
	double duration;

	ck_assert_msg(e.status == 1, "exit %d\n%s\n%s", e.status, e.out, e.err);
	ck_assert_msg(j != NULL, "not JSON (%s):\n%s", jerr.text, e.out);
	ck_assert_str_eq(json_string_value(json_object_get(j, "verdict")),
			 "VERDICT_TIMEOUT");
	ck_assert_str_eq(json_string_value(json_object_get(j, "fault")),
			 "FAULT_USER");
	run = json_array_get(json_object_get(j, "runs"), 0);
	ck_assert_ptr_nonnull(run);
	duration = json_real_value(json_object_get(run, "duration_s"));
	/* Not killed before the limit; killed at it (the loop never ends, so
	 * the verdict is the kill). How soon after the limit is a budget:
	 * load stretches it. */
	ck_assert_msg(duration >= SHORT_TIMEOUT_S - 0.5,
		      "run took %.2f s for a %d s limit", duration,
		      SHORT_TIMEOUT_S);
	kb_budget("worker eval: timed-out run's duration past its limit",
		  duration - SHORT_TIMEOUT_S, 2.0, "s");
	kb_budget("worker eval: whole eval of a timed-out run", e.wall_s,
		  SHORT_TIMEOUT_S + 30.0, "s");
	ck_assert(workdir_empty());
	json_decref(j);
	free(task);
	free(file);
	eval_free(&e);
}
END_TEST

/* With a known secret, nothing the worker prints reveals a seed of the
 * secret run, and the JSON form leaves its output out too. */
START_TEST(test_secret_not_printed)
{
	static const uint64_t secret = 4096;
	struct eval e = run_eval(PROBLEMS "/vectorsum_cpu",
				 PROBLEMS "/vectorsum_cpu/submission_ok.c",
				 "leaderboard", "--seed=4096",
				 _i ? "--json" : NULL);
	struct kb_task t;
	char err[256];

	/* A loaded host can make the harness distrust its timings (verdict
	 * suspect, exit 1): a judgment of timing, not what this test is
	 * about, which is what the output shows of the secret run. */
	ck_assert_msg(e.status == 0 || (e.status == 1 && e.out &&
					(strstr(e.out, "Verdict: suspect") ||
					 strstr(e.out, "VERDICT_SUSPECT"))),
		      "exit %d\n%s\n%s", e.status, e.out, e.err);
	ck_assert_int_eq(kb_task_load_dir(PROBLEMS "/vectorsum_cpu",
					  "vectorsum_cpu", &t, err,
					  sizeof(err)),
			 0);
	ck_assert_uint_gt(t.nbenchmarks, 0);
	for (size_t i = 0; i < t.nbenchmarks; i++) {
		struct kb_case c;
		char seed[24];

		ck_assert_int_eq(kb_case_parse(t.benchmarks[i], &c, err,
					       sizeof(err)),
				 0);
		ck_assert_ptr_nonnull(kb_case_get(&c, "seed"));
		snprintf(seed, sizeof(seed), "%llu",
			 (unsigned long long)kb_seed_combine(
				 strtoull(kb_case_get(&c, "seed"), NULL, 10),
				 secret));
		kb_case_clear(&c);
		ck_assert_msg(strstr(e.out, seed) == NULL &&
				      strstr(e.err, seed) == NULL,
			      "combined seed %s printed:\n%s%s", seed, e.out,
			      e.err);
	}
	kb_task_clear(&t);
	if (_i) {
		json_t *j = json_loads(e.out, 0, NULL);
		json_t *runs = json_object_get(j, "runs"), *priv;

		ck_assert_uint_eq(json_array_size(runs), 3);
		priv = json_array_get(runs, 2);
		ck_assert_str_eq(
			json_string_value(json_object_get(priv, "key")),
			"private");
		ck_assert_str_eq(
			json_string_value(json_object_get(priv, "stdout")), "");
		ck_assert_uint_eq(
			json_object_size(json_object_get(priv, "result")), 0);
		/* scored, unless the loaded host made it suspect (above) */
		ck_assert(json_is_true(json_object_get(j, "has_score")) ==
			  (e.status == 0));
		json_decref(j);
	}
	eval_free(&e);
}
END_TEST

START_TEST(test_usage_errors)
{
	struct eval e = run_eval(PROBLEMS "/vectorsum_cpu",
				 PROBLEMS "/vectorsum_cpu/submission_ok.c",
				 "ranked", NULL, NULL);

	ck_assert_int_eq(e.status, 2);
	eval_free(&e);
	e = run_eval(PROBLEMS "/no_such_problem",
		     PROBLEMS "/vectorsum_cpu/submission_ok.c", "test", NULL,
		     NULL);
	ck_assert_int_eq(e.status, 1);
	ck_assert_msg(strstr(e.err, "no_such_problem") != NULL, "%s", e.err);
	eval_free(&e);
}
END_TEST

/* `kb-worker selftest --gpu CPU`: the start-up checks alone, with the
 * options the service takes. */
START_TEST(test_selftest_command)
{
	char *argv[] = {WORKER, "selftest", "--gpu", "CPU", NULL};
	char *bad[] = {WORKER, "selftest", "--bogus", NULL};
	char *env[] = {env_workdir, (char *)isolate_env,
		       "KB_PROBLEMS=" PROBLEMS "/cpu.yaml", NULL};
	struct eval e;
	int st = wf_run(argv, env, &e.out, &e.err, &e.wall_s);

	ck_assert_msg(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s",
		      e.err);
	eval_free(&e);
	st = wf_run(bad, env, &e.out, &e.err, &e.wall_s);
	ck_assert(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 2);
	eval_free(&e);
}
END_TEST

/* An upstream-shaped Python problem runs unmodified: its own eval.py and
 * ../utils.py, the submission imported by it, POPCORN_SEED for the secret
 * run (tests/worker/data/upstream_py). */
START_TEST(test_python_upstream)
{
	static const struct {
		const char *sub, *mode, *verdict;
		int status;
	} cases[] = {
		{"submission_ok.py", "test", "Verdict: passed", 0},
		{"submission_wrong.py", "test", "Verdict: failed", 1},
		{"submission_ok.py", "leaderboard", "Verdict: passed", 0},
	};
	char file[4200];
	struct eval e;

	snprintf(file, sizeof(file), "%s/upstream_py/vectoradd/%s",
		 KB_TEST_DATA, cases[_i].sub);
	e = run_eval(KB_TEST_DATA "/upstream_py/vectoradd", file,
		     cases[_i].mode, NULL, NULL);
	ck_assert_msg(e.status == cases[_i].status, "exit %d\n%s\n%s", e.status,
		      e.out, e.err);
	assert_has(e, cases[_i].verdict);
	if (_i == 2) {
		assert_has(e, "Secret run passed");
		assert_has(e, "Score: ");
	}
	ck_assert(workdir_empty());
	eval_free(&e);
}
END_TEST

/* Python jobs start ahead (KB_PYTHON_READY, worker/run/ready.h): with
 * --repeat 2 each job takes a held run, whose interpreter imported torch
 * before the job, and passes or fails as it would in a fresh one. The
 * submission prints its own command line and descriptors: in a held run
 * it is the child ready.py started, with nothing more open than the child
 * our harness starts itself (no go socket, no report pipe). Loop: 0 our
 * harness, held; 1 the same with KB_PYTHON_READY=0; 2 the upstream-shaped
 * fixture ranked, held (its secret run is never a held one: it gets
 * POPCORN_SEED). */
START_TEST(test_python_held)
{
	static const char probe[] =
		"import os as _os\n"
		"_l = []\n"
		"for _fd in sorted(_os.listdir('/proc/self/fd'), key=int):\n"
		"    try:\n"
		"        _l.append('%s:%s' % (_fd, _os.readlink('/proc/self/fd/' + "
		"_fd).split('[')[0]))\n"
		"    except OSError:\n"
		"        pass\n"
		"print('probe cmdline=%s fds=%s end' % (open('/proc/self/cmdline')"
		".read().replace('\\0', ' ').strip(), ' '.join(_l)), "
		"flush=True)\n";
	char *argv[] = {WORKER,  "eval", NULL,       NULL, "--mode", NULL,
			"--gpu", "CPU",  "--repeat", "2",  "--json", NULL};
	char *env[] = {env_workdir,
		       (char *)isolate_env,
		       "KB_GPU=CPU",
		       "KB_PYTHON=" KB_TEST_PYTHON,
		       _i == 1 ? "KB_PYTHON_READY=0" : "KB_PYTHON_READY=1",
		       NULL};
	char *code, *ok, *file, *line, *end;
	size_t len;
	struct eval e;
	int st, sockets = 0;

	if (_i == 2) {
		argv[2] = KB_TEST_DATA "/upstream_py/vectoradd";
		argv[3] = KB_TEST_DATA
			"/upstream_py/vectoradd/submission_ok.py";
		argv[5] = "leaderboard";
		file = NULL;
	} else {
		ck_assert_int_eq(kb_read_file(PROBLEMS "/pmpp_py/vectoradd/"
						       "submission_ok.py",
					      1 << 20, &ok, &len),
				 0);
		code = kb__xasprintf("%s%s", probe, ok);
		file = write_tmp("probe.py", code);
		free(code);
		free(ok);
		argv[2] = PROBLEMS "/pmpp_py/vectoradd";
		argv[3] = file;
		argv[5] = "test";
	}
	st = wf_run(argv, env, &e.out, &e.err, &e.wall_s);
	ck_assert_msg(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "status %d\n%s\n%s", st, e.out, e.err);
	ck_assert_msg((strstr(e.err, "job 2/2: passed") &&
		       strstr(e.err, "held run") != NULL) == (_i != 1),
		      "%s", e.err);
	if (_i == 2) {
		ck_assert_msg(strstr(e.out, "\"has_score\": true"), "%s",
			      e.out);
	} else {
		line = strstr(e.out, "probe cmdline=");
		ck_assert_msg(line != NULL, "%s", e.out);
		end = strstr(line, " end");
		ck_assert_ptr_nonnull(end);
		*end = '\0';
		ck_assert_msg(strstr(line, _i == 0 ? "kb_ready.py --child"
						   : "kbh_child.py --sock"),
			      "%s", line);
		ck_assert_msg(strstr(line, "fds=0:/dev/null 1:pipe: 2:pipe: "),
			      "%s", line);
		for (char *p = line; (p = strstr(p, "socket:")); p++)
			sockets++;
		ck_assert_msg(sockets == 1, "%s", line);
	}
	ck_assert(workdir_empty());
	free(file);
	eval_free(&e);
}
END_TEST

/* kb_eval_ready in this process (the service's use of it): a Python job
 * takes the waiting held run; one that died before its job is not taken
 * and the job runs in a fresh sandbox; after that, no new held run starts
 * at once (back-off). The task's main script (a multiprocessing pool
 * inside) reports and prints its own command line. */
START_TEST(test_held_lifecycle)
{
	/* As upstream's eval.py may: a spawn-context pool, whose workers
	 * import the main script again by its __file__. */
	static const char main_py[] =
		"import multiprocessing, os\n"
		"def sq(x):\n"
		"    return x * x\n"
		"if __name__ == '__main__':\n"
		"    with multiprocessing.get_context('spawn').Pool(1) as p:\n"
		"        ok = p.map(sq, [3]) == [9]\n"
		"    os.write(int(os.environ['POPCORN_FD']),\n"
		"             b'check: pass\\n' if ok else b'check: fail\\n')\n"
		"    print(open('/proc/self/cmdline').read().replace('\\0', ' '))\n";
	struct kb_python py;
	struct kb_sandbox_caps caps;
	struct kb_eval_opts o = {.workdir = workdir,
				 .worker = "t",
				 .gpu = "CPU",
				 .build_timeout_s = 60,
				 .python = &py};
	Kb__Submission *s = wf_submission("py", KB__MODE__MODE_TEST);
	struct kb_eval_ready *rd = kb_eval_ready_new();
	char err[256] = "", cmd[4400];
	Kb__Result *r;

	ck_assert_int_eq(kb_python_resolve(KB_TEST_PYTHON, 60, &py, err,
					   sizeof(err)),
			 0);
	ck_assert_msg(py.torch[0], "%s has no torch", KB_TEST_PYTHON);
	kb_sandbox_probe(&caps, NULL, 0);
	o.isolate = caps.isolate_ok;
	wf_add_file(s->task, "main.py", main_py);
	wf_set_config(s->task, "main", "main.py");
	o.ready = rd;

	/* Taken. */
	ck_assert_int_eq(kb_eval_ready_start(rd, &o), 0);
	ck_assert_int_eq(kb_eval_ready_wait(rd, 120), 1);
	r = kb_eval_run(&o, s);
	ck_assert_msg(r->verdict == KB__VERDICT__VERDICT_PASSED, "%s",
		      r->error);
	ck_assert_uint_eq(kb_eval_ready_taken(rd), 1);
	ck_assert_msg(r->n_runs == 1 &&
			      strstr(r->runs[0]->stdout, "kb_ready.py"),
		      "%s", r->n_runs ? r->runs[0]->stdout : "no run");
	kb__result__free_unpacked(r, NULL);

	/* Died before its job: not taken, the job passes all the same. */
	ck_assert_int_eq(kb_eval_ready_start(rd, &o), 0);
	ck_assert_int_eq(kb_eval_ready_wait(rd, 120), 1);
	/* [k]: the pattern must not match the shell that runs pkill */
	snprintf(cmd, sizeof(cmd), "pkill -KILL -f '%s/job-0-.*/[k]b_ready.py'",
		 workdir);
	ck_assert_int_eq(system(cmd), 0);
	for (int i = 0; i < 300 && kb_eval_ready_wait(rd, 0.1) != -1; i++)
		usleep(100000);
	ck_assert_int_eq(kb_eval_ready_wait(rd, 0.1), -1);
	r = kb_eval_run(&o, s);
	ck_assert_msg(r->verdict == KB__VERDICT__VERDICT_PASSED, "%s",
		      r->error);
	ck_assert_uint_eq(kb_eval_ready_taken(rd), 1);
	ck_assert_msg(r->n_runs == 1 &&
			      !strstr(r->runs[0]->stdout, "kb_ready.py"),
		      "%s", r->n_runs ? r->runs[0]->stdout : "no run");
	kb__result__free_unpacked(r, NULL);

	/* Back-off: the next start waits. */
	ck_assert_int_eq(kb_eval_ready_start(rd, &o), 0);
	ck_assert_int_eq(kb_eval_ready_wait(rd, 1), -1);
	kb_eval_ready_free(rd);
	kb__submission__free_unpacked(s, NULL);
	ck_assert(workdir_empty());
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("worker_eval");
	/* Two cases, two CTest entries (CK_RUN_CASE, CMakeLists.txt): "alone"
	 * holds what load beside it would change (Python ranked runs, whose
	 * claims are believed within a slack; an endless loop's timeout; a
	 * starved run), "eval" the rest, beside other suites. */
	TCase *ta = tcase_create("alone");
	TCase *tc = tcase_create("eval");

	tcase_add_checked_fixture(ta, setup, teardown);
	tcase_set_timeout(ta, 120);
	tcase_add_loop_test(ta, test_correct_leaderboard, 0, 2);
	tcase_add_test(ta, test_infinite_loop_times_out);
	tcase_add_test(ta, test_starved_run_not_charged);
	tcase_add_loop_test(ta, test_python_upstream, 0, 3);
	tcase_add_loop_test(ta, test_python_held, 0, 3);
	suite_add_tcase(s, ta);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_wrong_fails, 0, 2);
	tcase_add_test(tc, test_syntax_error);
	tcase_add_test(tc, test_cpu_env_omp_passive);
	tcase_add_test(tc, test_constructor_contained);
	tcase_add_loop_test(tc, test_secret_not_printed, 0, 2);
	tcase_add_test(tc, test_usage_errors);
	tcase_add_test(tc, test_selftest_command);
	tcase_add_test(tc, test_held_lifecycle);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	kb_log_init("worker-test", KB_LOG_WARN, 0);
	return kb_check_run(suite());
}
