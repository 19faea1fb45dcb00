/* The cu builder and the GPU plumbing without nvcc and without a GPU:
 * the arch table, the trusted harness cache (its key, its atomic fill by
 * two processes at once), the build's commands against a fake nvcc, and a
 * whole evaluation on a GPU worker against a fake sandbox (environment,
 * device nodes, what each command sees, system info from the harness's
 * report). */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "build.h"
#include "build_int.h"
#include "eval.h"
#include "nvidia.h"
#include "jobdir.h"
#include "kb_log.h"
#include "kb_report.h"
#include "kb_util.h"
#include "pbutil.h"
#include "sysinfo.h"
#include "worker_fixture.h"
#include "kb_check_main.h"

#define FAKE_HOME "/opt/fake-cuda"
#define FAKE_NVCC FAKE_HOME "/bin/nvcc"

static char *root; /* per test: job directories and the cache */
static char cache[4200];
static char cache_user[4300]; /* the submission builds' cache */

static void setup(void)
{
	root = wf_tmpdir();
	ck_assert_ptr_nonnull(root);
	snprintf(cache, sizeof(cache), "%s/cache", root);
	snprintf(cache_user, sizeof(cache_user), "%s/user", cache);
}

static void teardown(void)
{
	kb_jobdir_remove(root);
	free(root);
}

static char *slurp(const char *dir, const char *name)
{
	char path[8192], *data = NULL;
	size_t len;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return kb_read_file(path, SIZE_MAX, &data, &len) == 0 ? data : NULL;
}

static void spit(const char *dir, const char *name, const char *text)
{
	char path[8192];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	ck_assert_int_eq(kb_write_file(path, text, strlen(text), 0644), 0);
}

/* Entries of dir whose names start with prefix. */
static int count_entries(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += strncmp(e->d_name, prefix, strlen(prefix)) == 0 &&
		     strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

static void replace_files(Kb__Task *t)
{
	for (size_t i = 0; i < t->n_files; i++)
		kb__task_file__free_unpacked(t->files[i], NULL);
	free(t->files);
	t->files = NULL;
	t->n_files = 0;
}

static void set_code(Kb__Submission *s, const char *code)
{
	free(s->code.data);
	s->code.data = (uint8_t *)kb__xstrdup(code);
	s->code.len = strlen(code);
	for (size_t i = 0; i < s->task->n_files; i++)
		if (strcmp(s->task->files[i]->name, "submission.cu") == 0) {
			free(s->task->files[i]->content.data);
			s->task->files[i]->content.data =
				(uint8_t *)kb__xstrdup(code);
			s->task->files[i]->content.len = strlen(code);
		}
}

/* A cu task shaped like ours: two harness sources (CUDA and C), a header
 * and the submission, as the gateway sends it (the submission's content
 * in place), loaded by the harness's child. */
static Kb__Submission *cu_submission(Kb__Mode mode)
{
	Kb__Submission *s = wf_submission("cu", mode);
	Kb__Task *t = s->task;

	replace_files(t);
	wf_add_file(t, "kbg_main.cu", "// main\n#include \"task.h\"\n");
	wf_add_file(t, "kbg_model.c", "// model\n");
	wf_add_file(t, "task.h", "// task header v1\n");
	wf_add_file(t, "submission.cu", "");
	wf_set_config(t, "sources", "kbg_main.cu\nkbg_model.c\nsubmission.cu");
	wf_set_config(t, "loader", "child");
	kb__pb_set_str(&s->gpu, "H100");
	kb__pb_set_str(&s->file_name, "mine.cu");
	set_code(s, "extern \"C\" void custom_kernel() {}\n");
	return s;
}

static void set_file(Kb__Task *t, const char *name, const char *content)
{
	for (size_t i = 0; i < t->n_files; i++)
		if (strcmp(t->files[i]->name, name) == 0) {
			free(t->files[i]->content.data);
			t->files[i]->content.data =
				(uint8_t *)kb__xstrdup(content);
			t->files[i]->content.len = strlen(content);
			return;
		}
	wf_add_file(t, name, content);
}

/* ---- arch ------------------------------------------------------------- */

START_TEST(test_arch_for_cc)
{
	static const struct {
		int major, minor;
		const char *arch;
	} table[] = {
		{9, 0, "90a"},   {8, 0, "80"}, {8, 9, "89"},    {7, 5, "75"},
		{10, 0, "100a"}, {8, 6, "86"}, {12, 0, "120a"}, {10, 3, "103a"},
	};
	char out[16];

	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		ck_assert_int_eq(kb_nvidia_arch_for_cc(table[i].major,
						       table[i].minor, out,
						       sizeof(out)),
				 0);
		ck_assert_str_eq(out, table[i].arch);
		ck_assert(kb_nvidia_arch_valid(out));
	}
	ck_assert_int_eq(kb_nvidia_arch_for_cc(3, 5, out, sizeof(out)),
			 -EINVAL);
	ck_assert_int_eq(kb_nvidia_arch_for_cc(9, 0, out, 3), -EINVAL);
}
END_TEST

START_TEST(test_arch_for_name)
{
	ck_assert_str_eq(kb_nvidia_arch_for_name("H100"), "90a");
	ck_assert_str_eq(kb_nvidia_arch_for_name("h100"), "90a");
	ck_assert_str_eq(kb_nvidia_arch_for_name("H200"), "90a");
	ck_assert_str_eq(kb_nvidia_arch_for_name("A100"), "80");
	ck_assert_str_eq(kb_nvidia_arch_for_name("L4"), "89");
	ck_assert_str_eq(kb_nvidia_arch_for_name("T4"), "75");
	ck_assert_str_eq(kb_nvidia_arch_for_name("B200"), "100a");
	ck_assert_ptr_null(kb_nvidia_arch_for_name("CPU"));
	ck_assert_ptr_null(kb_nvidia_arch_for_name("MI300"));
	ck_assert_ptr_null(kb_nvidia_arch_for_name(NULL));
}
END_TEST

START_TEST(test_arch_valid)
{
	static const char *const good[] = {"90a",  "80", "75",  "100a",
					   "100f", "89", "120a"};
	static const char *const bad[] = {
		"",     "9",   "sm_90a", "90A",        "90ab",
		"1000", "a90", "90 ",    "compute_90", "90a,code=sm_80"};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(kb_nvidia_arch_valid(good[i]), "%s", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!kb_nvidia_arch_valid(bad[i]), "%s", bad[i]);
	ck_assert(!kb_nvidia_arch_valid(NULL));
}
END_TEST

/* No libcuda here (or no GPU): the probe says why, and leaves no child. */
START_TEST(test_probe_reports_failure)
{
	struct kb_device_info g;
	int rc = kb_nvidia_probe(&g, 30);

	if (rc == 0) {
		/* A machine with a GPU: then it must make sense. */
		ck_assert(g.ok);
		ck_assert(g.cc_major >= 5);
		ck_assert(g.name[0]);
		return;
	}
	ck_assert_int_eq(g.ok, 0);
	ck_assert_int_eq(g.minor, -1);
	ck_assert_msg(g.why[0], "no reason given");
	ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1);
}
END_TEST

