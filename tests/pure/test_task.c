/* kb_task: task.yml parsing (good and bad fixtures), task directories,
 * competition files and KB_PROBLEMS problem sets. Fixtures are in
 * data/ (KB_PURE_DATA). */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kb_task.h"
#include "kb_util.h"
#include "kb_check_main.h"

/* Substring checks that print both strings when they fail. */
#define ck_assert_contains(hay, needle)                                        \
	ck_assert_msg(strstr((hay), (needle)) != NULL,                         \
		      "'%s' does not contain '%s'", (hay), (needle))
#define ck_assert_not_contains(hay, needle)                                    \
	ck_assert_msg(strstr((hay), (needle)) == NULL, "'%s' contains '%s'",   \
		      (hay), (needle))

#define DATA KB_PURE_DATA

static const char *cfg(const struct kb_task *t, const char *k)
{
	const char *v = kb_task_config(t, k);

	ck_assert_msg(v != NULL, "config key '%s' missing", k);
	return v;
}

START_TEST(py_fixture)
{
	struct kb_task t;
	char err[512] = "";

	ck_assert_int_eq(kb_task_load_dir(DATA "/tasks/vectoradd_py", NULL, &t,
					  err, sizeof(err)),
			 0);
	ck_assert_str_eq(err, "");
	ck_assert_str_eq(t.name, "vectoradd_py");
	ck_assert_str_eq(t.dir, DATA "/tasks/vectoradd_py");
	ck_assert_str_eq(t.lang, "py");
	ck_assert_uint_eq(t.nfiles, 5);
	ck_assert_str_eq(t.files[0].name, "submission.py");
	ck_assert_str_eq(t.files[0].source, "@SUBMISSION@");
	ck_assert_str_eq(t.files[2].name, "utils.py");
	ck_assert_str_eq(t.files[2].source, "../utils.py");
	ck_assert_str_eq(t.files[4].name, "eval.py");
	ck_assert_uint_eq(t.nconfig, 1);
	ck_assert_str_eq(cfg(&t, "main"), "eval.py");
	ck_assert_ptr_null(kb_task_config(&t, "sources"));
	ck_assert_uint_eq(t.ntemplates, 1);
	ck_assert_str_eq(t.templates[0].key, "Python");
	ck_assert_str_eq(t.templates[0].value, "../template.py");
	ck_assert_uint_eq(t.ntests, 3);
	ck_assert_str_eq(t.tests[0], "size: 127; seed: 4242");
	ck_assert_str_eq(t.tests[2], "size: 129; seed: 1001");
	ck_assert_uint_eq(t.nbenchmarks, 2);
	ck_assert_str_eq(t.benchmarks[1], "size: 16384; seed: 54352");
	ck_assert_uint_eq(t.test_timeout, 120);
	ck_assert_uint_eq(t.benchmark_timeout, 150);
	ck_assert_uint_eq(t.ranked_timeout, 300);
	ck_assert_str_eq(t.ranking_by, "geom");
	ck_assert_int_eq(t.has_seed, 0);
	ck_assert_int_eq(t.multi_gpu, 0);
	ck_assert_uint_eq(t.ngpus, 2);
	ck_assert_int_eq(kb_task_has_gpu(&t, "H100"), 1);
	ck_assert_int_eq(kb_task_has_gpu(&t, "A100"), 1);
	ck_assert_int_eq(kb_task_has_gpu(&t, "h100"), 0);
	ck_assert_int_eq(kb_task_has_gpu(&t, "L4"), 0);
	ck_assert_str_eq(t.description,
			 "Implement a float16 vector addition kernel.\n\n"
			 "Input: tuple(torch.Tensor, torch.Tensor) of shape "
			 "(N, N).\n");
	ck_assert_ptr_null(t.deadline);
	kb_task_clear(&t);
	ck_assert_ptr_null(t.name);
	ck_assert_uint_eq(t.nfiles, 0);
	kb_task_clear(&t); /* twice is fine */
	kb_task_clear(NULL);
}
END_TEST

