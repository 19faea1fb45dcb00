/* cu builds with the real nvcc (no GPU needed): PMPP vectoradd's trusted
 * harness built once and cached, its correct and wrong submissions each
 * compiled alone into submission.so through the real sandbox; compile
 * errors and a missing entry point as compile errors with nvcc's (the
 * linker's) message; code that runs when the submission is loaded builds
 * as any other code (it runs in the harness's child); and `kb-worker
 * eval` end to end, on vectoradd (the build; the run needs a GPU) and on
 * upstream-format tasks whose eval.cu needs none (the whole
 * evaluation).
 *
 * Without nvcc the suite prints why and exits 77, which CTest shows as
 * skipped (SKIP_RETURN_CODE), not as passed. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "build.h"
#include "jobdir.h"
#include "kb_log.h"
#include "kb_sandbox.h"
#include "kb_task.h"
#include "kb_util.h"
#include "pbutil.h"
#include "submission.h"
#include "worker_fixture.h"

#define WORKER KB_BINARY_DIR "/worker/kb-worker"
#define VECTORADD KB_SOURCE_DIR "/problems/pmpp/vectoradd"
#define ARCH "90a"
#define SKIP 77

static char cuda_home[4096];
static char *suite_dir; /* the cache all tests share, and scratch */
static char cache[4200];
static int isolate;

static char *tmp; /* per test */
static int commands;

static void setup(void)
{
	tmp = wf_tmpdir();
	ck_assert_ptr_nonnull(tmp);
}

static void teardown(void)
{
	kb_jobdir_remove(tmp);
	free(tmp);
}

static char *write_tmp(const char *name, const char *text)
{
	char *path = kb__xasprintf("%s/%s", tmp, name);

	ck_assert_int_eq(kb_write_file(path, text, strlen(text), 0644), 0);
	return path;
}

/* ---- the builder through the real sandbox -------------------------------- */

static int real_exec(void *ctx, const struct kb_build_cmd *cmd,
		     struct kb_sandbox_result *r, char *err, size_t err_size)
{
	const struct kb_jobdir *jd = ctx;
	char path[4200], home[4200], tmpdir[4200];
	char *env[] = {path, home, tmpdir, "LANG=C.UTF-8", NULL};
	char *ro[] = {(char *)jd->task, (char *)jd->out, (char *)jd->harness,
		      cuda_home, NULL};
	char *rw[] = {(char *)jd->home, NULL};
	struct kb_sandbox_opts so = {
		.workdir = jd->step,
		.cwd = cmd->cwd ? cmd->cwd : jd->task,
		.argv = cmd->argv->v,
		.env = env,
		.wall_timeout_s = cmd->timeout_s,
		.cpu_timeout_s = cmd->timeout_s * 64,
		.max_processes = 512,
		.isolate = isolate,
		.ro_paths = ro,
		.rw_paths = rw,
	};

	snprintf(path, sizeof(path), "PATH=%s/bin:/usr/local/bin:/usr/bin:/bin",
		 cuda_home);
	snprintf(home, sizeof(home), "HOME=%s", jd->home);
	snprintf(tmpdir, sizeof(tmpdir), "TMPDIR=%s", jd->step);
	commands++;
	return kb_sandbox_run(&so, r, err, err_size);
}

struct built {
	enum kb_build_state st;
	Kb__CompileResult *cr;
	char msg[256];
	struct kb_jobdir jd;
};

/* Builds problem_dir with the submission file through the cu builder. */
static struct built build(const char *problem_dir, const char *file)
{
	struct kb_submission_args a = {.user_id = "u",
				       .user_name = "u",
				       .gpu = "H100",
				       .mode = KB__MODE__MODE_TEST};
	struct kb_task t = {0};
	struct kb_build_ctx c;
	Kb__Submission *s;
	struct built b;
	char err[512], *code;
	size_t len;