/* ---- the device table: which family, which device nodes --------------- */

START_TEST(test_device_families)
{
	ck_assert_ptr_eq(kb_device_family_for("CPU"), &kb_device_cpu);
	ck_assert_ptr_eq(kb_device_family_for("cpu"), &kb_device_cpu);
	ck_assert_ptr_eq(kb_device_family_for("MI300"), &kb_device_amd);
	ck_assert_ptr_eq(kb_device_family_for("mi250x"), &kb_device_amd);
	ck_assert_ptr_eq(kb_device_family_for("H100"), &kb_device_nvidia);
	ck_assert_ptr_eq(kb_device_family_for(NULL), &kb_device_nvidia);
	ck_assert_int_eq(kb_device_cpu.has_device, 0);
	ck_assert_int_eq(kb_device_nvidia.has_device, 1);
	ck_assert_str_eq(kb_device_nvidia.run_env, "CUDA_VISIBLE_DEVICES");
}
END_TEST

/* What the sandbox binds of /dev/<entry> for a GPU run; "" for nothing. */
static const char *node(const struct kb_device_family *own, int restrict_,
			int index, const char *entry)
{
	static char path[300];

	if (!kb_device_dev_node(own, restrict_, index, entry, path,
				sizeof(path)))
		path[0] = '\0';
	return path;
}

START_TEST(test_device_nodes)
{
	const struct kb_device_family *nv = &kb_device_nvidia,
				      *amd = &kb_device_amd;

	/* An NVIDIA worker restricted to GPU 3: its node and the shared
	 * ones; AMD's nodes where the host has them, whole. */
	ck_assert_str_eq(node(nv, 1, 3, "nvidia3"), "/dev/nvidia3");
	ck_assert_str_eq(node(nv, 1, 3, "nvidia2"), "");
	ck_assert_str_eq(node(nv, 1, 3, "nvidia12"), "");
	ck_assert_str_eq(node(nv, 1, 3, "nvidiactl"), "/dev/nvidiactl");
	ck_assert_str_eq(node(nv, 1, 3, "nvidia-uvm"), "/dev/nvidia-uvm");
	ck_assert_str_eq(node(nv, 1, 3, "nvidia-caps"), "/dev/nvidia-caps");
	ck_assert_str_eq(node(nv, 1, 3, "kfd"), "/dev/kfd");
	ck_assert_str_eq(node(nv, 1, 3, "dri"), "/dev/dri");
	ck_assert_str_eq(node(nv, 1, 3, "null"), "");
	ck_assert_str_eq(node(nv, 1, 3, "shm"), "");
	/* Unrestricted: every GPU's. */
	ck_assert_str_eq(node(nv, 0, 3, "nvidia2"), "/dev/nvidia2");
	ck_assert_str_eq(node(NULL, 0, -1, "nvidia0"), "/dev/nvidia0");
	/* An AMD worker restricted to renderD128: that render node and
	 * /dev/kfd; no NVIDIA GPU's node, the shared ones stay. */
	ck_assert_str_eq(node(amd, 1, 128, "dri"), "/dev/dri/renderD128");
	ck_assert_str_eq(node(amd, 1, 128, "kfd"), "/dev/kfd");
	ck_assert_str_eq(node(amd, 1, 128, "nvidia0"), "");
	ck_assert_str_eq(node(amd, 1, 128, "nvidiactl"), "/dev/nvidiactl");
	ck_assert_str_eq(node(amd, 1, -1, "dri"), "/dev/dri");
	ck_assert_str_eq(node(amd, 0, 128, "dri"), "/dev/dri");
}
END_TEST

/* ---- which file is the submission ------------------------------------- */