START_TEST(cu_fixture)
{
	struct kb_task t;
	char err[512] = "";

	ck_assert_int_eq(kb_task_load_dir(DATA "/tasks/identity_cu/",
					  "identity-cuda", &t, err,
					  sizeof(err)),
			 0);
	ck_assert_str_eq(t.name, "identity-cuda");
	ck_assert_str_eq(t.lang, "cu");
	ck_assert_uint_eq(t.nfiles, 5);
	ck_assert_str_eq(t.files[4].source, "@SUBMISSION@");
	/* Lists joined by '\n', maps as K=V lines, an empty list as "". */
	ck_assert_str_eq(cfg(&t, "sources"), "eval.cu\nsubmission.cu");
	ck_assert_str_eq(cfg(&t, "include_dirs"), "");
	ck_assert_str_eq(cfg(&t, "defines"), "BLOCK=256\nUSE_FAST=True");
	ck_assert_str_eq(cfg(&t, "compile_flags"), "-O3\n--use_fast_math");
	ck_assert_str_eq(t.config[0].key, "sources"); /* file order */
	ck_assert_uint_eq(t.nconfig, 4);
	ck_assert_str_eq(t.description, "Identity kernel in CUDA.");
	ck_assert_uint_eq(t.ntests, 2);
	ck_assert_str_eq(t.tests[0], "size: 128; seed: 5236");
	/* Map order kept; plain booleans print as Python's. */
	ck_assert_str_eq(t.tests[1],
			 "size: 129; seed: 1001; dtype: float16; causal: True");
	ck_assert_uint_eq(t.nbenchmarks, 2);
	ck_assert_str_eq(t.benchmarks[0], "size: 1024; seed: 54352");
	/* Defaults. */
	ck_assert_uint_eq(t.test_timeout, 180);
	ck_assert_uint_eq(t.benchmark_timeout, 180);
	ck_assert_uint_eq(t.ranked_timeout, 180);
	ck_assert_str_eq(t.ranking_by, "last");
	ck_assert_int_eq(t.has_seed, 1);
	ck_assert_uint_eq(t.seed, UINT64_MAX);
	ck_assert_int_eq(t.multi_gpu, 0);
	ck_assert_uint_eq(t.ngpus, 0);
	ck_assert_int_eq(kb_task_has_gpu(&t, "H100"), 0);
	kb_task_clear(&t);
}
END_TEST

START_TEST(minimal_and_nulls)
{
	/* Nulls for optional keys are their defaults (as upstream); a
	 * top-level libraries list becomes config "libraries". */
	static const char y[] = "files:\n"
				"  - name: main.c\n"
				"    source: \"@SUBMISSION@\"\n"
				"lang: c\n"
				"config: {sources: main.c}\n"
				"libraries: [m, pthread]\n"
				"description:\n"
				"seed: ~\n"
				"tests:\n"
				"gpus: null\n"
				"multi_gpu: yes\n"
				"ranking_by: mean\n"
				"IGNORED AFTER LEN";
	struct kb_task t;
	char err[512] = "";

	ck_assert_int_eq(kb_task_parse(y,
				       strlen(y) - strlen("IGNORED AFTER LEN"),
				       &t, err, sizeof(err)),
			 0);
	ck_assert_str_eq(err, "");
	ck_assert_ptr_null(t.name); /* set by kb_task_load_dir only */
	ck_assert_str_eq(t.lang, "c");
	ck_assert_str_eq(cfg(&t, "sources"), "main.c");
	ck_assert_str_eq(cfg(&t, "libraries"), "m\npthread");
	ck_assert_str_eq(t.description, "");
	ck_assert_int_eq(t.has_seed, 0);
	ck_assert_uint_eq(t.ntests, 0);
	ck_assert_uint_eq(t.ngpus, 0);
	ck_assert_int_eq(t.multi_gpu, 1); /* no cases to need world_size */
	ck_assert_str_eq(t.ranking_by, "mean");
	kb_task_clear(&t);
}
END_TEST

START_TEST(multi_gpu_with_world_size)
{
	static const char y[] =
		"files: [{name: s.py, source: \"@SUBMISSION@\"}]\n"
		"lang: py\n"
		"config: {main: eval.py}\n"
		"multi_gpu: True\n"
		"tests: [{world_size: 2, seed: 1}]\n"
		"benchmarks: [{seed: 3, world_size: 8}]\n";
	struct kb_task t;
	char err[512] = "";

	ck_assert_int_eq(kb_task_parse(y, strlen(y), &t, err, sizeof(err)), 0);
	ck_assert_int_eq(t.multi_gpu, 1);
	ck_assert_str_eq(t.benchmarks[0], "seed: 3; world_size: 8");
	kb_task_clear(&t);
}
END_TEST

/* Lists in cases, as upstream's nvfp4 problems give group sizes: the
 * line has Python's str() of the list, which their eval.py reads. */
START_TEST(list_case_values)
{
	static const char y[] =
		"files: [{name: s.py, source: \"@SUBMISSION@\"}]\n"
		"lang: py\n"
		"config: {main: eval.py}\n"
		"tests:\n"
		"  - {\"m\": [96, 128], \"k\": [2.5, -1e3], \"g\": 2, "
		"\"seed\": 1111}\n"
		"  - {names: [a, \"b c\"], flags: [true, no], e: []}\n";
	struct kb_task t;
	char err[512] = "";

	ck_assert_int_eq(kb_task_parse(y, strlen(y), &t, err, sizeof(err)), 0);
	ck_assert_str_eq(t.tests[0],
			 "m: [96, 128]; k: [2.5, -1e3]; g: 2; seed: 1111");
	ck_assert_str_eq(t.tests[1],
			 "names: ['a', 'b c']; flags: [True, False]; e: []");
	kb_task_clear(&t);
}
END_TEST

