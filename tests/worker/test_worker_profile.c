/* Profile mode without a GPU and without Nsight Compute: the request's
 * checks, the ncu command line, ncu's messages, the speed-of-light summary
 * from fixtures in the shape ncu prints (data/profile/), the trace
 * archive, the run plan, and whole evaluations of a cu task on a GPU
 * worker against a fake sandbox that plays nvcc, the harness under ncu and
 * `ncu --import`: a profile, a host that refuses counters, no ncu at all,
 * a report replaced by a link, a report too large for a Result, a bad
 * request, and a CPU problem. */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sodium.h>
#include <zip.h>

#include "eval.h"
#include "jobdir.h"
#include "kb_log.h"
#include "kb_report.h"
#include "kb_util.h"
#include "pbjson.h"
#include "pbutil.h"
#include "plan.h"
#include "profile.h"
#include "profile_collect.h"
#include "worker_fixture.h"
#include "kb_check_main.h"

#define DATA KB_TEST_DATA "/profile"

static char *slurp(const char *path, size_t *len)
{
	char *data = NULL;
	size_t n = 0;

	ck_assert_msg(kb_read_file(path, SIZE_MAX, &data, &n) == 0, "%s", path);
	if (len)
		*len = n;
	return data;
}

static int has_arg(const struct kb_argv *a, const char *arg)
{
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->v[i], arg) == 0)
			return 1;
	return 0;
}

/* ---- the request ------------------------------------------------------ */