	memset(&b, 0, sizeof(b));
	ck_assert_msg(kb_task_load_dir(problem_dir, "p", &t, err,
				       sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(kb_read_file(file, 1 << 20, &code, &len), 0);
	a.file_name = "submission.cu";
	a.code = code;
	a.code_len = len;
	s = kb_submission_build(&t, &a, err, sizeof(err));
	ck_assert_msg(s != NULL, "%s", err);
	free(code);
	kb_task_clear(&t);
	ck_assert_int_eq(kb_jobdir_open(&b.jd, tmp, 1, err, sizeof(err)), 0);
	ck_assert_int_eq(kb_jobdir_materialize(&b.jd, s->task, &s->code, -1, 1,
					       err, sizeof(err)),
			 0);
	c = (struct kb_build_ctx){
		.task = s->task,
		.code = &s->code,
		.jd = &b.jd,
		.gpu = "H100",
		.timeout_s = 300,
		.output_max = 16384,
		.exec = real_exec,
		.exec_ctx = &b.jd,
		.cuda_arch = ARCH,
		.cuda_home = cuda_home,
		.cache_dir = cache,
	};
	b.cr = kb__xcalloc(1, sizeof(*b.cr));
	kb__compile_result__init(b.cr);
	commands = 0;
	b.st = kb_builder_find("cu")->build(&c, b.cr, b.msg, sizeof(b.msg));
	kb__submission__free_unpacked(s, NULL);
	return b;
}

static void built_free(struct built *b)
{
	kb__compile_result__free_unpacked(b->cr, NULL);
	kb_jobdir_close(&b->jd, 0);
}

static int executable(const char *dir, const char *name)
{
	char path[4400];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	       (st.st_mode & 0100) && st.st_size > 0;
}

START_TEST(test_vectoradd_builds)
{
	static const char *const subs[] = {"submission_ok.cu",
					   "submission_wrong.cu"};
	char file[4200];
	struct built b;

	snprintf(file, sizeof(file), "%s/%s", VECTORADD, subs[_i]);
	b = build(VECTORADD, file);
	ck_assert_msg(b.st == KB_BUILD_OK, "%s: state %d (%s)\n$ %s\n%s",
		      subs[_i], b.st, b.msg, b.cr->command, b.cr->stderr);
	ck_assert_msg(executable(b.jd.out, "eval.out"), "no eval.out in %s",
		      b.jd.out);
	ck_assert_msg(executable(b.jd.out, "submission.so"),
		      "no submission.so in %s", b.jd.out);
	ck_assert_msg(strstr(b.cr->command, "-shared") &&
			      strstr(b.cr->command, "submission.cu -o "
						    "../step/submission.so") &&
			      !strstr(b.cr->command, "kbg_main.cu"),
		      "%s", b.cr->command);
	/* The second build found the harness in the cache: nvcc --version
	 * (each test is a process of its own) and the submission. */
	if (_i == 1)
		ck_assert_int_eq(commands, 2);
	built_free(&b);
}
END_TEST

START_TEST(test_compile_error_message)
{
	char *bad = write_tmp("bad.cu",
			      "#include \"task.h\"\n"
			      "extern \"C\" void custom_kernel(const __half "
			      "*a, const __half *b, __half *out, size_t n)\n"
			      "{ int x = ; }\n");
	struct built b = build(VECTORADD, bad);

	ck_assert_int_eq(b.st, KB_BUILD_FAILED);
	ck_assert_int_eq(b.cr->success, 0);
	ck_assert_int_ne(b.cr->exit_code, 0);
	ck_assert_msg(strstr(b.cr->stderr, "submission.cu(3): error"), "%s",
		      b.cr->stderr);
	ck_assert_msg(strstr(b.cr->command, "submission.cu -o"), "%s",
		      b.cr->command);
	built_free(&b);
	free(bad);
}
END_TEST

START_TEST(test_missing_export)
{
	/* C++ linkage: the linker finds no custom_kernel. */
	char *cxx = write_tmp("cxx.cu",
			      "#include <cuda_fp16.h>\n"
			      "void custom_kernel(const __half *a, const "
			      "__half *b, __half *out, size_t n) {}\n");
	struct built b = build(VECTORADD, cxx);

	ck_assert_int_eq(b.st, KB_BUILD_FAILED);
	ck_assert_int_ne(b.cr->exit_code, 0);
	ck_assert_msg(strstr(b.cr->stderr, "custom_kernel' not defined"), "%s",
		      b.cr->stderr);
	built_free(&b);
	free(cxx);
}
END_TEST

/* Code that runs when the object is loaded -- a constructor, a
 * namespace-scope object with one, an operator& nvcc's registration calls
 * -- is ordinary code now: the harness loads the object only in its
 * confined child. It builds. */
START_TEST(test_load_time_code_builds)
{
	static const char *const cases[] = {
		"__attribute__((constructor)) static void early(void)\n"
		"{ asm volatile(\"\"); }\n",
		"#include <iostream>\n#include <unordered_map>\n"
		"static std::unordered_map<int, int> cache;\n",
		"struct S { int x; __host__ __device__ __forceinline__ S "
		"*operator&() { return this; } };\n__device__ S v;\n",
	};
	char *src = kb__xasprintf(
		"#include <cuda_fp16.h>\n%s"
		"extern \"C\" void custom_kernel(const __half *a, const "
		"__half *b, __half *out, size_t n) {}\n",
		cases[_i]);
	char *file = write_tmp("ctor.cu", src);
	struct built b = build(VECTORADD, file);

	ck_assert_msg(b.st == KB_BUILD_OK, "state %d (%s)\n%s", b.st, b.msg,
		      b.cr->stderr);
	ck_assert(executable(b.jd.out, "submission.so"));
	built_free(&b);
	free(file);
	free(src);
}
END_TEST

/* ---- kb-worker eval ---------------------------------------------------- */

struct eval {
	int status;
	char *out, *err;
};

static struct eval run_eval(const char *problem, const char *file,
			    const char *mode)
{
	char *argv[] = {WORKER,       "eval",   (char *)problem,
			(char *)file, "--mode", (char *)mode,
			"--gpu",      "H100",   NULL};
	char *workdir = kb__xasprintf("KB_WORKDIR=%s/work", tmp);
	char *cachedir = kb__xasprintf("KB_CACHE_DIR=%s", cache);
	char *home = kb__xasprintf("KB_CUDA_HOME=%s", cuda_home);
	char *env[] = {workdir,
		       cachedir,
		       home,
		       "KB_CUDA_ARCH=" ARCH,
		       isolate ? "KB_SANDBOX_ISOLATE=1"
			       : "KB_SANDBOX_ISOLATE=0",
		       NULL};
	struct eval e;
	int st = wf_run(argv, env, &e.out, &e.err, NULL);

	e.status = st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	free(workdir);
	free(cachedir);
	free(home);
	return e;
}

#define assert_has(e, needle)                                                  \
	ck_assert_msg(strstr((e).out, needle) != NULL,                         \
		      "stdout lacks \"%s\":\n%s\nstderr:\n%s", needle,         \
		      (e).out, (e).err)

START_TEST(test_worker_vectoradd)
{
	struct eval e =
		run_eval(VECTORADD, VECTORADD "/submission_ok.cu", "test");

	assert_has(e, "✅ Compilation successful");
	/* With a GPU it passes; without one the harness cannot start, which
	 * is the platform's fault. */
	ck_assert_msg(strstr(e.out, "Verdict: passed") ||
			      strstr(e.out, "Verdict: infra_error"),
		      "%s\n%s", e.out, e.err);
	free(e.out);
	free(e.err);
}
END_TEST

START_TEST(test_worker_compile_error)
{
	char *bad = write_tmp("bad.cu", "this is not CUDA\n");
	struct eval e = run_eval(VECTORADD, bad, "test");

	ck_assert_int_eq(e.status, 1);
	assert_has(e, "❌ Compilation failed");
	assert_has(e, "submission.cu(1): error");
	assert_has(e, "Verdict: compile_error");
	free(e.out);
	free(e.err);
	free(bad);
}
END_TEST

/* Upstream-format tasks run unmodified: their eval.cu is the harness. */
START_TEST(test_worker_upstream)
{
	static const struct {
		const char *task, *sub, *mode, *verdict;
	} cases[] = {
		{"upstream_cu_split", "submission_ok.cu", "leaderboard",
		 "Verdict: passed"},
		{"upstream_cu_split", "submission_wrong.cu", "test",
		 "Verdict: failed"},
		{"upstream_cu_header", "submission_ok.cuh", "test",
		 "Verdict: passed"},
	};
	char dir[4200], file[4200];
	struct eval e;

	snprintf(dir, sizeof(dir), "%s/%s", KB_TEST_DATA, cases[_i].task);
	snprintf(file, sizeof(file), "%s/upstream_common/%s", KB_TEST_DATA,
		 cases[_i].sub);
	e = run_eval(dir, file, cases[_i].mode);
	assert_has(e, "✅ Compilation successful");
	assert_has(e, cases[_i].verdict);
	if (_i == 0)
		assert_has(e, "Score: ");
	free(e.out);
	free(e.err);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("worker_cu_nvcc");
	TCase *tc = tcase_create("nvcc");

	tcase_set_timeout(tc, 600);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_vectoradd_builds, 0, 2);
	tcase_add_test(tc, test_compile_error_message);
	tcase_add_test(tc, test_missing_export);
	tcase_add_loop_test(tc, test_load_time_code_builds, 0, 3);
	tcase_add_test(tc, test_worker_vectoradd);
	tcase_add_test(tc, test_worker_compile_error);
	tcase_add_loop_test(tc, test_worker_upstream, 0, 3);
	suite_add_tcase(s, tc);
	return s;
}

/* The toolkit: KB_CUDA_HOME, CUDA_HOME, where CMake found nvcc, or
 * /usr/local/cuda. Returns 0 when one has bin/nvcc. */
static int find_cuda(void)
{
	const char *candidates[] = {getenv("KB_CUDA_HOME"), getenv("CUDA_HOME"),
				    KB_TEST_CUDA_HOME, "/usr/local/cuda"};

	for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]);
	     i++) {
		char nvcc[4200];

		if (!candidates[i] || !candidates[i][0])
			continue;
		snprintf(nvcc, sizeof(nvcc), "%s/bin/nvcc", candidates[i]);
		if (access(nvcc, X_OK) == 0) {
			snprintf(cuda_home, sizeof(cuda_home), "%s",
				 candidates[i]);
			return 0;
		}
	}
	return -1;
}