struct bad {
	const char *file;
	const char *needle;
};

static const struct bad bad_tasks[] = {
	{"unknown_key", "line 7: unknown key 'ranking'"},
	{"neg_timeout", "line 7: test_timeout must not be negative (-5)"},
	{"zero_timeout",
	 "line 7: benchmark_timeout must be between 1 and 86400, not 0"},
	{"big_timeout",
	 "line 7: ranked_timeout must be between 1 and 86400, not 86401"},
	{"quoted_timeout", "line 7: test_timeout must be an integer, not a "
			   "scalar (quoted)"},
	{"bad_ranking",
	 "line 7: ranking_by 'median' is not last, mean or geom"},
	{"wrong_type_tests", "line 7: tests must be a list, not a scalar"},
	{"nested_case",
	 "line 8: a list in a case may hold scalars only, not a list"},
	{"case_list_quote", "line 8: a string in a case's list must not hold "
			    "a quote"},
	{"case_semicolon", "line 9: bad tests case: case part 'b' has no ':'"},
	{"case_bad_key",
	 "line 8: bad tests case: case key 'the size' is not [A-Za-z0-9_]+"},
	{"case_bad_seed",
	 "line 8: case seed '-1' is not an unsigned 64-bit integer"},
	{"case_empty", "line 8: a tests case is empty"},
	{"bad_seed", "line 7: seed must be a decimal integer, not 'abc'"},
	{"bad_multi_gpu", "line 7: multi_gpu must be true or false"},
	{"multi_gpu_no_world",
	 "multi_gpu case 'seed: 2' does not specify world_size"},
	{"validation", "line 7: validation (application validation) is not "
		       "supported"},
	{"dup_key", "line 7: key 'lang' given twice in task.yml"},
	{"dup_config_key", "line 6: key 'main' given twice in config"},
	{"no_lang", "lang is missing"},
	{"no_files", "files is missing"},
	{"no_config", "config is missing"},
	{"null_lang", "lang must not be empty"},
	{"bad_lang", "line 3: lang 'rust' is not c, cu, hip or py"},
	{"no_main", "config.main is missing"},
	{"no_sources", "config.sources is missing"},
	{"py_sources", "line 6: unknown config key 'sources' for lang py"},
	{"config_deep", "line 7: config.defines must be a string, not a list"},
	{"two_submissions",
	 "files must have exactly one @SUBMISSION@ entry, not 2"},
	{"no_submission", "files must have exactly one @SUBMISSION@ entry, "
			  "not 0"},
	{"dup_file", "line 3: file 'a.py' listed twice"},
	{"bad_file_name",
	 "line 3: file name '../x.py' must be a plain file name"},
	{"abs_source",
	 "line 3: file source '/etc/passwd' must be a relative path"},
	{"file_extra_key", "line 2: unknown key 'mode' in a files entry"},
	{"libraries_twice", "line 4: config key 'libraries' given twice"},
	{"bad_gpu", "line 7: gpu name must be [A-Za-z0-9_.-]+"},
	{"syntax", "flow mapping"},
	{"two_docs", "line 8: a second YAML document"},
	{"root_list", "line 1: task.yml must be a map, not a list"},
	{"empty", "the YAML is empty"},
	{"comment_only", "the YAML is empty"},
};

START_TEST(bad_task_yml)
{
	const struct bad *b = &bad_tasks[_i];
	char path[PATH_MAX], err[512] = "", *text;
	struct kb_task t;
	size_t len;

	snprintf(path, sizeof(path), DATA "/bad/%s.yml", b->file);
	ck_assert_int_eq(kb_read_file(path, 1 << 20, &text, &len), 0);
	ck_assert_int_eq(kb_task_parse(text, len, &t, err, sizeof(err)),
			 -EINVAL);
	ck_assert_msg(strstr(err, b->needle), "%s: want '%s' in '%s'", b->file,
		      b->needle, err);
	/* Nothing is left behind on error. */
	ck_assert_ptr_null(t.lang);
	ck_assert_ptr_null(t.files);
	ck_assert_uint_eq(t.nconfig, 0);
	free(text);
}
END_TEST