START_TEST(test_request_check)
{
	Kb__ProfileRequest r = KB__PROFILE_REQUEST__INIT;
	char msg[256], name[KB_PROFILE_KERNEL_NAME_MAX + 2];

	ck_assert_int_eq(kb_profile_request_check(NULL, msg, sizeof(msg)), 0);
	ck_assert_int_eq(kb_profile_request_check(&r, msg, sizeof(msg)), 0);
	r.ncu_kernel_name = "regex:vector_.*|add";
	r.ncu_kernel_name_base = "demangled";
	r.ncu_launch_count = KB_PROFILE_LAUNCH_MAX;
	ck_assert_int_eq(kb_profile_request_check(&r, msg, sizeof(msg)), 0);

	r.ncu_kernel_name_base = "everything";
	ck_assert_int_eq(kb_profile_request_check(&r, msg, sizeof(msg)),
			 -EINVAL);
	ck_assert_msg(strstr(msg, "function, demangled or mangled"), "%s", msg);
	r.ncu_kernel_name_base = "mangled";
	r.ncu_launch_count = KB_PROFILE_LAUNCH_MAX + 1;
	ck_assert_int_eq(kb_profile_request_check(&r, msg, sizeof(msg)),
			 -EINVAL);
	ck_assert_msg(strstr(msg, "ncu_launch_count"), "%s", msg);
	r.ncu_launch_count = 0;
	r.ncu_kernel_name = "bad\nname";
	ck_assert_int_eq(kb_profile_request_check(&r, msg, sizeof(msg)),
			 -EINVAL);
	ck_assert_msg(strstr(msg, "control"), "%s", msg);
	r.ncu_kernel_name = "regex:";
	ck_assert_int_eq(kb_profile_request_check(&r, msg, sizeof(msg)),
			 -EINVAL);
	memset(name, 'k', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	r.ncu_kernel_name = name;
	ck_assert_int_eq(kb_profile_request_check(&r, msg, sizeof(msg)),
			 -EINVAL);
	ck_assert_msg(strstr(msg, "longer"), "%s", msg);
}
END_TEST

/* ---- the command line -------------------------------------------------- */

START_TEST(test_ncu_argv_defaults)
{
	char *const app[] = {"../out/eval.out", "profile", "cases.txt", NULL};
	struct kb_argv a = {0};
	size_t dash = 0;

	kb_profile_ncu_argv(&a, "/usr/local/cuda/bin/ncu", NULL, 1, app);
	ck_assert_str_eq(a.v[0], "/usr/local/cuda/bin/ncu");
	ck_assert(has_arg(&a, "--config-file=off"));
	ck_assert(has_arg(&a, "--target-processes=all"));
	/* Our harness opens the range in its child (cudaProfilerStart). */
	ck_assert(has_arg(&a, "--profile-from-start=off"));
	ck_assert(!has_arg(&a, "--nvtx"));
	ck_assert(has_arg(&a, "--set=full"));
	ck_assert(has_arg(&a, "--launch-count=10"));
	ck_assert(has_arg(&a, "--clock-control=none"));
	ck_assert(has_arg(&a, "--export=" KB_PROFILE_NCU_EXPORT));
	ck_assert(!has_arg(&a, "--kernel-name-base=function"));
	for (size_t i = 0; i < a.n; i++) {
		ck_assert_msg(strncmp(a.v[i], "--kernel-name", 13) != 0, "%s",
			      a.v[i]);
		if (strcmp(a.v[i], "--") == 0)
			dash = i;
	}
	/* The harness's command, unchanged, after "--". */
	ck_assert_uint_eq(dash, a.n - 4);
	ck_assert_str_eq(a.v[a.n - 3], "../out/eval.out");
	ck_assert_str_eq(a.v[a.n - 1], "cases.txt");
	ck_assert_ptr_null(a.v[a.n]);
	kb_argv_free(&a);

	/* Upstream-format harnesses mark custom_kernel with NVTX. */
	kb_profile_ncu_argv(&a, "ncu", NULL, 0, app);
	ck_assert(has_arg(&a, "--nvtx"));
	ck_assert(has_arg(&a, "--nvtx-include=custom_kernel/"));
	ck_assert(!has_arg(&a, "--profile-from-start=off"));
	kb_argv_free(&a);
}
END_TEST

START_TEST(test_ncu_argv_request)
{
	char *const app[] = {"../out/eval.out", "profile", "cases.txt", NULL};
	Kb__ProfileRequest r = KB__PROFILE_REQUEST__INIT;
	struct kb_argv a = {0};

	r.ncu_kernel_name = "-regex:^vec";
	r.ncu_kernel_name_base = "demangled";
	r.ncu_launch_count = 3;
	kb_profile_ncu_argv(&a, "ncu", &r, 1, app);
	/* One argument each: a name starting with '-' stays a value. */
	ck_assert(has_arg(&a, "--kernel-name=-regex:^vec"));
	ck_assert(has_arg(&a, "--kernel-name-base=demangled"));
	ck_assert(has_arg(&a, "--launch-count=3"));
	ck_assert(!has_arg(&a, "--launch-count=10"));
	kb_argv_free(&a);

	kb_profile_ncu_import_argv(&a, "ncu", 1);
	ck_assert(has_arg(&a, "--import=" KB_PROFILE_NCU_REP));
	ck_assert(has_arg(&a, "--page=details"));
	ck_assert(has_arg(&a, "--csv"));
	kb_argv_free(&a);
	kb_profile_ncu_import_argv(&a, "ncu", 0);
	ck_assert(!has_arg(&a, "--csv"));
	kb_argv_free(&a);
}
END_TEST

/* ---- ncu's messages ---------------------------------------------------- */

#define DENIED                                                                 \
	"==PROF== Connected to process 77 (/j/out/eval.out)\n"                 \
	"==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to "   \
	"access NVIDIA GPU Performance Counters on the target device 0. For "  \
	"instructions on enabling permissions and to get more information "    \
	"see https://developer.nvidia.com/ERR_NVGPUCTRPERM\n"                  \
	"==PROF== Disconnected from process 77\n"                              \
	"==WARNING== No kernels were profiled.\n"

START_TEST(test_ncu_messages)
{
	char *e;

	ck_assert(kb_profile_ncu_denied(DENIED));
	ck_assert(!kb_profile_ncu_denied("==PROF== Connected\n"));
	ck_assert(!kb_profile_ncu_denied(NULL));
	ck_assert_msg(strstr(kb_profile_ncu_denied_msg(),
			     "NVreg_RestrictProfilingToAdminUsers=0"),
		      "%s", kb_profile_ncu_denied_msg());
	e = kb_profile_ncu_errors(DENIED, 1000);
	ck_assert_ptr_nonnull(e);
	ck_assert_msg(strncmp(e, "ERR_NVGPUCTRPERM - The user", 27) == 0, "%s",
		      e);
	ck_assert_ptr_null(strchr(e, '\n'));
	free(e);
	e = kb_profile_ncu_errors("==ERROR== a\nx\n==ERROR== b", 1000);
	ck_assert_str_eq(e, "a; b");
	free(e);
	e = kb_profile_ncu_errors("==ERROR== abcdefgh", 4);
	ck_assert_str_eq(e, "abcd");
	free(e);
	ck_assert_ptr_null(kb_profile_ncu_errors("==PROF== fine\n", 100));
}
END_TEST

/* ---- the summary ------------------------------------------------------- */

START_TEST(test_sol_from_csv)
{
	size_t len, launches;
	char *csv = slurp(DATA "/ncu-details.csv", &len);
	char *s = kb_profile_sol_from_csv(csv, len, 4, &launches);

	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(launches, 3);
	/* The launch, then its rows; a quoted comma stays in its value. */
	ck_assert_msg(strstr(s, "[0] vector_add(const float *, const float *, "
				"float *, int) (1048576, 1, 1)x(256, 1, 1)\n"),
		      "%s", s);
	ck_assert_msg(strstr(s, "DRAM Throughput"), "%s", s);
	ck_assert_msg(strstr(s, "1,234,567"), "%s", s);
	ck_assert_msg(strstr(s, "[2] vector_add"), "%s", s);
	/* Other sections and the rule rows are not the summary's. */
	ck_assert_msg(!strstr(s, "1,048,576") && !strstr(s, "heavily"), "%s",
		      s);
	ck_assert_msg(!strstr(s, "more kernel launch"), "%s", s);
	free(s);

	s = kb_profile_sol_from_csv(csv, len, 1, &launches);
	ck_assert_uint_eq(launches, 3);
	ck_assert_msg(!strstr(s, "[1] ") && !strstr(s, "90.87"), "%s", s);
	ck_assert_msg(strstr(s, "(2 more kernel launches in the report"), "%s",
		      s);
	free(s);

	/* No header (another tool's CSV), or no SOL rows: nothing. */
	ck_assert_ptr_null(kb_profile_sol_from_csv("\"a\",\"b\"\n1,2\n", 12, 4,
						   &launches));
	ck_assert_uint_eq(launches, 0);
	ck_assert_ptr_null(kb_profile_sol_from_csv("", 0, 4, &launches));
	free(csv);
}
END_TEST

START_TEST(test_sol_from_text)
{
	size_t len, launches;
	char *txt = slurp(DATA "/ncu-details.txt", &len);
	char *s = kb_profile_sol_from_text(txt, len, 4, &launches);

	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(launches, 2);
	ck_assert_msg(strstr(s, "vector_add(const float *"), "%s", s);
	ck_assert_msg(strstr(s, "DRAM Throughput                   %        "
				"91.35"),
		      "%s", s);
	ck_assert_msg(strstr(s, "1.24"), "%s", s);
	ck_assert_msg(!strstr(s, "Grid Size") && !strstr(s, "OPT"), "%s", s);
	free(s);
	s = kb_profile_sol_from_text(txt, len, 1, &launches);
	ck_assert_msg(!strstr(s, "1.24") && strstr(s, "1 more kernel launch "),
		      "%s", s);
	free(s);
	ck_assert_ptr_null(
		kb_profile_sol_from_text("==PROF== x\n", 11, 4, &launches));
	free(txt);
}
END_TEST

START_TEST(test_report_decode)
{
	/* "<?>\n" in base64 is "PD8+Cg=="; with upstream's "+*" alphabet
	 * the '/' of "Pz8/" becomes '*'. */
	char *s = kb_profile_report_decode("PD8+Cg==");

	ck_assert_str_eq(s, "<?>\n");
	free(s);
	s = kb_profile_report_decode("Pz8*");
	ck_assert_str_eq(s, "???");
	free(s);
	ck_assert_ptr_null(kb_profile_report_decode("not base64!"));
	ck_assert_ptr_null(kb_profile_report_decode(""));
	ck_assert_ptr_null(kb_profile_report_decode(NULL));
}
END_TEST

/* ---- the archive ------------------------------------------------------- */

/* The content of name in the zip archive data, malloc'd, or NULL. */
static char *unzip(const uint8_t *data, size_t len, const char *name,
		   zip_int64_t *entries)
{
	zip_error_t ze;
	zip_source_t *src;
	zip_t *za;
	zip_file_t *f;
	zip_stat_t st;
	char *out = NULL;

	zip_error_init(&ze);
	src = zip_source_buffer_create(data, len, 0, &ze);
	ck_assert_ptr_nonnull(src);
	za = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &ze);
	ck_assert_msg(za != NULL, "%s", zip_error_strerror(&ze));
	*entries = zip_get_num_entries(za, 0);
	if (zip_stat(za, name, 0, &st) == 0 && (f = zip_fopen(za, name, 0))) {
		out = calloc(1, st.size + 1);
		ck_assert_int_eq(zip_fread(f, out, st.size),
				 (zip_int64_t)st.size);
		zip_fclose(f);
	}
	zip_close(za);
	zip_error_fini(&ze);
	return out;
}

