/* cu builds with the real nvcc (no GPU needed): PMPP vectoradd with its
 * correct and wrong submissions compiled and linked into eval.out through
 * the real sandbox, the harness objects cached on the first build;
 * compile errors, a missing export and a constructor (the check of the
 * sealed object) as compile errors with nvcc's (the seal's, the check's)
 * message; and `kb-worker eval` end to end, on vectoradd (the
 * build; the run needs a GPU) and on upstream-format tasks whose eval.cu
 * needs none (the whole evaluation).
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
#include "build_cu.h"
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
static char *suite_dir;      /* the cache all tests share, and scratch */
static char cache[4200];
static int isolate;

static char *tmp;            /* per test */
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

struct exec_ctx {
	const char *jobdir;
};

static int real_exec(void *ctx, const struct kb_build_cmd *cmd,
		     struct kb_sandbox_result *r, char *err, size_t err_size)
{
	const struct exec_ctx *x = ctx;
	const char *dir = cmd->dir ? cmd->dir : x->jobdir;
	char path[4200], home[4200], tmpdir[4200];
	char *env[] = {path, home, tmpdir, "LANG=C.UTF-8", NULL};
	struct kb_sandbox_opts so = {
		.workdir = dir,
		.argv = cmd->argv->v,
		.env = env,
		.wall_timeout_s = cmd->timeout_s,
		.cpu_timeout_s = cmd->timeout_s * 64,
		.max_processes = 512,
		.isolate = isolate,
	};

	snprintf(path, sizeof(path), "PATH=%s/bin:/usr/local/bin:/usr/bin:/bin",
		 cuda_home);
	snprintf(home, sizeof(home), "HOME=%s", dir);
	snprintf(tmpdir, sizeof(tmpdir), "TMPDIR=%s", dir);
	commands++;
	return kb_sandbox_run(&so, r, err, err_size);
}

struct built {
	enum kb_build_state st;
	Kb__CompileResult *cr;
	char msg[256];
	char jobdir[4200];
};

/* Builds problem_dir with the submission file through the cu builder. */
static struct built build(const char *problem_dir, const char *file)
{
	struct kb_submission_args a = {.user_id = "u", .user_name = "u",
				       .gpu = "H100",
				       .mode = KB__MODE__MODE_TEST};
	struct kb_task t = {0};
	struct exec_ctx x;
	struct kb_build_ctx c;
	Kb__Submission *s;
	struct built b;
	char err[512], *code;
	size_t len;