START_TEST(syntax_error_has_line)
{
	char err[512] = "", *text;
	struct kb_task t;
	size_t len;

	ck_assert_int_eq(
		kb_read_file(DATA "/bad/syntax.yml", 1 << 20, &text, &len), 0);
	ck_assert_int_eq(kb_task_parse(text, len, &t, err, sizeof(err)),
			 -EINVAL);
	/* The flow map opens on line 8 and is never closed. */
	ck_assert_msg(strncmp(err, "line 8:", 7) == 0 ||
			      strncmp(err, "line 9:", 7) == 0,
		      "got '%s'", err);
	free(text);
}
END_TEST

START_TEST(nul_in_yaml)
{
	static const char y[] = "lang: py\0\n";
	struct kb_task t;
	char err[512] = "";

	ck_assert_int_eq(kb_task_parse(y, sizeof(y) - 1, &t, err, sizeof(err)),
			 -EINVAL);
	ck_assert_str_eq(err, "task.yml holds a NUL byte");
}
END_TEST

START_TEST(load_dir_errors)
{
	struct kb_task t;
	char err[512] = "";

	ck_assert_int_eq(kb_task_load_dir(DATA "/no_such_dir", NULL, &t, err,
					  sizeof(err)),
			 -ENOENT);
	ck_assert_contains(err, "no_such_dir/task.yml");

	/* A parse error names the file. */
	ck_assert_int_eq(kb_task_load_dir(DATA "/badtask", NULL, &t, err,
					  sizeof(err)),
			 -EINVAL);
	ck_assert_str_eq(err, DATA "/badtask/task.yml: line 6: unknown key "
				   "'ranking'");

	/* Every non-submission source must exist. */
	ck_assert_int_eq(kb_task_load_dir(DATA "/missingsrc", NULL, &t, err,
					  sizeof(err)),
			 -ENOENT);
	ck_assert_contains(err, "source 'eval.py' is not a file");
	ck_assert_ptr_null(t.lang);

	/* Leaderboard names end up in URLs and Redis keys. */
	ck_assert_int_eq(kb_task_load_dir(DATA "/tasks/identity_cu", "a:b", &t,
					  err, sizeof(err)),
			 -EINVAL);
	ck_assert_contains(err, "leaderboard name 'a:b'");
	ck_assert_int_eq(kb_task_load_dir(DATA "/tasks/identity_cu", "", &t,
					  err, sizeof(err)),
			 -EINVAL);
}
END_TEST

static void names_are(const struct kb_problemset *ps, const char *const *want,
		      size_t n)
{
	ck_assert_uint_eq(ps->n, n);
	for (size_t i = 0; i < n; i++)
		ck_assert_str_eq(ps->tasks[i].name, want[i]);
}

START_TEST(set_of_task_dirs)
{
	static const char *const want[] = {"identity_cu", "vectoradd_py"};
	struct kb_problemset ps;
	char err[512] = "";

	/* data/tasks has no task.yml: its subdirectories with one are the
	 * problems; notes/ (no task.yml) and loose files are skipped. */
	ck_assert_int_eq(
		kb_problemset_load(DATA "/tasks", &ps, err, sizeof(err)), 0);
	names_are(&ps, want, 2);
	ck_assert_ptr_eq(kb_problemset_find(&ps, "vectoradd_py"), &ps.tasks[1]);
	ck_assert_ptr_eq(kb_problemset_find(&ps, "identity_cu"), &ps.tasks[0]);
	ck_assert_ptr_null(kb_problemset_find(&ps, "identity"));
	ck_assert_ptr_null(kb_problemset_find(&ps, NULL));
	ck_assert_ptr_null(ps.tasks[0].deadline);
	kb_problemset_clear(&ps);
	ck_assert_uint_eq(ps.n, 0);
	ck_assert_ptr_null(ps.tasks);
	kb_problemset_clear(NULL);
}
END_TEST

START_TEST(set_of_competition)
{
	static const char *const want[] = {"identity_cu", "pmpp-vectoradd"};
	struct kb_problemset ps;
	const struct kb_task *t;
	char err[512] = "";

	ck_assert_int_eq(kb_problemset_load(DATA "/comps/pmpp.yaml", &ps, err,
					    sizeof(err)),
			 0);
	names_are(&ps, want, 2);
	t = kb_problemset_find(&ps, "pmpp-vectoradd");
	ck_assert_ptr_nonnull(t);
	ck_assert_str_eq(t->deadline, "2025-12-30");
	/* The competition's gpus replace the task's (H100, A100). */
	ck_assert_uint_eq(t->ngpus, 2);
	ck_assert_str_eq(t->gpus[0], "H100");
	ck_assert_str_eq(t->gpus[1], "L4");
	ck_assert_int_eq(kb_task_has_gpu(t, "A100"), 0);
	ck_assert_str_eq(t->lang, "py");
	/* No name: the directory's basename; no deadline: the
	 * competition's. */
	t = kb_problemset_find(&ps, "identity_cu");
	ck_assert_ptr_nonnull(t);
	ck_assert_str_eq(t->deadline, "2026-06-30");
	ck_assert_uint_eq(t->ngpus, 0);
	ck_assert_str_eq(t->dir, DATA "/comps/../tasks/identity_cu");
	kb_problemset_clear(&ps);
}
END_TEST