START_TEST(test_submission_file)
{
	Kb__Submission *s = cu_submission(KB__MODE__MODE_TEST);

	ck_assert_int_eq(kb_builder_submission_file(s->task, &s->code), 3);
	/* The placeholder, as `kb-worker eval` or a gateway may leave it. */
	set_file(s->task, "submission.cu", "@SUBMISSION@");
	ck_assert_int_eq(kb_builder_submission_file(s->task, &s->code), 3);
	/* A submission identical to a task file is ambiguous. */
	set_file(s->task, "submission.cu", "// model\n");
	set_code(s, "// model\n");
	ck_assert_int_eq(kb_builder_submission_file(s->task, &s->code), -2);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

/* ---- the cache key ---------------------------------------------------- */

static void key_of(const Kb__Task *t, long sub, const char *arch,
		   const char *version, char out[65])
{
	struct kb_argv cmd = {0};
	char gencode[64];
	struct kb__harness h = {&cmd, 1, version, sub};

	snprintf(gencode, sizeof(gencode),
		 "-gencode=arch=compute_%s,code=sm_%s", arch, arch);
	kb_argv_push(&cmd, FAKE_NVCC);
	kb_argv_push(&cmd, gencode);
	kb_argv_push(&cmd, "kbg_main.cu");
	kb_argv_push(&cmd, "-o");
	kb_argv_push(&cmd, "../step/eval.out");
	kb__cache_key(t, &h, out);
	kb_argv_free(&cmd);
}

START_TEST(test_cache_key)
{
	Kb__Submission *s = cu_submission(KB__MODE__MODE_TEST);
	const char *v1 = "Cuda compilation tools, release 12.4, V12.4.131";
	const char *v2 = "Cuda compilation tools, release 12.8, V12.8.93";
	char base[65], k[65];

	key_of(s->task, 3, "90a", v1, base);
	ck_assert_uint_eq(strlen(base), 64);
	key_of(s->task, 3, "90a", v1, k);
	ck_assert_str_eq(k, base);
	/* The submission is not part of it. */
	set_code(s, "extern \"C\" void custom_kernel() { /* faster */ }\n");
	key_of(s->task, 3, "90a", v1, k);
	ck_assert_str_eq(k, base);
	/* The commands (with the arch) and the toolkit are. */
	key_of(s->task, 3, "80", v1, k);
	ck_assert_str_ne(k, base);
	key_of(s->task, 3, "90a", v2, k);
	ck_assert_str_ne(k, base);
	/* Every other task file is, headers included. */
	set_file(s->task, "task.h", "// task header v2\n");
	key_of(s->task, 3, "90a", v1, k);
	ck_assert_str_ne(k, base);
	set_file(s->task, "task.h", "// task header v1\n");
	key_of(s->task, 3, "90a", v1, k);
	ck_assert_str_eq(k, base);
	set_file(s->task, "kbg_main.cu", "// main v2\n");
	key_of(s->task, 3, "90a", v1, k);
	ck_assert_str_ne(k, base);
	set_file(s->task, "kbg_main.cu", "// main\n#include \"task.h\"\n");
	set_file(s->task, "extra.h", "");
	key_of(s->task, 3, "90a", v1, k);
	ck_assert_str_ne(k, base);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

/* ---- a fake nvcc ------------------------------------------------------ */

#define CMD_MAX 24

static struct fake {
	int n;
	char argv[CMD_MAX][1400];
	char dir[CMD_MAX][4200];
	const char *version;
	const char *fail_on;   /* argv substring whose command exits 2 */
	const char *fail_text; /* its stderr line (default: a syntax error) */
	unsigned sleep_ms;     /* per compile */
	int err_lines;         /* of a failing command's stderr */
	const char *say;       /* a compile's stdout */
	int arrive_fd;         /* > 0: the first compile writes a byte here */
	int release_fd;        /* ... and waits (30 s at most) for one here */
} fake;

static void join(char *out, size_t n, char *const *v)
{
	out[0] = '\0';
	for (size_t i = 0; v && v[i]; i++) {
		if (i)
			strncat(out, " ", n - strlen(out) - 1);
		strncat(out, v[i], n - strlen(out) - 1);
	}
}

static char *const *find_arg(char *const *v, const char *arg)
{
	for (; *v; v++)
		if (strcmp(*v, arg) == 0)
			return v;
	return NULL;
}

/* Plays nvcc in dir: --version, a failure when asked, else writes what -o
 * names (relative to dir), saying which command made it. */
static void play(char *const *argv, const char *dir,
		 struct kb_sandbox_result *r)
{
	char line[1400], *const *o;

	join(line, sizeof(line), argv);
	r->wall_s = 0.25;
	r->exited = 1;
	r->out = kb__xstrdup("");
	r->err = kb__xstrdup("");
	if (fake.fail_on && strstr(line, fake.fail_on)) {
		struct kb_buf e = {0};

		for (int i = 1; i <= (fake.err_lines ? fake.err_lines : 1); i++)
			kb_buf_printf(
				&e, "%s\n",
				fake.fail_text
					? fake.fail_text
					: "submission.cu(1): error: expected a "
					  "\";\"");
		free(r->err);
		r->err = e.data;
		r->err_len = e.len;
		r->exit_code = 2;
		return;
	}
	ck_assert_str_eq(argv[0], FAKE_NVCC);
	if (argv[1] && strcmp(argv[1], "--version") == 0) {
		free(r->out);
		r->out = kb__xstrdup(
			fake.version ? fake.version
				     : "Cuda compilation tools, release 12.4, "
				       "V12.4.131\n");
		r->out_len = strlen(r->out);
		return;
	}
	if (fake.arrive_fd > 0) {
		struct pollfd p = {.fd = fake.release_fd, .events = POLLIN};
		char c;

		ck_assert_int_eq(write(fake.arrive_fd, "a", 1), 1);
		if (poll(&p, 1, 30000) == 1)
			ck_assert_int_eq(read(fake.release_fd, &c, 1), 1);
		fake.arrive_fd = 0;
	}
	if (fake.sleep_ms)
		usleep(fake.sleep_ms * 1000);
	if (fake.say) {
		free(r->out);
		r->out = kb__xstrdup(fake.say);
		r->out_len = strlen(r->out);
	}
	o = find_arg(argv, "-o");
	ck_assert_ptr_nonnull(o);
	{
		char *obj = kb__xasprintf("made by %s by %ld\n", line,
					  (long)getpid());

		spit(dir, o[1], obj);
		free(obj);
	}
}

static int fake_exec(void *ctx, const struct kb_build_cmd *cmd,
		     struct kb_sandbox_result *r, char *err, size_t err_size)
{
	const struct kb_jobdir *jd = ctx;
	const int k = fake.n++;
	const char *dir = cmd->cwd ? cmd->cwd : jd->task;

	ck_assert_int_lt(k, CMD_MAX);
	join(fake.argv[k], sizeof(fake.argv[k]), cmd->argv->v);
	snprintf(fake.dir[k], sizeof(fake.dir[k]), "%s", dir);
	/* Every command runs with a fresh scratch to write into. */
	ck_assert_int_ge(jd->step_fd, 0);
	memset(r, 0, sizeof(*r));
	play(cmd->argv->v, dir, r);
	return 0;
}

struct built {
	enum kb_build_state st;
	Kb__CompileResult *cr;
	char msg[256];
	struct kb_jobdir jd;
	char toolkit[64];
	int loads;
};

static struct built build(const Kb__Submission *s, const char *arch)
{
	struct built b;
	char err[256];
	struct kb_build_ctx c;

	memset(&b, 0, sizeof(b));
	ck_assert_int_eq(kb_jobdir_open(&b.jd, root, s->id, err, sizeof(err)),
			 0);
	ck_assert_int_eq(kb_jobdir_materialize(&b.jd, s->task, &s->code, -1, 1,
					       err, sizeof(err)),
			 0);
	c = (struct kb_build_ctx){
		.task = s->task,
		.code = &s->code,
		.jd = &b.jd,
		.gpu = "H100",
		.timeout_s = 60,
		.output_max = 16384,
		.exec = fake_exec,
		.exec_ctx = &b.jd,
		.cuda_arch = arch,
		.cuda_home = FAKE_HOME,
		.cache_dir = cache,
		.user = s->user_id,
		.toolkit = b.toolkit,
		.toolkit_size = sizeof(b.toolkit),
	};
	fake.n = 0;
	b.cr = kb__xcalloc(1, sizeof(*b.cr));
	kb__compile_result__init(b.cr);
	b.st = kb_builder_find("cu")->build(&c, b.cr, b.msg, sizeof(b.msg));
	b.loads = c.loads_submission;
	return b;
}

static void built_free(struct built *b)
{
	kb__compile_result__free_unpacked(b->cr, NULL);
	kb_jobdir_close(&b->jd, 0);
}

#define GENCODE_90A "-gencode=arch=compute_90a,code=sm_90a"
#define CU_FLAGS                                                               \
	"--std=c++20 -DNDEBUG -Xcompiler=-Wno-psabi "                          \
	"-Xcompiler=-fno-strict-aliasing --expt-extended-lambda "              \
	"--expt-relaxed-constexpr -forward-unknown-to-host-compiler -O3 "      \
	"-Xnvlink=--verbose -Xptxas=--verbose -Xptxas=--warn-on-spills "       \
	"-lineinfo"

START_TEST(test_split_build_commands)
{
	Kb__Submission *s = cu_submission(KB__MODE__MODE_TEST);
	struct built b = build(s, "90a");
	char *made;

	ck_assert_msg(b.st == KB_BUILD_OK, "state %d: %s", b.st, b.msg);
	ck_assert_int_eq(fake.n, 5);
	ck_assert_str_eq(fake.argv[0], FAKE_NVCC " --version");
	/* The harness, upstream's flags, compiled and linked with the shared
	 * runtime in J/harness, which holds no submission. */
	ck_assert_str_eq(fake.argv[1],
			 FAKE_NVCC " " CU_FLAGS " " GENCODE_90A
				   " -c kbg_main.cu -o ../step/kbg_main.o");
	ck_assert_str_eq(fake.argv[2],
			 FAKE_NVCC " -O3 " GENCODE_90A " -Xcompiler -std=gnu17"
				   " -c kbg_model.c -o ../step/kbg_model.o");
	ck_assert_str_eq(fake.argv[3], FAKE_NVCC
			 " " GENCODE_90A " -o ../step/eval.out "
			 "../step/kbg_main.o ../step/kbg_model.o -cudart "
			 "shared -lcuda -ldl");
	for (int k = 1; k <= 3; k++)
		ck_assert_str_eq(fake.dir[k], b.jd.harness);
	ck_assert(access(b.jd.harness, F_OK) == 0);
	made = slurp(b.jd.harness, "submission.cu");
	ck_assert_ptr_null(made);
	/* Per job: the submission alone, a shared object, from J/task. */
	ck_assert_str_eq(fake.argv[4], FAKE_NVCC
			 " " CU_FLAGS " " GENCODE_90A
			 " -shared -Xcompiler=-fPIC -cudart shared "
			 "-Xlinker=--no-undefined "
			 "-Xlinker=--require-defined=custom_kernel "
			 "submission.cu -o ../step/submission.so "
			 "-Xlinker=--as-needed -lcublas -lcublasLt -lcuda");
	ck_assert_str_eq(fake.dir[4], b.jd.task);
	/* Both in J/out; the harness from the cache. */
	made = slurp(b.jd.out, "eval.out");
	ck_assert_ptr_nonnull(made);
	ck_assert_msg(strstr(made, "-o ../step/eval.out"), "%s", made);
	free(made);
	made = slurp(b.jd.out, "submission.so");
	ck_assert_ptr_nonnull(made);
	free(made);
	ck_assert_int_eq(b.loads, 1);
	ck_assert_int_eq(count_entries(cache, "h-"), 1);
	ck_assert_int_eq(count_entries(cache, ".tmp-"), 0);
	/* The CompileResult: the job's own command, all the time, the
	 * toolkit. */
	ck_assert_int_eq(b.cr->success, 1);
	ck_assert_int_eq(b.cr->exit_code, 0);
	ck_assert_msg(strstr(b.cr->command, "submission.cu -o ../step/"
					    "submission.so") &&
			      !strstr(b.cr->command, "kbg_main.cu"),
		      "%s", b.cr->command);
	ck_assert_double_eq_tol(b.cr->duration_s, 5 * 0.25, 1e-9);
	ck_assert_str_eq(b.toolkit, "CUDA 12.4");
	built_free(&b);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

START_TEST(test_cache_reuse_and_invalidation)
{
	Kb__Submission *s = cu_submission(KB__MODE__MODE_TEST);
	struct built b = build(s, "90a");

	ck_assert_int_eq(b.st, KB_BUILD_OK);
	ck_assert_int_eq(fake.n, 5);
	built_free(&b);
	/* Another submission: only its own command (the version is
	 * remembered). */
	set_code(s, "extern \"C\" void custom_kernel() { /* v2 */ }\n");
	b = build(s, "90a");
	ck_assert_int_eq(b.st, KB_BUILD_OK);
	ck_assert_int_eq(fake.n, 1);
	ck_assert_msg(strstr(fake.argv[0], "submission.cu -o"), "%s",
		      fake.argv[0]);
	ck_assert_int_eq(count_entries(cache, "h-"), 1);
	built_free(&b);
	/* A header of the harness changed: rebuilt under a new key. */
	set_file(s->task, "task.h", "// task header v2\n");
	b = build(s, "90a");
	ck_assert_int_eq(b.st, KB_BUILD_OK);
	ck_assert_int_eq(fake.n, 4);
	ck_assert_int_eq(count_entries(cache, "h-"), 2);
	built_free(&b);
	/* Another architecture: another key. */
	b = build(s, "80");
	ck_assert_int_eq(b.st, KB_BUILD_OK);
	ck_assert_int_eq(fake.n, 4);
	ck_assert_msg(strstr(fake.argv[0],
			     "-gencode=arch=compute_80,code=sm_80"),
		      "%s", fake.argv[0]);
	ck_assert_int_eq(count_entries(cache, "h-"), 3);
	built_free(&b);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

/* Another toolkit binary (a new file at the same path): asked again, and
 * another key. */
START_TEST(test_cache_new_toolkit)
{
	Kb__Submission *s = cu_submission(KB__MODE__MODE_TEST);
	struct built b;

	fake.version = "Cuda compilation tools, release 12.8, V12.8.93\n";
	b = build(s, "80");
	ck_assert_int_eq(b.st, KB_BUILD_OK);
	ck_assert_int_eq(fake.n, 5);
	ck_assert_int_eq(count_entries(cache, "h-"), 1);
	ck_assert_str_eq(b.toolkit, "CUDA 12.8");
	built_free(&b);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

START_TEST(test_task_flags)
{
	Kb__Submission *s = cu_submission(KB__MODE__MODE_TEST);
	struct built b;

	wf_set_config(s->task, "flags", "-O2\n--std=c++17");
	wf_set_config(s->task, "compile_flags", "--use_fast_math");
	wf_set_config(s->task, "include_dirs", "/opt/tk/include");
	wf_set_config(s->task, "defines", "BLOCK=256");
	wf_set_config(s->task, "libraries", "cublas");
	b = build(s, "90a");
	ck_assert_msg(b.st == KB_BUILD_OK, "%s", b.msg);
	/* config.flags replaces the default, the rest is added. */
	ck_assert_str_eq(fake.argv[1],
			 FAKE_NVCC " -O2 --std=c++17 --use_fast_math "
				   "-I/opt/tk/include -DBLOCK=256 " GENCODE_90A
				   " -c kbg_main.cu -o ../step/kbg_main.o");
	ck_assert_str_eq(fake.argv[2], FAKE_NVCC
			 " -O3 " GENCODE_90A " -Xcompiler -std=gnu17 "
			 "-I/opt/tk/include -DBLOCK=256 -c kbg_model.c -o "
			 "../step/kbg_model.o");
	ck_assert_str_eq(fake.argv[3], FAKE_NVCC
			 " " GENCODE_90A " -o ../step/eval.out "
			 "../step/kbg_main.o ../step/kbg_model.o -cudart "
			 "shared -lcublas -lcuda -ldl");
	ck_assert_str_eq(fake.argv[4], FAKE_NVCC
			 " -O2 --std=c++17 --use_fast_math "
			 "-I/opt/tk/include -DBLOCK=256 " GENCODE_90A
			 " -shared -Xcompiler=-fPIC -cudart shared "
			 "-Xlinker=--no-undefined "
			 "-Xlinker=--require-defined=custom_kernel "
			 "submission.cu -o ../step/submission.so -lcublas "
			 "-Xlinker=--as-needed -lcublas -lcublasLt -lcuda");
	built_free(&b);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

/* Upstream's shapes: no loader, so one nvcc over every source, as upstream
 * runs it: its eval.cu includes the submission, or calls it directly. */
START_TEST(test_oneshot_upstream)
{
	Kb__Submission *s = cu_submission(KB__MODE__MODE_TEST);
	Kb__Task *t = s->task;
	struct built b;

	wf_set_config(t, "loader", "");
	replace_files(t);
	wf_add_file(t, "eval.cu",
		    "#include \"reference.cuh\"\n"
		    "#include \"submission.cuh\"\n");
	wf_add_file(t, "reference.cuh", "// ref\n");
	wf_add_file(t, "submission.cuh", "@SUBMISSION@");
	wf_set_config(t, "sources", "eval.cu");
	b = build(s, "80");
	ck_assert_msg(b.st == KB_BUILD_OK, "%s", b.msg);
	ck_assert_int_eq(fake.n, 2);
	ck_assert_str_eq(fake.argv[1], FAKE_NVCC
			 " " CU_FLAGS " "
			 "-gencode=arch=compute_80,code=sm_80 eval.cu -o "
			 "../step/eval.out -lcuda");
	ck_assert_int_eq(count_entries(cache, "h-"), 0);
	ck_assert_int_eq(b.loads, 0);
	built_free(&b);

	/* Both sources, the harness calling custom_kernel itself. */
	replace_files(t);
	wf_add_file(t, "eval.cu",
		    "void custom_kernel(); int main() "
		    "{ custom_kernel(); }\n");
	wf_add_file(t, "submission.cu", "@SUBMISSION@");
	wf_set_config(t, "sources", "eval.cu\nsubmission.cu");
	b = build(s, "80");
	ck_assert_int_eq(b.st, KB_BUILD_OK);
	ck_assert_int_eq(fake.n, 1);
	ck_assert_msg(strstr(fake.argv[0],
			     " eval.cu submission.cu -o ../step/eval.out"),
		      "%s", fake.argv[0]);
	built_free(&b);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

/* loader: child needs the submission as a source of its own. */
START_TEST(test_loader_misconfigured)
{
	Kb__Submission *s = cu_submission(KB__MODE__MODE_TEST);
	struct built b;

	wf_set_config(s->task, "sources", "kbg_main.cu\nkbg_model.c");
	b = build(s, "90a");
	ck_assert_int_eq(b.st, KB_BUILD_INFRA);
	ck_assert_msg(strstr(b.msg, "loader"), "%s", b.msg);
	ck_assert_int_eq(fake.n, 0);
	built_free(&b);
	wf_set_config(s->task, "sources", "kbg_main.cu\nsubmission.cu");
	wf_set_config(s->task, "loader", "parent");
	b = build(s, "90a");
	ck_assert_int_eq(b.st, KB_BUILD_INFRA);
	built_free(&b);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

START_TEST(test_compile_error_is_users)
{
	Kb__Submission *s = cu_submission(KB__MODE__MODE_TEST);
	struct built b;

	fake.fail_on = "-shared";
	b = build(s, "90a");
	ck_assert_int_eq(b.st, KB_BUILD_FAILED);
	ck_assert_int_eq(b.cr->success, 0);
	ck_assert_int_eq(b.cr->exit_code, 2);
	ck_assert_int_eq(b.loads, 0);
	ck_assert_msg(strstr(b.cr->stderr, "error: expected a"), "%s",
		      b.cr->stderr);
	ck_assert_msg(strstr(b.cr->command, "submission.cu -o "
					    "../step/submission.so"),
		      "%s", b.cr->command);
	ck_assert(access(b.jd.step, F_OK) < 0);
	/* The harness was built (and cached) all the same. */
	ck_assert_int_eq(count_entries(cache, "h-"), 1);
	built_free(&b);

	/* No custom_kernel (or one with C++ linkage): the linker says so. */
	fake.fail_text = "nvlink error: required symbol `custom_kernel' not "
			 "defined";
	b = build(s, "90a");
	ck_assert_int_eq(b.st, KB_BUILD_FAILED);
	ck_assert_msg(strstr(b.cr->stderr, "custom_kernel' not defined"), "%s",
		      b.cr->stderr);
	built_free(&b);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

/* Long compiler output keeps its beginning: the first errors matter. */
START_TEST(test_compile_error_truncated_from_the_end)
{
	Kb__Submission *s = cu_submission(KB__MODE__MODE_TEST);
	struct built b;

	fake.fail_on = "-shared";
	fake.err_lines = 5000;
	b = build(s, "90a");
	ck_assert_int_eq(b.st, KB_BUILD_FAILED);
	ck_assert_msg(strncmp(b.cr->stderr, "submission.cu(1): error", 23) == 0,
		      "%.200s", b.cr->stderr);
	ck_assert_msg(strstr(b.cr->stderr, "bytes truncated]"), "%.200s",
		      b.cr->stderr);
	ck_assert_uint_le(strlen(b.cr->stderr), 16384 + 64);
	built_free(&b);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

START_TEST(test_harness_failure_is_infra)
{
	Kb__Submission *s = cu_submission(KB__MODE__MODE_TEST);
	struct built b;

	fake.fail_on = "-c kbg_model.c";
	fake.fail_text = "kbg_model.c(1): error: boom";
	b = build(s, "90a");
	ck_assert_int_eq(b.st, KB_BUILD_INFRA);
	ck_assert_msg(strstr(b.msg, "the problem's harness does not build") &&
			      strstr(b.msg, "boom"),
		      "%s", b.msg);
	ck_assert_int_eq(count_entries(cache, "h-"), 0);
	ck_assert_int_eq(count_entries(cache, ".tmp-"), 0);
	built_free(&b);
	/* No arch (a CPU worker, or a device nobody could read): this
	 * worker cannot build cu, and nothing runs. */
	fake.fail_on = NULL;
	b = build(s, NULL);
	ck_assert_int_eq(b.st, KB_BUILD_UNSUPPORTED);
	ck_assert_msg(strstr(b.cr->stderr, "not supported"), "%s",
		      b.cr->stderr);
	ck_assert_msg(strstr(b.msg, "KB_CUDA_ARCH"), "%s", b.msg);
	ck_assert_int_eq(fake.n, 0);
	built_free(&b);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

/* ---- the fill is atomic ----------------------------------------------- */

/* One of two racing builders: waits for the start signal, builds, and
 * writes what it finds in its J/out/eval.out to <root>/seen-<n>. Its
 * first compile waits at the barrier (arrive/release) until both have
 * reached theirs, so both have found the cache empty. */
static void racer(int n, int go_fd, const int arrive[2], const int release[2],
		  const Kb__Submission *s)
{
	char name[32], go, *made, *seen;
	struct built b;

	fake.sleep_ms = 300;
	fake.arrive_fd = arrive[1];
	fake.release_fd = release[0];
	if (read(go_fd, &go, 1) != 1)
		_exit(3);
	b = build(s, "90a");
	if (b.st != KB_BUILD_OK) {
		fprintf(stderr, "racer %d: %s\n", n, b.msg);
		_exit(1);
	}
	made = slurp(b.jd.out, "eval.out");
	if (!made)
		_exit(2);
	seen = kb__xasprintf("%scommands %d\n", made, fake.n);
	snprintf(name, sizeof(name), "seen-%d", n);
	spit(root, name, seen);
	_exit(0);
}

START_TEST(test_fill_is_atomic)
{
	Kb__Submission *s = cu_submission(KB__MODE__MODE_TEST);
	int go[2], arrive[2], release[2], st;
	pid_t pid[2];
	char *seen[2], got[2];
	struct built b;

	ck_assert_int_eq(pipe(go), 0);
	ck_assert_int_eq(pipe(arrive), 0);
	ck_assert_int_eq(pipe(release), 0);
	ck_assert_int_eq(mkdir(cache, 0700), 0);
	for (int i = 0; i < 2; i++) {
		pid[i] = fork();
		ck_assert_int_ge(pid[i], 0);
		if (pid[i] == 0)
			racer(i, go[0], arrive, release, s);
	}
	ck_assert_int_eq(write(go[1], "gg", 2), 2);
	/* Both at their first compile (30 s at most: one that found the
	 * cache full never comes, and the check below says so). */
	for (int n = 0; n < 2;) {
		struct pollfd p = {.fd = arrive[0], .events = POLLIN};
		ssize_t k;

		if (poll(&p, 1, 30000) != 1)
			break;
		k = read(arrive[0], got, (size_t)(2 - n));
		if (k <= 0)
			break;
		n += (int)k;
	}
	ck_assert_int_eq(write(release[1], "rr", 2), 2);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(waitpid(pid[i], &st, 0), pid[i]);
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
			      "racer %d: status %d", i, st);
	}
	for (int i = 0; i < 2; i++) {
		char name[32];

		snprintf(name, sizeof(name), "seen-%d", i);
		seen[i] = slurp(root, name);
		ck_assert_ptr_nonnull(seen[i]);
		/* Both built the harness (the race happened)... */
		ck_assert_msg(strstr(seen[i], "commands 5"), "%s", seen[i]);
	}
	/* ...and both use one complete copy: the same binary, by the same
	 * builder. */
	*strstr(seen[0], "commands") = '\0';
	*strstr(seen[1], "commands") = '\0';
	ck_assert_str_eq(seen[0], seen[1]);
	ck_assert_int_eq(count_entries(cache, "h-"), 1);
	ck_assert_int_eq(count_entries(cache, ".tmp-"), 0);
	/* A third comes later: the harness and the submission (the same
	 * code) from the caches; only the version is asked. */
	b = build(s, "90a");
	ck_assert_int_eq(b.st, KB_BUILD_OK);
	ck_assert_int_eq(fake.n, 1);
	ck_assert_int_eq(count_entries(cache_user, "s-"), 1);
	built_free(&b);
	free(seen[0]);
	free(seen[1]);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

START_TEST(test_fill_repairs_and_cleans)
{
	Kb__Submission *s = cu_submission(KB__MODE__MODE_TEST);
	struct timeval old[2] = {{1000, 0}, {1000, 0}};
	char path[4400], *m;
	struct built b = build(s, "90a");
	DIR *d;
	struct dirent *e;
	char entry[4400] = "";

	ck_assert_int_eq(b.st, KB_BUILD_OK);
	built_free(&b);
	d = opendir(cache);
	while ((e = readdir(d)))
		if (strncmp(e->d_name, "h-", 2) == 0)
			snprintf(entry, sizeof(entry), "%s/%s", cache,
				 e->d_name);
	closedir(d);
	ck_assert(entry[0]);
	/* A damaged entry (no MANIFEST) and a fill that died long ago. */
	snprintf(path, sizeof(path), "%s/MANIFEST", entry);
	ck_assert_int_eq(unlink(path), 0);
	snprintf(path, sizeof(path), "%s/.tmp-dead", cache);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	ck_assert_int_eq(utimes(path, old), 0);
	b = build(s, "90a");
	ck_assert_int_eq(b.st, KB_BUILD_OK);
	/* The harness's three commands; the submission from its cache. */
	ck_assert_int_eq(fake.n, 3);
	m = slurp(entry, "MANIFEST");
	ck_assert_ptr_nonnull(m);
	ck_assert_str_eq(m, "kb-harness-cache-2\neval.out\n");
	free(m);
	ck_assert_int_eq(count_entries(cache, ".tmp-"), 0);
	/* Only the binary and the manifest are kept. */
	ck_assert_int_eq(count_entries(entry, ""), 2);
	built_free(&b);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

/* ---- the cache of submission builds ----------------------------------- */

/* Issue 30, attack 8: the same file from another user is built again, so
 * a build that took no time never tells a user someone else submitted it
 * first. */
START_TEST(test_submission_cache_per_user)
{
	Kb__Submission *s = cu_submission(KB__MODE__MODE_TEST);
	struct built b;

	kb__pb_set_str(&s->user_id, "alice");
	b = build(s, "90a");
	ck_assert_int_eq(b.st, KB_BUILD_OK);
	built_free(&b);
	b = build(s, "90a");
	ck_assert_int_eq(fake.n, 0); /* alice again: her own build, reused */
	built_free(&b);
	kb__pb_set_str(&s->user_id, "mallory");
	b = build(s, "90a");
	ck_assert_int_eq(b.st, KB_BUILD_OK);
	ck_assert_msg(fake.n > 0, "mallory got alice's build from the cache");
	built_free(&b);
	ck_assert_int_eq(count_entries(cache_user, "s-"), 2);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

START_TEST(test_submission_cache)
{
	Kb__Submission *s = cu_submission(KB__MODE__MODE_TEST);
	char *first, *again;
	struct built b;

	fake.say = "ptxas info    : Used 8 registers\n";
	b = build(s, "90a");
	ck_assert_int_eq(b.st, KB_BUILD_OK);
	ck_assert_int_eq(fake.n, 5);
	first = slurp(b.jd.out, "submission.so");
	ck_assert_ptr_nonnull(first);
	built_free(&b);
	ck_assert_int_eq(count_entries(cache_user, "s-"), 1);
	/* The same code again (the next mode of one file): nothing runs,
	 * the same object, the same compiler output, the same command. */
	fake.say = "this build must not run\n";
	b = build(s, "90a");
	ck_assert_msg(b.st == KB_BUILD_OK, "%d %s", b.st, b.msg);
	ck_assert_int_eq(fake.n, 0);
	again = slurp(b.jd.out, "submission.so");
	ck_assert_ptr_nonnull(again);
	ck_assert_str_eq(again, first);
	free(again);
	ck_assert_int_eq(b.loads, 1);
	ck_assert_int_eq(b.cr->success, 1);
	ck_assert_str_eq(b.cr->stdout, "ptxas info    : Used 8 registers\n");
	ck_assert_msg(strstr(b.cr->command, "submission.cu -o ../step/"
					    "submission.so"),
		      "%s", b.cr->command);
	built_free(&b);
	/* Other code: built and kept beside. */
	fake.say = NULL;
	set_code(s, "extern \"C\" void custom_kernel() { /* v2 */ }\n");
	b = build(s, "90a");
	ck_assert_int_eq(b.st, KB_BUILD_OK);
	ck_assert_int_eq(fake.n, 1);
	built_free(&b);
	ck_assert_int_eq(count_entries(cache_user, "s-"), 2);
	/* Another architecture: another build. */
	b = build(s, "80");
	ck_assert_int_eq(b.st, KB_BUILD_OK);
	ck_assert_int_eq(fake.n, 4);
	built_free(&b);
	/* A build that fails is never kept: fixed, the same code builds. */
	set_code(s, "extern \"C\" void custom_kernel() { /* v3 */ }\n");
	fake.fail_on = "submission.cu";
	b = build(s, "90a");
	ck_assert_int_eq(b.st, KB_BUILD_FAILED);
	built_free(&b);
	fake.fail_on = NULL;
	b = build(s, "90a");
	ck_assert_int_eq(b.st, KB_BUILD_OK);
	ck_assert_int_eq(fake.n, 1);
	built_free(&b);
	ck_assert_int_eq(count_entries(cache_user, "s-"), 4);
	ck_assert_int_eq(count_entries(cache_user, ".tmp-"), 0);
	free(first);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

/* An entry without its MANIFEST (damage): built again and repaired. */
START_TEST(test_submission_cache_repair)
{
	Kb__Submission *s = cu_submission(KB__MODE__MODE_TEST);
	char entry[4500] = "", path[4600], *m;
	struct built b = build(s, "90a");
	DIR *d;
	struct dirent *e;

	ck_assert_int_eq(b.st, KB_BUILD_OK);
	built_free(&b);
	d = opendir(cache_user);
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		if (strncmp(e->d_name, "s-", 2) == 0)
			snprintf(entry, sizeof(entry), "%s/%s", cache_user,
				 e->d_name);
	closedir(d);
	ck_assert(entry[0]);
	snprintf(path, sizeof(path), "%s/MANIFEST", entry);
	ck_assert_int_eq(unlink(path), 0);
	b = build(s, "90a");
	ck_assert_int_eq(b.st, KB_BUILD_OK);
	ck_assert_int_eq(fake.n, 1);
	built_free(&b);
	m = slurp(entry, "MANIFEST");
	ck_assert_ptr_nonnull(m);
	ck_assert_str_eq(m, "kb-submission-cache-2\nsubmission.so\n");
	free(m);
	ck_assert_int_eq(count_entries(cache_user, ".tmp-"), 0);
	/* And used again. */
	b = build(s, "90a");
	ck_assert_int_eq(fake.n, 0);
	built_free(&b);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

/* Above the bound, the least recently used entries go. */
START_TEST(test_submission_cache_trim)
{
	char path[4500];

	ck_assert_int_eq(kb_jobdir_mkdirs(cache_user, 0700), 0);
	for (int i = 0; i < 5; i++) {
		struct timeval t[2] = {{1000 + i, 0}, {1000 + i, 0}};

		snprintf(path, sizeof(path), "%s/s-%c", cache_user, 'a' + i);
		ck_assert_int_eq(mkdir(path, 0700), 0);
		ck_assert_int_eq(utimes(path, t), 0);
	}
	snprintf(path, sizeof(path), "%s/other", cache_user);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	kb__user_cache_trim(cache_user, 2);
	ck_assert_int_eq(count_entries(cache_user, "s-"), 2);
	snprintf(path, sizeof(path), "%s/s-d", cache_user);
	ck_assert_int_eq(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "%s/s-e", cache_user);
	ck_assert_int_eq(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "%s/other", cache_user);
	ck_assert_int_eq(access(path, F_OK), 0);
}
END_TEST

/* ---- a whole evaluation on a GPU worker ------------------------------- */

static struct {
	int n;
	char argv[CMD_MAX][1024];
	char env[CMD_MAX][2048];
	char workdir[CMD_MAX][4200];
	int gpu[CMD_MAX], restrict_[CMD_MAX], index[CMD_MAX];
	char ro[CMD_MAX][8400];
	char rw[CMD_MAX][4200];
	char cwd[CMD_MAX][4200];
} seen;

static int fake_sandbox(const struct kb_sandbox_opts *o,
			struct kb_sandbox_result *r, char *err, size_t err_size)
{
	const int k = seen.n++;

	ck_assert_int_lt(k, CMD_MAX);
	join(seen.argv[k], sizeof(seen.argv[k]), o->argv);
	join(seen.env[k], sizeof(seen.env[k]), o->env);
	snprintf(seen.workdir[k], sizeof(seen.workdir[k]), "%s", o->workdir);
	seen.gpu[k] = o->gpu;
	seen.restrict_[k] = o->gpu_restrict;
	seen.index[k] = o->gpu_index;
	join(seen.ro[k], sizeof(seen.ro[k]), o->ro_paths);
	join(seen.rw[k], sizeof(seen.rw[k]), o->rw_paths);
	snprintf(seen.cwd[k], sizeof(seen.cwd[k]), "%s",
		 o->cwd ? o->cwd : o->workdir);
	memset(r, 0, sizeof(*r));
	if (!o->want_report) {
		play(o->argv, seen.cwd[k], r);
		return 0;
	}
	r->exited = 1;
	r->wall_s = 1;
	r->out = kb__xstrdup("");
	r->err = kb__xstrdup("");
	r->report = kb__xstrdup("system.device: NVIDIA H100 80GB HBM3\n"
				"system.cc: 9.0\n"
				"system.driver: 550.54.15 (CUDA 12.4)\n"
				"system.runtime: CUDA 12.4\n"
				"system.sm_clock_start: 1755\n"
				"system.temp_start: 35\n"
				"system.power_start: 120.5\n"
				"test-count: 1\n"
				"test.0.spec: size: 1; seed: 11\n"
				"test.0.status: pass\n"
				"system.sm_clock_end: 1980\n"
				"system.temp_end: 52\n"
				"system.power_end: 650\n"
				"check: pass\n");
	r->report_len = strlen(r->report);
	return 0;
}

START_TEST(test_gpu_eval)
{
	Kb__Submission *s = cu_submission(KB__MODE__MODE_TEST);
	struct kb_device_info dev = {.ok = 1,
				     .name = "NVIDIA H100 (probed)",
				     .cc_major = 9,
				     .cuda_driver = 12040,
				     .minor = 3};
	struct kb_eval_opts o = {
		.workdir = root,
		.worker = "gpu-worker",
		.gpu = "H100",
		.build_timeout_s = 60,
		.sandbox = fake_sandbox,
		.cuda_arch = "90a",
		.cuda_home = FAKE_HOME,
		.gpu_visible = "GPU-0b1c",
		.gpu_restrict = 1,
		.gpu_index = 3,
		.device = &dev,
	};
	Kb__Result *r;
	char *text;
	int k;

	memset(&seen, 0, sizeof(seen));
	r = kb_eval_run(&o, s);
	ck_assert_msg(r->verdict == KB__VERDICT__VERDICT_PASSED, "%s",
		      r->error);
	/* --version, the harness (3), the submission, the run. */
	ck_assert_int_eq(seen.n, 6);
	/* Builds: no GPU, the toolkit on PATH, HOME the job's, TMPDIR and the
	 * only writable place the fresh scratch; the task, the outputs and
	 * the toolkit (outside /usr) bound read-only. */
	for (k = 0; k < 5; k++) {
		char want[4300];

		ck_assert_int_eq(seen.gpu[k], 0);
		ck_assert_msg(strstr(seen.env[k],
				     "PATH=" FAKE_HOME
				     "/bin:/usr/local/bin:/usr/bin:/bin "),
			      "%s", seen.env[k]);
		snprintf(want, sizeof(want), "TMPDIR=%s ", seen.workdir[k]);
		ck_assert_msg(strstr(seen.env[k], want), "%s", seen.env[k]);
		ck_assert_msg(strstr(seen.workdir[k], "/step"), "%s",
			      seen.workdir[k]);
		ck_assert_msg(strstr(seen.env[k], "/home ") &&
				      strstr(seen.rw[k], "/home"),
			      "%s | %s", seen.env[k], seen.rw[k]);
		ck_assert_msg(!strstr(seen.env[k], "POPCORN_FD") &&
				      !strstr(seen.env[k], "CUDA_VISIBLE") &&
				      !strstr(seen.env[k], "KBH_SUBMISSION"),
			      "%s", seen.env[k]);
		ck_assert_msg(strstr(seen.ro[k], "/task ") &&
				      strstr(seen.ro[k], "/out ") &&
				      strstr(seen.ro[k], " " FAKE_HOME),
			      "%s", seen.ro[k]);
	}
	/* The harness's commands ran where the submission is not. */
	ck_assert_msg(strstr(seen.cwd[1], "/harness"), "%s", seen.cwd[1]);
	ck_assert_msg(strstr(seen.cwd[4], "/task"), "%s", seen.cwd[4]);
	/* The run: in its scratch, its GPU alone, found by UUID, the
	 * driver's libraries, the submission's object named. */
	k = 5;
	ck_assert_str_eq(seen.argv[k], "../out/eval.out test cases.txt");
	ck_assert_str_eq(seen.cwd[k], seen.workdir[k]);
	ck_assert_int_eq(seen.gpu[k], 1);
	ck_assert_int_eq(seen.restrict_[k], 1);
	ck_assert_int_eq(seen.index[k], 3);
	ck_assert_msg(strstr(seen.env[k], " LD_LIBRARY_PATH=" FAKE_HOME
					  "/lib64:" KB_EVAL_GPU_LD_PATH
					  " CUDA_VISIBLE_DEVICES=GPU-0b1c ") &&
			      strstr(seen.env[k], " POPCORN_FD=3 "),
		      "%s", seen.env[k]);
	ck_assert_msg(strstr(seen.env[k], "/out/submission.so "), "%s",
		      seen.env[k]);
	/* System info: the harness's readings win over the worker's. */
	ck_assert_str_eq(r->system->device_name, "NVIDIA H100 80GB HBM3");
	ck_assert_str_eq(r->system->driver, "550.54.15 (CUDA 12.4)");
	ck_assert_str_eq(r->system->runtime, "CUDA 12.4");
	ck_assert_int_eq(r->system->sm_clock_start_mhz, 1755);
	ck_assert_int_eq(r->system->sm_clock_end_mhz, 1980);
	ck_assert_int_eq(r->system->temp_start_c, 35);
	ck_assert_int_eq(r->system->temp_end_c, 52);
	ck_assert_int_eq(r->system->power_start_mw, 120500);
	ck_assert_int_eq(r->system->power_end_mw, 650000);
	text = kb_report_render(r);
	ck_assert_msg(strstr(text, "Running on NVIDIA H100 80GB HBM3 (driver "
				   "550.54.15 (CUDA 12.4), runtime CUDA "
				   "12.4, "),
		      "%s", text);
	ck_assert_msg(strstr(text, "Start → end: 1755 → 1980 MHz, "
				   "35 → 52 °C, 120.5 → 650.0 W\n"),
		      "%s", text);
	free(text);
	/* The job directory is gone, the cache stays. */
	ck_assert_int_eq(count_entries(root, "job-"), 0);
	ck_assert_int_eq(count_entries(cache, "h-"), 1);
	kb__result__free_unpacked(r, NULL);
	kb__submission__free_unpacked(s, NULL);
}
END_TEST

/* Without a report (an upstream harness that says nothing about the
 * system), the worker's own readings and the toolkit stay. */
START_TEST(test_sysinfo_fallback)
{
	Kb__SystemInfo si = KB__SYSTEM_INFO__INIT;
	struct kb_device_info dev = {.ok = 1,
				     .name = "NVIDIA A100-SXM4-80GB",
				     .cuda_driver = 12080,
				     .minor = -1};
	Kb__RunResult rr = KB__RUN_RESULT__INIT;
	Kb__RunResult *runs[] = {&rr};

	kb_sysinfo_start("A100", &dev, &si);
	ck_assert_str_eq(si.device_name, "NVIDIA A100-SXM4-80GB");
	ck_assert_msg(strstr(si.driver, "CUDA 12.8"), "%s", si.driver);
	kb_sysinfo_end("A100", &dev, &si);
	kb_sysinfo_apply_report(&si, runs, 1);
	ck_assert_str_eq(si.device_name, "NVIDIA A100-SXM4-80GB");
	kb__pb_set_str(&si.device_name, "");
	kb_sysinfo_start("L4", NULL, &si);
	ck_assert_str_eq(si.device_name, "L4");
	free(si.device_name);
	free(si.driver);
	free(si.runtime);
	free(si.platform);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("worker_cu");
	TCase *pure = tcase_create("pure");
	TCase *build_tc = tcase_create("build");

	tcase_add_test(pure, test_arch_for_cc);
	tcase_add_test(pure, test_arch_for_name);
	tcase_add_test(pure, test_arch_valid);
	tcase_add_test(pure, test_probe_reports_failure);
	tcase_add_test(pure, test_device_families);
	tcase_add_test(pure, test_device_nodes);
	tcase_add_test(pure, test_submission_file);
	tcase_add_test(pure, test_cache_key);
	tcase_add_test(pure, test_sysinfo_fallback);
	suite_add_tcase(s, pure);

	tcase_add_checked_fixture(build_tc, setup, teardown);
	tcase_add_test(build_tc, test_split_build_commands);
	tcase_add_test(build_tc, test_cache_reuse_and_invalidation);
	tcase_add_test(build_tc, test_cache_new_toolkit);
	tcase_add_test(build_tc, test_task_flags);
	tcase_add_test(build_tc, test_oneshot_upstream);
	tcase_add_test(build_tc, test_loader_misconfigured);
	tcase_add_test(build_tc, test_compile_error_is_users);
	tcase_add_test(build_tc, test_compile_error_truncated_from_the_end);
	tcase_add_test(build_tc, test_harness_failure_is_infra);
	tcase_add_test(build_tc, test_fill_is_atomic);
	tcase_add_test(build_tc, test_fill_repairs_and_cleans);
	tcase_add_test(build_tc, test_submission_cache);
	tcase_add_test(build_tc, test_submission_cache_per_user);
	tcase_add_test(build_tc, test_submission_cache_repair);
	tcase_add_test(build_tc, test_submission_cache_trim);
	tcase_add_test(build_tc, test_gpu_eval);
	suite_add_tcase(s, build_tc);
	return s;
}

int main(void)
{
	kb_log_init("worker-cu-test", KB_LOG_ERROR, 0);
	if (kb_util_init() < 0)
		return EXIT_FAILURE;
	return kb_check_run(suite());
}