int main(void)
{
	struct kb_sandbox_caps caps;
	char err[256];
	SRunner *sr;
	int failed;

	/* KB_TEST_LOG=1 shows the worker's own log lines. */
	kb_log_init("worker-cu-nvcc-test",
		    getenv("KB_TEST_LOG") ? KB_LOG_DEBUG : KB_LOG_ERROR, 0);
	if (find_cuda() < 0) {
		printf("SKIP worker_cu_nvcc: no nvcc (looked in $KB_CUDA_HOME, "
		       "$CUDA_HOME, \"%s\" and /usr/local/cuda); the cu build "
		       "tests need the CUDA toolkit\n",
		       KB_TEST_CUDA_HOME);
		return SKIP;
	}
	if (kb_util_init() < 0)
		return EXIT_FAILURE;
	isolate = kb_sandbox_probe(&caps, err, sizeof(err)) == 0 &&
		  caps.isolate_ok;
	suite_dir = wf_tmpdir();
	if (!suite_dir)
		return EXIT_FAILURE;
	snprintf(cache, sizeof(cache), "%s/cache", suite_dir);
	printf("worker_cu_nvcc: nvcc of %s, sm_%s, %s sandbox\n", cuda_home,
	       ARCH, isolate ? "isolated" : "unisolated");
	sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	kb_jobdir_remove(suite_dir);
	free(suite_dir);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