START_TEST(set_of_many_entries)
{
	static const char *const want[] = {"identity-v2", "identity_cu",
					   "pmpp-vectoradd", "vectorsum"};
	struct kb_problemset ps;
	const struct kb_task *t;
	char dir[] = "/tmp/kb-pure-XXXXXX", link[64], spec[1024];
	char err[512] = "";

	/* A symlink gives the py task a second basename, so that a plain
	 * task directory entry can sit next to the competitions. */
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(link, sizeof(link), "%s/vectorsum", dir);
	ck_assert_int_eq(symlink(DATA "/tasks/vectoradd_py", link), 0);
	/* Empty entries (leading, doubled, trailing colons) are skipped. */
	snprintf(spec, sizeof(spec),
		 "::" DATA "/comps/list.yaml:%s::" DATA "/comps/pmpp.yaml:",
		 link);
	ck_assert_int_eq(kb_problemset_load(spec, &ps, err, sizeof(err)), 0);
	names_are(&ps, want, 4);
	t = kb_problemset_find(&ps, "identity-v2");
	ck_assert_ptr_nonnull(t);
	ck_assert_str_eq(t->deadline, "2025-01-01T12:00:00Z");
	ck_assert_uint_eq(t->ngpus, 1);
	ck_assert_str_eq(t->gpus[0], "H100");
	t = kb_problemset_find(&ps, "vectorsum");
	ck_assert_ptr_nonnull(t);
	ck_assert_str_eq(t->dir, link);
	ck_assert_ptr_null(t->deadline);
	ck_assert_uint_eq(t->ngpus, 2); /* the task's own */
	kb_problemset_clear(&ps);
	unlink(link);
	rmdir(dir);
}
END_TEST

START_TEST(scan_skips_hidden)
{
	static const char *const want[] = {"cur"};
	char dir[] = "/tmp/kb-pure-XXXXXX", a[64], b[64];
	struct kb_problemset ps;
	char err[512] = "";

	/* An editor's or a deploy tool's hidden copy is not a problem. */
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(a, sizeof(a), "%s/.old", dir);
	snprintf(b, sizeof(b), "%s/cur", dir);
	ck_assert_int_eq(symlink(DATA "/tasks/vectoradd_py", a), 0);
	ck_assert_int_eq(symlink(DATA "/tasks/identity_cu", b), 0);
	ck_assert_int_eq(kb_problemset_load(dir, &ps, err, sizeof(err)), 0);
	names_are(&ps, want, 1);
	kb_problemset_clear(&ps);
	unlink(a);
	unlink(b);
	rmdir(dir);
}
END_TEST

START_TEST(set_duplicates)
{
	struct kb_problemset ps;
	char err[512] = "";

	ck_assert_int_eq(kb_problemset_load(DATA "/tasks:" DATA
						 "/tasks/identity_cu",
					    &ps, err, sizeof(err)),
			 -EINVAL);
	ck_assert_contains(err, "duplicate leaderboard name 'identity_cu'");
	ck_assert_uint_eq(ps.n, 0);
	ck_assert_int_eq(kb_problemset_load(DATA "/comps/dup.yaml", &ps, err,
					    sizeof(err)),
			 -EINVAL);
	ck_assert_contains(err, "duplicate leaderboard name 'same'");
}
END_TEST

static const struct bad bad_sets[] = {
	{"/comps/bad_key.yaml", "comps/bad_key.yaml: line 2: unknown key "
				"'gpu' in a competition entry"},
	{"/comps/bad_deadline.yaml",
	 "line 2: deadline 'next week' is not an ISO 8601 date"},
	{"/comps/missing_dir.yaml",
	 "comps/missing_dir.yaml: line 2: " DATA
	 "/comps/../tasks/no_such_problem/task.yml: No such file"},
	{"/comps/bad_task.yaml",
	 "comps/bad_task.yaml: line 2: " DATA
	 "/comps/../badtask/task.yml: line 6: unknown key 'ranking'"},
	{"/comps/missing_src.yaml", "source 'eval.py' is not a file"},
	{"/comps/bad_name.yaml",
	 "line 2: leaderboard name 'has:colon' must be"},
	{"/comps/no_directory.yaml",
	 "line 1: a competition entry needs a directory"},
	{"/comps/no_problems.yaml", "the competition has no problems list"},
	{"/comps/bad_top.yaml", "line 2: unknown key 'problem' in a "
				"competition"},
	{"/notasks", "notasks: no task.yml, and no subdirectory holding one"},
	{"/nothing_here", "KB_PROBLEMS entry " DATA "/nothing_here: No such"},
	/* A task.yml is not a competition. */
	{"/bad/unknown_key.yml",
	 "line 1: unknown key 'files' in a competition"},
	{"/bad/root_list.yml", "line 1: a competition entry must be a map"},
};