	memset(&b, 0, sizeof(b));
	ck_assert_msg(kb_task_load_dir(problem_dir, "p", &t, err,
				       sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(kb_read_file(file, 1 << 20, &code, &len), 0);
	a.file_name = "submission.cu";
	a.code = code;
	a.code_len = len;
	s = kb_submission_build(&t, &a, err, sizeof(err));
	ck_assert_msg(s != NULL, "%s", err);
	free(code);
	kb_task_clear(&t);
	ck_assert_int_eq(kb_jobdir_create(tmp, 1, b.jobdir, sizeof(b.jobdir),
					  err, sizeof(err)), 0);
	ck_assert_int_eq(kb_jobdir_materialize(b.jobdir, s->task, &s->code,
					       err, sizeof(err)), 0);
	x.jobdir = b.jobdir;
	c = (struct kb_build_ctx){
		.task = s->task,
		.code = &s->code,
		.jobdir = b.jobdir,
		.gpu = "H100",
		.timeout_s = 300,
		.output_max = 16384,
		.exec = real_exec,
		.exec_ctx = &x,
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
	ck_assert_msg(executable(b.jobdir, "eval.out"), "no eval.out in %s",
		      b.jobdir);
	ck_assert_msg(strstr(b.cr->command, "-c submission.cu -o "
					    "submission.o") &&
			      strstr(b.cr->command, "kbg_seal.sh submission.o "
						    "custom_kernel") &&
			      !strstr(b.cr->command, "-c kbg_main.cu"),
		      "%s", b.cr->command);
	/* The second build found the harness in the cache: nvcc --version,
	 * the submission, the seal, the link. */
	if (_i == 1)
		ck_assert_int_eq(commands, 4);
	kb__compile_result__free_unpacked(b.cr, NULL);
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
	ck_assert_msg(strstr(b.cr->command, "-c submission.cu"), "%s",
		      b.cr->command);
	kb__compile_result__free_unpacked(b.cr, NULL);
	free(bad);
}
END_TEST

START_TEST(test_missing_export)
{
	/* C++ linkage: the seal finds no custom_kernel. */
	char *cxx = write_tmp("cxx.cu",
			      "#include <cuda_fp16.h>\n"
			      "void custom_kernel(const __half *a, const "
			      "__half *b, __half *out, size_t n) {}\n");
	struct built b = build(VECTORADD, cxx);

	ck_assert_int_eq(b.st, KB_BUILD_FAILED);
	ck_assert_int_eq(b.cr->exit_code, 1);
	ck_assert_msg(strstr(b.cr->stderr, "does not define custom_kernel"),
		      "%s", b.cr->stderr);
	kb__compile_result__free_unpacked(b.cr, NULL);
	free(cxx);
}
END_TEST

/* The sealed object is inspected before the link (kb_elfcheck_nvcc): a
 * constructor, a namespace-scope object with a constructor or an inlined
 * operator& making a system call is a compile error with the check's
 * message; nvcc's own constructor is not. */
START_TEST(test_constructor_refused)
{
	static const struct {
		const char *src, *needle;
	} cases[] = {
		{"__attribute__((constructor)) static void early(void)\n"
		 "{ asm volatile(\"\"); }\n",
		 "defines a constructor (function '_ZL5earlyv'"},
		{"struct A { A() { asm volatile(\"\"); } };\nstatic A a;\n",
		 "namespace-scope objects"},
		/* nvcc's registration takes &v with S's operator&: inlined,
		 * only the machine code shows it */
		{"struct S { int x; __host__ __device__ __forceinline__ S "
		 "*operator&() {\n#ifndef __CUDA_ARCH__\n long r = 39;\n"
		 " asm volatile(\"syscall\" : \"+a\"(r) : : \"rcx\", "
		 "\"r11\", \"memory\");\n x = (int)r;\n#endif\n"
		 " return this; } };\n__device__ S v;\n",
		 "does not contain (0f 05)"},
	};
	char *src = kb__xasprintf(
		"#include <cuda_fp16.h>\n%s"
		"extern \"C\" void custom_kernel(const __half *a, const "
		"__half *b, __half *out, size_t n) {}\n",
		cases[_i].src);
	char *file = write_tmp("ctor.cu", src);
	struct built b = build(VECTORADD, file);

	ck_assert_int_eq(b.st, KB_BUILD_FAILED);
	ck_assert_int_eq(b.cr->success, 0);
	ck_assert_int_eq(b.cr->exit_code, 1);
	ck_assert_msg(strstr(b.cr->stderr, cases[_i].needle) &&
			      strstr(b.cr->stderr, "code before main is not "
						   "allowed"),
		      "%s", b.cr->stderr);
	ck_assert_msg(!executable(b.jobdir, "eval.out"), "linked anyway");
	kb__compile_result__free_unpacked(b.cr, NULL);
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
	char *argv[] = {WORKER, "eval", (char *)problem, (char *)file,
			"--mode", (char *)mode, "--gpu", "H100", NULL};
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

#define assert_has(e, needle)                                          \
	ck_assert_msg(strstr((e).out, needle) != NULL,                 \
		      "stdout lacks \"%s\":\n%s\nstderr:\n%s", needle, \
		      (e).out, (e).err)

START_TEST(test_worker_vectoradd)
{
	struct eval e = run_eval(VECTORADD, VECTORADD "/submission_ok.cu",
				 "test");

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

/* A compile error, and a constructor refused by the check of the sealed
 * object (a compile error too). */
START_TEST(test_worker_compile_error)
{
	static const struct {
		const char *src, *needle;
	} cases[] = {
		{"this is not CUDA\n", "submission.cu(1): error"},
		{"#include <cuda_fp16.h>\n"
		 "__attribute__((constructor)) static void early(void)\n"
		 "{ asm volatile(\"\"); }\n"
		 "extern \"C\" void custom_kernel(const __half *a, const "
		 "__half *b, __half *out, size_t n) {}\n",
		 "code before main is not allowed"},
	};
	char *bad = write_tmp("bad.cu", cases[_i].src);
	struct eval e = run_eval(VECTORADD, bad, "test");

	ck_assert_int_eq(e.status, 1);
	assert_has(e, "❌ Compilation failed");
	assert_has(e, cases[_i].needle);
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
	tcase_add_loop_test(tc, test_constructor_refused, 0, 3);
	tcase_add_test(tc, test_worker_vectoradd);
	tcase_add_loop_test(tc, test_worker_compile_error, 0, 2);
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
		       "tests need the CUDA toolkit\n", KB_TEST_CUDA_HOME);
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