START_TEST(test_zip_roundtrip)
{
	static const char big[] = "abcabcabcabcabcabcabcabcabcabcabcabc";
	const struct kb_profile_file f[] = {
		{"ncu-details.txt", "details\n", 8},
		{"profile.ncu-rep", big, sizeof(big) - 1},
		{"empty", "", 0},
	};
	uint8_t *zip;
	size_t len;
	zip_int64_t n;
	char msg[256] = "", *s;

	ck_assert_int_eq(kb_profile_zip(f, 3, &zip, &len, msg, sizeof(msg)), 0);
	ck_assert(len > 22);
	ck_assert_int_eq(memcmp(zip, "PK\3\4", 4), 0);
	s = unzip(zip, len, "ncu-details.txt", &n);
	ck_assert_int_eq(n, 3);
	ck_assert_str_eq(s, "details\n");
	free(s);
	s = unzip(zip, len, "profile.ncu-rep", &n);
	ck_assert_str_eq(s, big);
	free(s);
	s = unzip(zip, len, "empty", &n);
	ck_assert_str_eq(s, "");
	free(s);
	free(zip);
}
END_TEST

/* ---- where ncu is ------------------------------------------------------ */

static void make_exe(const char *dir, const char *sub, const char *body)
{
	char path[4400];

	snprintf(path, sizeof(path), "%s/%s", dir, sub);
	*strrchr(path, '/') = '\0';
	ck_assert_int_eq(kb_jobdir_mkdirs(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/%s", dir, sub);
	ck_assert_int_eq(kb_write_file(path, body, strlen(body), 0755), 0);
}

START_TEST(test_ncu_locate)
{
	char *dir = wf_tmpdir(), real[PATH_MAX], ncu[4400], opt[4400];
	char want[4400], out[PATH_MAX];

	ck_assert_ptr_nonnull(realpath(dir, real));
	snprintf(ncu, sizeof(ncu), "%s/cuda/bin/ncu", real);
	snprintf(opt, sizeof(opt), "%s/opt", real);
	/* An ncu that is a program: itself. */
	make_exe(real, "cuda/bin/ncu", "\177ELF");
	ck_assert_int_eq(kb_profile_ncu_locate(ncu, opt, out, sizeof(out)), 0);
	ck_assert_str_eq(out, ncu);
	/* The toolkit's launcher script with nothing to launch: itself. */
	make_exe(real, "cuda/bin/ncu", "#!/bin/sh\n");
	ck_assert_int_eq(kb_profile_ncu_locate(ncu, opt, out, sizeof(out)), 0);
	ck_assert_str_eq(out, ncu);
	/* The packaged installations: the newest version (2025.10 after
	 * 2025.9, which plain string order gets wrong); one that cannot
	 * run does not count. */
	make_exe(real, "opt/2025.9.0/ncu", "#!/bin/sh\n");
	make_exe(real, "opt/2025.10.1/ncu", "#!/bin/sh\n");
	make_exe(real, "opt/2026.1.0/ncu", "#!/bin/sh\n");
	snprintf(want, sizeof(want), "%s/opt/2026.1.0/ncu", real);
	ck_assert_int_eq(chmod(want, 0644), 0);
	ck_assert_int_eq(kb_profile_ncu_locate(ncu, opt, out, sizeof(out)), 1);
	snprintf(want, sizeof(want), "%s/opt/2025.10.1/ncu", real);
	ck_assert_str_eq(out, want);
	/* The toolkit's own installation comes first. */
	make_exe(real, "cuda/nsight-compute-2025.3.1/ncu", "#!/bin/sh\n");
	ck_assert_int_eq(kb_profile_ncu_locate(ncu, opt, out, sizeof(out)), 1);
	snprintf(want, sizeof(want), "%s/cuda/nsight-compute-2025.3.1/ncu",
		 real);
	ck_assert_str_eq(out, want);
	/* Too small an answer is an error, not a truncated path. */
	ck_assert_int_eq(kb_profile_ncu_locate(ncu, opt, out, 8), -1);
	kb_jobdir_remove(dir);
	free(dir);
}
END_TEST

/* ---- the plan ---------------------------------------------------------- */

START_TEST(test_plan_benchmark_index)
{
	Kb__Submission *s = wf_submission("cu", KB__MODE__MODE_PROFILE);
	Kb__ProfileRequest r = KB__PROFILE_REQUEST__INIT;
	struct kb_plan_run p[KB_PLAN_MAX];
	size_t n;

	r.has_benchmark_index = 1;
	r.benchmark_index = 1;
	ck_assert_int_eq(
		kb_plan_make(KB__MODE__MODE_PROFILE, s->task, &r, 0, p), 1);
	/* Keyed by the case's index in the task, as upstream's CLI reads. */
	ck_assert_str_eq(p[0].key, "profile.1");
	ck_assert_ptr_eq(kb_plan_cases(&p[0], s->task, &n),
			 s->task->benchmarks + 1);
	ck_assert_uint_eq(n, 1);
	r.benchmark_index = 2;
	ck_assert_int_eq(kb_plan_make(KB__MODE__MODE_PROFILE, s->task, &r, 0,
				      p),
			 -ERANGE);
	/* Without the index field set, the index means nothing. */
	r.has_benchmark_index = 0;
	ck_assert_int_eq(
		kb_plan_make(KB__MODE__MODE_PROFILE, s->task, &r, 0, p), 2);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

/* ---- evaluations against a fake sandbox -------------------------------- */

static char *root, *cuda_home;

enum act { ACT_PROFILE, ACT_DENIED, ACT_LINK, ACT_BIG };

static struct {
	enum act act;
	int runs, imports, ncu_env;
	char run_argv[4096];
	char bound[4096]; /* the ro_paths of the profiled run, ' '-joined */
} play;

static void setup(void)
{
	char bin[4300];

	root = wf_tmpdir();
	ck_assert_ptr_nonnull(root);
	cuda_home = kb__xasprintf("%s/cuda", root);
	snprintf(bin, sizeof(bin), "%s/bin", cuda_home);
	ck_assert_int_eq(kb_jobdir_mkdirs(bin, 0755), 0);
	strncat(bin, "/ncu", sizeof(bin) - strlen(bin) - 1);
	ck_assert_int_eq(kb_write_file(bin, "#!/bin/sh\n", 10, 0755), 0);
	memset(&play, 0, sizeof(play));
}

static void teardown(void)
{
	kb_jobdir_remove(root);
	free(root);
	free(cuda_home);
}

static void put(const char *dir, const char *name, const void *data, size_t len)
{
	char path[4400];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	ck_assert_int_eq(kb_write_file(path, data, len, 0644), 0);
}

/* nvcc and cc: a version, or the file -o names. */
static void compiler(const struct kb_sandbox_opts *o,
		     struct kb_sandbox_result *r)
{
	const char *dir = o->cwd ? o->cwd : o->workdir;

	if (o->argv[1] && strcmp(o->argv[1], "--version") == 0) {
		r->out =
			kb__xstrdup("Cuda compilation tools, release 13.0, "
				    "V13.0.48\ncc (Debian 12.2.0-14) 12.2.0\n");
		r->out_len = strlen(r->out);
		return;
	}
	for (size_t i = 0; o->argv[i]; i++)
		if (strcmp(o->argv[i], "-o") == 0)
			put(dir, o->argv[i + 1], "obj", 3);
}

/* The harness under ncu: the report on fd 3, ncu's lines on stdout and
 * its report file where --export says. */
static void harness_under_ncu(const struct kb_sandbox_opts *o,
			      struct kb_sandbox_result *r)
{
	static char big[(size_t)2 << 20];

	play.runs++;
	for (size_t i = 0; o->env[i]; i++)
		play.ncu_env |= strcmp(o->env[i], "POPCORN_NCU=1") == 0;
	r->report = kb__xasprintf("benchmark-count: 1\nuser-code: started\n"
				  "benchmark.0.spec: size: %d\n"
				  "benchmark.0.runs: 5\nbenchmark.0.mean: "
				  "1000\nbenchmark.0.status: pass\n"
				  "check: pass\n",
				  2 + play.runs);
	r->report_len = strlen(r->report);
	switch (play.act) {
	case ACT_DENIED:
		r->out = kb__xstrdup(DENIED);
		break;
	case ACT_LINK:
		/* The submission left a link where the report goes. */
		{
			char path[4400];

			snprintf(path, sizeof(path), "%s/%s", o->workdir,
				 KB_PROFILE_NCU_REP);
			ck_assert_int_eq(symlink("/etc/passwd", path), 0);
		}
		r->out = kb__xstrdup("");
		break;
	case ACT_BIG:
		/* Incompressible: the report cannot fit a Result. */
		randombytes_buf(big, sizeof(big));
		put(o->workdir, KB_PROFILE_NCU_REP, big, sizeof(big));
		r->out = kb__xstrdup("==PROF== Report: profile.ncu-rep\n");
		break;
	case ACT_PROFILE:
		put(o->workdir, KB_PROFILE_NCU_REP, "NCUREP", 6);
		r->out = kb__xstrdup("==PROF== Report: profile.ncu-rep\n");
		break;
	}
	r->out_len = strlen(r->out);
}

static int fake_sandbox(const struct kb_sandbox_opts *o,
			struct kb_sandbox_result *r, char *err, size_t err_size)
{
	const char *cmd = strrchr(o->argv[0], '/');
	int csv = 0, import = 0;

	(void)err;
	(void)err_size;
	memset(r, 0, sizeof(*r));
	r->exited = 1;
	r->wall_s = 0.5;
	r->err = kb__xstrdup("");
	cmd = cmd ? cmd + 1 : o->argv[0];
	if (strcmp(cmd, "nvcc") == 0 || strcmp(cmd, "cc") == 0) {
		compiler(o, r);
	} else if (strcmp(cmd, "ncu") == 0) {
		for (size_t i = 0; o->argv[i]; i++) {
			csv |= strcmp(o->argv[i], "--csv") == 0;
			import |= strncmp(o->argv[i], "--import=", 9) == 0;
		}
		if (import) {
			/* Exported in the sandbox, from the run's scratch,
			 * without the GPU. */
			ck_assert_int_eq(o->gpu, 0);
			ck_assert_int_eq(o->want_report, 0);
			play.imports++;
			r->out = slurp(csv ? DATA "/ncu-details.csv"
					   : DATA "/ncu-details.txt",
				       &r->out_len);
		} else {
			ck_assert_int_eq(o->want_report, 1);
			ck_assert_int_eq(o->gpu, 1);
			for (size_t i = 0, n = 0; o->argv[i]; i++)
				n += (size_t)snprintf(play.run_argv + n,
						      sizeof(play.run_argv) - n,
						      "%s ", o->argv[i]);
			for (size_t i = 0, n = 0; o->ro_paths && o->ro_paths[i];
			     i++)
				n += (size_t)snprintf(play.bound + n,
						      sizeof(play.bound) - n,
						      "%s ", o->ro_paths[i]);
			harness_under_ncu(o, r);
		}
	} else {
		ck_abort_msg("unexpected command %s", o->argv[0]);
	}
	if (!r->out)
		r->out = kb__xstrdup("");
	return 0;
}

static Kb__Submission *cu_profile(void)
{
	Kb__Submission *s = wf_submission("cu", KB__MODE__MODE_PROFILE);
	Kb__Task *t = s->task;

	for (size_t i = 0; i < t->n_files; i++)
		kb__task_file__free_unpacked(t->files[i], NULL);
	free(t->files);
	t->files = NULL;
	t->n_files = 0;
	wf_add_file(t, "kbg_main.cu", "// main\n");
	wf_add_file(t, "submission.cu", "@SUBMISSION@");
	wf_set_config(t, "sources", "kbg_main.cu\nsubmission.cu");
	wf_set_config(t, "loader", "child");
	kb__pb_set_str(&s->gpu, "H100");
	kb__pb_set_str(&s->file_name, "mine.cu");
	free(s->code.data);
	s->code.data = (uint8_t *)kb__xstrdup("extern \"C\" void k() {}\n");
	s->code.len = strlen((char *)s->code.data);
	return s;
}

static Kb__Result *eval_gpu(Kb__Submission *s, const char *home)
{
	struct kb_eval_opts o = {
		.workdir = root,
		.worker = "gpu-worker",
		.gpu = "H100",
		.build_timeout_s = 60,
		.sandbox = fake_sandbox,
		.cuda_arch = "90a",
		.cuda_home = home,
	};

	return kb_eval_run(&o, s);
}

START_TEST(test_eval_ncu_profile)
{
	Kb__Submission *s = cu_profile();
	Kb__Result *r = eval_gpu(s, cuda_home);
	char want[4400];
	zip_int64_t n;
	char *rep;

	ck_assert_msg(r->verdict == KB__VERDICT__VERDICT_PASSED, "%s",
		      r->error);
	ck_assert_int_eq(play.runs, 2);
	ck_assert_int_eq(play.imports, 4);
	ck_assert_int_eq(play.ncu_env, 1);
	snprintf(want, sizeof(want), "%s/bin/ncu --config-file=off ",
		 cuda_home);
	ck_assert_msg(strncmp(play.run_argv, want, strlen(want)) == 0, "%s",
		      play.run_argv);
	ck_assert_msg(strstr(play.run_argv, " --profile-from-start=off ") &&
			      strstr(play.run_argv,
				     " -- ../out/eval.out profile cases.txt "),
		      "%s", play.run_argv);
	ck_assert_uint_eq(r->n_runs, 2);
	for (size_t i = 0; i < 2; i++) {
		const Kb__Profile *pf = r->runs[i]->profile;

		ck_assert_str_eq(r->runs[i]->key,
				 i ? "profile.1" : "profile.0");
		ck_assert_ptr_nonnull(pf);
		ck_assert_str_eq(pf->profiler, "Nsight Compute");
		ck_assert_str_eq(pf->error, "");
		ck_assert_msg(strstr(pf->summary, "DRAM Throughput"), "%s",
			      pf->summary);
		rep = unzip(pf->trace.data, pf->trace.len, KB_PROFILE_NCU_REP,
			    &n);
		ck_assert_int_eq(n, 3);
		ck_assert_str_eq(rep, "NCUREP");
		free(rep);
		rep = unzip(pf->trace.data, pf->trace.len, KB_PROFILE_NCU_CSV,
			    &n);
		ck_assert_msg(strstr(rep, "\"Section Name\""), "%s", rep);
		free(rep);
	}
	/* What `kb-worker eval` prints of it: the report and the JSON. */
	char *text = kb_report_render(r);
	ck_assert_ptr_nonnull(text);
	free(text);
	kb_report_redact(r);
	json_t *j = kb_pbjson(&r->base);
	ck_assert_ptr_nonnull(j);
	json_decref(j);
	kb__result__free_unpacked(r, NULL);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

/* The toolkit's bin/ncu is a launcher script whose search fails in the
 * sandbox (H100, 2026-11-27: "nsight-compute directory is not found"):
 * the worker runs the installation's ncu and binds its folder. */
START_TEST(test_eval_ncu_installation)
{
	Kb__Submission *s = cu_profile();
	char real[PATH_MAX], want[4400];
	Kb__Result *r;

	ck_assert_ptr_nonnull(realpath(cuda_home, real));
	make_exe(real, "nsight-compute-2025.3.1/ncu", "#!/bin/sh\n");
	r = eval_gpu(s, cuda_home);
	ck_assert_msg(r->verdict == KB__VERDICT__VERDICT_PASSED, "%s",
		      r->error);
	snprintf(want, sizeof(want), "%s/nsight-compute-2025.3.1/ncu ", real);
	ck_assert_msg(strncmp(play.run_argv, want, strlen(want)) == 0, "%s",
		      play.run_argv);
	snprintf(want, sizeof(want), "%s/nsight-compute-2025.3.1 ", real);
	ck_assert_msg(strstr(play.bound, want), "%s", play.bound);
	ck_assert_str_eq(r->runs[0]->profile->error, "");
	kb__result__free_unpacked(r, NULL);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

START_TEST(test_eval_ncu_denied)
{
	Kb__Submission *s = cu_profile();
	Kb__Result *r;

	play.act = ACT_DENIED;
	r = eval_gpu(s, cuda_home);
	/* The submission ran and passed; only the profile is missing, and
	 * the result says what the operator must do. */
	ck_assert_msg(r->verdict == KB__VERDICT__VERDICT_PASSED, "%s",
		      r->error);
	ck_assert_int_eq(play.imports, 0);
	for (size_t i = 0; i < r->n_runs; i++) {
		const Kb__Profile *pf = r->runs[i]->profile;

		ck_assert_msg(strstr(pf->error, "ERR_NVGPUCTRPERM") &&
				      strstr(pf->error,
					     "NVreg_Restrict"
					     "ProfilingToAdminUsers=0"),
			      "%s", pf->error);
		ck_assert_uint_eq(pf->trace.len, 0);
		ck_assert_str_eq(pf->summary, "");
	}
	kb__result__free_unpacked(r, NULL);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

START_TEST(test_eval_no_ncu)
{
	Kb__Submission *s = cu_profile();
	char *home = kb__xasprintf("%s/bare", root);
	const char *path = getenv("PATH");
	char *saved = kb__xstrdup(path);
	Kb__Result *r;

	ck_assert_int_eq(kb_jobdir_mkdirs(home, 0755), 0);
	setenv("PATH", "/nonexistent", 1);
	r = eval_gpu(s, home);
	setenv("PATH", saved, 1);
	ck_assert_int_eq(r->verdict, KB__VERDICT__VERDICT_INFRA_ERROR);
	ck_assert_int_eq(r->fault, KB__FAULT__FAULT_INFRA);
	ck_assert_msg(strstr(r->error, "Nsight Compute"), "%s", r->error);
	ck_assert_int_eq(play.runs, 0);
	kb__result__free_unpacked(r, NULL);
	kb__submission__free_unpacked(s, NULL);
	free(home);
	free(saved);
}
END_TEST

START_TEST(test_eval_report_link)
{
	Kb__Submission *s = cu_profile();
	Kb__Result *r;

	play.act = ACT_LINK;
	r = eval_gpu(s, cuda_home);
	ck_assert_msg(r->verdict == KB__VERDICT__VERDICT_PASSED, "%s",
		      r->error);
	ck_assert_int_eq(play.imports, 0);
	ck_assert_msg(strstr(r->runs[0]->profile->error, "symbolic link"), "%s",
		      r->runs[0]->profile->error);
	ck_assert_uint_eq(r->runs[0]->profile->trace.len, 0);
	kb__result__free_unpacked(r, NULL);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

START_TEST(test_eval_trace_budget)
{
	Kb__Submission *s = cu_profile();
	size_t total = 0;
	Kb__Result *r;
	zip_int64_t n;
	char *rep;

	play.act = ACT_BIG;
	r = eval_gpu(s, cuda_home);
	ck_assert_msg(r->verdict == KB__VERDICT__VERDICT_PASSED, "%s",
		      r->error);
	for (size_t i = 0; i < r->n_runs; i++) {
		const Kb__Profile *pf = r->runs[i]->profile;

		/* The details stay, the report is left out, and the summary
		 * says so. */
		ck_assert_str_eq(pf->error, "");
		ck_assert_msg(strstr(pf->summary, "is left out of the trace"),
			      "%s", pf->summary);
		rep = unzip(pf->trace.data, pf->trace.len, KB_PROFILE_NCU_REP,
			    &n);
		ck_assert_ptr_null(rep);
		ck_assert_int_eq(n, 2);
		total += pf->trace.len;
	}
	ck_assert_uint_le(total, KB_PROFILE_TRACE_BUDGET);
	kb__result__free_unpacked(r, NULL);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

START_TEST(test_eval_bad_index)
{
	Kb__Submission *s = cu_profile();
	Kb__Result *r;

	s->profile = kb__xcalloc(1, sizeof(*s->profile));
	kb__profile_request__init(s->profile);
	s->profile->has_benchmark_index = 1;
	s->profile->benchmark_index = 7;
	r = eval_gpu(s, cuda_home);
	/* The user's request, the user's failure: not retried. */
	ck_assert_int_eq(r->verdict, KB__VERDICT__VERDICT_FAILED);
	ck_assert_int_eq(r->fault, KB__FAULT__FAULT_USER);
	ck_assert_msg(strstr(r->error, "benchmark_index 7") &&
			      strstr(r->error, "(0..1)"),
		      "%s", r->error);
	ck_assert_int_eq(play.runs, 0);
	kb__result__free_unpacked(r, NULL);

	s->profile->has_benchmark_index = 0;
	s->profile->ncu_kernel_name_base = kb__xstrdup("all");
	r = eval_gpu(s, cuda_home);
	ck_assert_int_eq(r->verdict, KB__VERDICT__VERDICT_FAILED);
	ck_assert_msg(strstr(r->error, "ncu_kernel_name_base"), "%s", r->error);
	kb__result__free_unpacked(r, NULL);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

static int cpu_sandbox(const struct kb_sandbox_opts *o,
		       struct kb_sandbox_result *r, char *err, size_t err_size)
{
	(void)err;
	(void)err_size;
	memset(r, 0, sizeof(*r));
	r->exited = 1;
	r->err = kb__xstrdup("");
	if (!o->want_report)
		compiler(o, r);
	else
		r->out = kb__xstrdup("");
	if (o->want_report) {
		ck_assert_msg(strstr(o->argv[0], "ncu") == NULL, "%s",
			      o->argv[0]);
		r->report = kb__xstrdup("benchmark-count: 1\nuser-code: "
					"started\nbenchmark.0.status: pass\n"
					"check: pass\n");
		r->report_len = strlen(r->report);
	}
	return 0;
}

START_TEST(test_eval_cpu)
{
	Kb__Submission *s = wf_submission("c", KB__MODE__MODE_PROFILE);
	struct kb_eval_opts o = {
		.workdir = root,
		.worker = "cpu-worker",
		.gpu = "CPU",
		.build_timeout_s = 60,
		.sandbox = cpu_sandbox,
	};
	Kb__Result *r = kb_eval_run(&o, s);

	ck_assert_msg(r->verdict == KB__VERDICT__VERDICT_PASSED, "%s",
		      r->error);
	ck_assert_uint_eq(r->n_runs, 2);
	ck_assert_str_eq(r->runs[1]->key, "profile.1");
	ck_assert_str_eq(r->runs[1]->profile->error,
			 KB_PROFILE_NO_CPU_PROFILER);
	ck_assert_uint_eq(r->runs[1]->profile->trace.len, 0);
	kb__result__free_unpacked(r, NULL);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("worker_profile");
	TCase *pure = tcase_create("pure");
	TCase *eval = tcase_create("eval");

	tcase_add_test(pure, test_request_check);
	tcase_add_test(pure, test_ncu_argv_defaults);
	tcase_add_test(pure, test_ncu_argv_request);
	tcase_add_test(pure, test_ncu_messages);
	tcase_add_test(pure, test_sol_from_csv);
	tcase_add_test(pure, test_sol_from_text);
	tcase_add_test(pure, test_report_decode);
	tcase_add_test(pure, test_zip_roundtrip);
	tcase_add_test(pure, test_plan_benchmark_index);
	tcase_add_test(pure, test_ncu_locate);
	suite_add_tcase(s, pure);

	tcase_add_checked_fixture(eval, setup, teardown);
	tcase_add_test(eval, test_eval_ncu_profile);
	tcase_add_test(eval, test_eval_ncu_installation);
	tcase_add_test(eval, test_eval_ncu_denied);
	tcase_add_test(eval, test_eval_no_ncu);
	tcase_add_test(eval, test_eval_report_link);
	tcase_add_test(eval, test_eval_trace_budget);
	tcase_add_test(eval, test_eval_bad_index);
	tcase_add_test(eval, test_eval_cpu);
	tcase_set_timeout(eval, 60);
	suite_add_tcase(s, eval);
	return s;
}

int main(void)
{
	kb_log_init("worker-profile-test", KB_LOG_ERROR, 0);
	if (kb_util_init() < 0)
		return EXIT_FAILURE;
	return kb_check_run(suite());
}