START_TEST(bad_set)
{
	const struct bad *b = &bad_sets[_i];
	struct kb_problemset ps;
	char spec[PATH_MAX], err[1024] = "";

	snprintf(spec, sizeof(spec), DATA "%s", b->file);
	ck_assert_int_lt(kb_problemset_load(spec, &ps, err, sizeof(err)), 0);
	ck_assert_msg(strstr(err, b->needle), "%s: want '%s' in '%s'", b->file,
		      b->needle, err);
	ck_assert_uint_eq(ps.n, 0);
	ck_assert_ptr_null(ps.tasks);
}
END_TEST

START_TEST(empty_spec)
{
	struct kb_problemset ps;
	char err[512] = "";

	ck_assert_int_eq(kb_problemset_load("", &ps, err, sizeof(err)),
			 -EINVAL);
	ck_assert_contains(err, "is empty");
	ck_assert_int_eq(kb_problemset_load(":::", &ps, err, sizeof(err)),
			 -EINVAL);
	ck_assert_int_eq(kb_problemset_load(NULL, &ps, err, sizeof(err)),
			 -EINVAL);
}
END_TEST

/* Deadlines, through a one-entry competition file in a temp dir. */
static int load_with_deadline(const char *deadline, char *err, size_t n,
			      char *got, size_t gotn)
{
	char dir[] = "/tmp/kb-pure-XXXXXX", path[128], text[512];
	struct kb_problemset ps;
	int rc;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/c.yaml", dir);
	snprintf(text, sizeof(text),
		 "- directory: " DATA "/tasks/identity_cu\n"
		 "  deadline: %s\n",
		 deadline);
	ck_assert_int_eq(kb_write_file(path, text, strlen(text), 0600), 0);
	rc = kb_problemset_load(path, &ps, err, n);
	if (rc == 0) {
		snprintf(got, gotn, "%s",
			 ps.tasks[0].deadline ? ps.tasks[0].deadline
					      : "(none)");
		kb_problemset_clear(&ps);
	}
	unlink(path);
	rmdir(dir);
	return rc;
}

START_TEST(deadlines)
{
	static const char *const good[] = {
		"2025-12-30", "\"2025-12-30T23:59\"", "2025-12-30T23:59:59Z",
		"2025-12-30 08:00:00.123+02:00", "2025-01-01T00:00:00-0500",
		/* upstream's nvidia.yaml: a one-digit hour */
		"\"2025-11-29 6:59\""};
	static const char *const good_out[] = {"2025-12-30",
					       "2025-12-30T23:59",
					       "2025-12-30T23:59:59Z",
					       "2025-12-30 08:00:00.123+02:00",
					       "2025-01-01T00:00:00-0500",
					       "2025-11-29 6:59"};
	static const char *const bad[] = {"2025-13-01",
					  "2025-12-32",
					  "25-12-30",
					  "2025-12-30T24:00",
					  "2025-12-30T12:60",
					  "2025-12-30X",
					  "2025-12-30T12:00Zulu",
					  "tomorrow",
					  "2025-12-30T12:00+2"};
	char err[512], got[128];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ck_assert_msg(load_with_deadline(good[i], err, sizeof(err), got,
						 sizeof(got)) == 0,
			      "%s: %s", good[i], err);
		ck_assert_str_eq(got, good_out[i]);
	}
	ck_assert_int_eq(load_with_deadline("\"\"", err, sizeof(err), got,
					    sizeof(got)),
			 0);
	ck_assert_str_eq(got, "(none)");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(load_with_deadline(bad[i], err, sizeof(err), got,
						 sizeof(got)) == -EINVAL,
			      "%s accepted", bad[i]);
		ck_assert_contains(err, "is not an ISO 8601 date");
	}
}
END_TEST

/* Issue 30, attack 4: aliases that expand a small task.yml far beyond its
 * size, an alias of its own enclosing node, and nesting without end are
 * refused before anything is built from them. */
/* A tree for the include tests: root/h/m.yml (the manifest, its sources
 * relative to h/), root/h/a.c, root/h/sub/b.c, root/p/task.yml with the
 * given files list. */
static void include_tree(char *root, const char *files, const char *manifest)
{
	static const char *const dirs[] = {"h", "h/sub", "p"};
	char path[256], text[1024];

	ck_assert_ptr_nonnull(mkdtemp(root));
	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", root, dirs[i]);
		ck_assert_int_eq(mkdir(path, 0700), 0);
	}
	snprintf(path, sizeof(path), "%s/h/a.c", root);
	ck_assert_int_eq(kb_write_file(path, "a", 1, 0600), 0);
	snprintf(path, sizeof(path), "%s/h/sub/b.c", root);
	ck_assert_int_eq(kb_write_file(path, "b", 1, 0600), 0);
	snprintf(path, sizeof(path), "%s/p/own.c", root);
	ck_assert_int_eq(kb_write_file(path, "o", 1, 0600), 0);
	snprintf(path, sizeof(path), "%s/h/m.yml", root);
	ck_assert_int_eq(kb_write_file(path, manifest, strlen(manifest), 0600),
			 0);
	snprintf(path, sizeof(path), "%s/p/task.yml", root);
	snprintf(text, sizeof(text),
		 "files:\n%slang: c\nconfig: {sources: [own.c]}\n", files);
	ck_assert_int_eq(kb_write_file(path, text, strlen(text), 0600), 0);
}

static void include_tree_rm(const char *root)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	ck_assert_int_eq(system(cmd), 0);
}

static const char kManifest[] = "# a harness\n"
				"files:\n"
				"  - {name: a.c, source: a.c}\n"
				"  - {name: b.c, source: sub/b.c}\n";

START_TEST(include_expands)
{
	char root[] = "/tmp/kb-inc-XXXXXX", dir[64], err[512] = "";
	struct kb_task t;

	include_tree(root,
		     "  - {name: own.c, source: own.c}\n"
		     "  - {include: ../h/m.yml}\n"
		     "  - {name: s.c, source: \"@SUBMISSION@\"}\n",
		     kManifest);
	snprintf(dir, sizeof(dir), "%s/p", root);
	/* parse alone keeps the include */
	ck_assert_int_eq(kb_task_load_dir(dir, "p", &t, err, sizeof(err)), 0);
	ck_assert_uint_eq(t.nfiles, 4);
	ck_assert_str_eq(t.files[0].name, "own.c");
	ck_assert_str_eq(t.files[1].name, "a.c");
	ck_assert_str_eq(t.files[1].source, "../h/a.c");
	ck_assert_str_eq(t.files[2].name, "b.c");
	ck_assert_str_eq(t.files[2].source, "../h/sub/b.c");
	ck_assert_str_eq(t.files[3].source, "@SUBMISSION@");
	for (size_t i = 0; i < t.nfiles; i++)
		ck_assert_int_eq(t.files[i].include, 0);
	kb_task_clear(&t);
	/* confined to root, the same */
	ck_assert_int_eq(
		kb_task_load_confined(root, "p", "p", &t, err, sizeof(err)), 0);
	ck_assert_uint_eq(t.nfiles, 4);
	ck_assert_str_eq(t.files[2].source, "../h/sub/b.c");
	kb_task_clear(&t);
	/* confined to p, the manifest is outside: refused */
	ck_assert_int_lt(
		kb_task_load_confined(dir, "", "p", &t, err, sizeof(err)), 0);
	ck_assert_ptr_nonnull(strstr(err, "m.yml"));
	include_tree_rm(root);
}
END_TEST

START_TEST(include_parse_keeps_entry)
{
	static const char y[] = "files:\n"
				"  - {include: ../h/m.yml}\n"
				"  - {name: s.c, source: \"@SUBMISSION@\"}\n"
				"lang: c\nconfig: {sources: [s.c]}\n";
	char err[512] = "";
	struct kb_task t;

	ck_assert_int_eq(kb_task_parse(y, strlen(y), &t, err, sizeof(err)), 0);
	ck_assert_uint_eq(t.nfiles, 2);
	ck_assert_int_eq(t.files[0].include, 1);
	ck_assert_ptr_null(t.files[0].name);
	ck_assert_str_eq(t.files[0].source, "../h/m.yml");
	kb_task_clear(&t);
}
END_TEST

/* What a task or a manifest may not do with includes. */
START_TEST(include_errors)
{
	static const struct {
		const char *files, *manifest, *want;
	} cases[] = {
		{"  - {include: ../h/m.yml, name: x}\n", kManifest,
		 "has no name or source"},
		{"  - {include: /etc/m.yml}\n", kManifest,
		 "must be a relative path"},
		{"  - {include: ../h/none.yml}\n", kManifest, "none.yml"},
		{"  - {include: ../h/m.yml}\n  - {name: a.c, source: own.c}\n",
		 kManifest, "listed twice"},
		{"  - {include: ../h/m.yml}\n",
		 "files:\n  - {include: other.yml}\n", "unknown key 'include'"},
		{"  - {include: ../h/m.yml}\n",
		 "files:\n  - {name: s.c, source: \"@SUBMISSION@\"}\n",
		 "lists no @SUBMISSION@"},
		{"  - {include: ../h/m.yml}\n",
		 "files:\n  - {name: a.c, "
		 "source: /etc/passwd}\n",
		 "must be a relative path"},
		{"  - {include: ../h/m.yml}\n", "sources: []\n",
		 "unknown key 'sources'"},
		{"  - {include: ../h/m.yml}\n", "- a\n", "must be a map"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char root[] = "/tmp/kb-inc-XXXXXX", dir[64], files[256];
		char err[512] = "";
		struct kb_task t;

		snprintf(files, sizeof(files),
			 "%s  - {name: s.c, source: \"@SUBMISSION@\"}\n",
			 cases[i].files);
		include_tree(root, files, cases[i].manifest);
		snprintf(dir, sizeof(dir), "%s/p", root);
		ck_assert_msg(kb_task_load_dir(dir, "p", &t, err, sizeof(err)) <
				      0,
			      "case %zu loaded", i);
		ck_assert_msg(strstr(err, cases[i].want) != NULL,
			      "case %zu: '%s' does not say '%s'", i, err,
			      cases[i].want);
		include_tree_rm(root);
	}
}
END_TEST

START_TEST(yaml_alias_budget)
{
	struct kb_buf b = {0};
	struct kb_task t;
	char err[512] = "";

	kb_buf_printf(&b, "files: [{name: s.c, source: \"@SUBMISSION@\"}]\n"
			  "lang: c\nconfig:\n  flags: &a \"");
	for (int i = 0; i < 4096; i++)
		kb_buf_append(&b, "x", 1);
	kb_buf_printf(&b, "\"\n  sources: [s.c");
	for (int i = 0; i < 4000; i++)
		kb_buf_append(&b, ", *a", 4);
	kb_buf_printf(&b, "]\n");
	ck_assert_int_eq(kb_task_parse(b.data, b.len, &t, err, sizeof(err)),
			 -EINVAL);
	ck_assert_contains(err, "too large with its aliases expanded");
	kb_buf_free(&b);

	static const char cycle[] = "files: &f [*f]\nlang: c\n";
	ck_assert_int_eq(kb_task_parse(cycle, strlen(cycle), &t, err,
				       sizeof(err)),
			 -EINVAL);
	ck_assert_contains(err, "refers to a node that holds it");

	for (int i = 0; i < 100; i++)
		kb_buf_append(&b, "[", 1);
	for (int i = 0; i < 100; i++)
		kb_buf_append(&b, "]", 1);
	ck_assert_int_eq(kb_task_parse(b.data, b.len, &t, err, sizeof(err)),
			 -EINVAL);
	ck_assert_contains(err, "nested more than");
	kb_buf_free(&b);

	/* A few honest aliases are fine. */
	static const char ok[] =
		"files: [{name: s.c, source: \"@SUBMISSION@\"}]\n"
		"lang: c\nconfig:\n  sources: &s [s.c]\n  flags: *s\n";
	ck_assert_int_eq(kb_task_parse(ok, strlen(ok), &t, err, sizeof(err)),
			 0);
	kb_task_clear(&t);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("task");
	TCase *tc = tcase_create("task");

	tcase_add_test(tc, py_fixture);
	tcase_add_test(tc, cu_fixture);
	tcase_add_test(tc, minimal_and_nulls);
	tcase_add_test(tc, multi_gpu_with_world_size);
	tcase_add_test(tc, list_case_values);
	tcase_add_loop_test(tc, bad_task_yml, 0,
			    sizeof(bad_tasks) / sizeof(bad_tasks[0]));
	tcase_add_test(tc, syntax_error_has_line);
	tcase_add_test(tc, nul_in_yaml);
	tcase_add_test(tc, load_dir_errors);
	tcase_add_test(tc, set_of_task_dirs);
	tcase_add_test(tc, set_of_competition);
	tcase_add_test(tc, set_of_many_entries);
	tcase_add_test(tc, scan_skips_hidden);
	tcase_add_test(tc, set_duplicates);
	tcase_add_loop_test(tc, bad_set, 0,
			    sizeof(bad_sets) / sizeof(bad_sets[0]));
	tcase_add_test(tc, empty_spec);
	tcase_add_test(tc, deadlines);
	tcase_add_test(tc, yaml_alias_budget);
	tcase_add_test(tc, include_expands);
	tcase_add_test(tc, include_parse_keeps_entry);
	tcase_add_test(tc, include_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kb_check_run(suite());
}
