/* test_pyh_tasks: the Python problems' task.yml files and problems/
 * pmpp_py.yaml through the platform's own loader (services/kb_task.h), as
 * the gateway and the worker read them: upstream format, every file
 * present, the Python runtime's config, beside the other sets without a
 * name clash. */
#include "kb_check_main.h"
#include "kb_task.h"

#include <check.h>
#include <stdio.h>
#include <string.h>

#define PROBLEMS PYH_SOURCE_DIR "/problems"

static const struct {
	const char *name;
	size_t tests, benchmarks;
} want[] = {{"vectoradd_py", 6, 2}, {"vectorsum_py", 6, 2},
	    {"grayscale_py", 6, 2}, {"histogram_py", 6, 2},
	    {"prefixsum_py", 8, 2}, {"sort_py", 9, 2},
	    {"conv2d_py", 6, 2},    {"matmul_py", 7, 2},
	    {"rmsnorm_py", 7, 2},   {"grouped_gemm_py", 8, 2}};
#define NWANT (sizeof(want) / sizeof(want[0]))

START_TEST(pmpp_py_set)
{
	struct kb_problemset ps;
	char err[512] = "";

	ck_assert_msg(kb_problemset_load(PROBLEMS "/pmpp_py.yaml", &ps, err,
					 sizeof(err)) == 0,
		      "%s", err);
	ck_assert_uint_eq(ps.n, NWANT);
	for (size_t i = 0; i < NWANT; i++) {
		const struct kb_task *t = kb_problemset_find(&ps, want[i].name);
		size_t sub = 0;

		ck_assert_msg(t != NULL, "%s missing", want[i].name);
		ck_assert_str_eq(t->lang, "py");
		ck_assert_str_eq(kb_task_config(t, "main"), "kbh_eval.py");
		ck_assert_str_eq(t->ranking_by, "geom");
		ck_assert_uint_eq(t->ngpus, 2);
		ck_assert(kb_task_has_gpu(t, "H100"));
		ck_assert(kb_task_has_gpu(t, "CPU"));
		ck_assert_uint_eq(t->ntests, want[i].tests);
		ck_assert_uint_eq(t->nbenchmarks, want[i].benchmarks);
		ck_assert_uint_eq(t->ntemplates, 1);
		ck_assert_str_eq(t->templates[0].value, "template.py");
		for (size_t f = 0; f < t->nfiles; f++)
			if (strcmp(t->files[f].source, "@SUBMISSION@") == 0) {
				ck_assert_str_eq(t->files[f].name,
						 "submission.py");
				sub++;
			}
		ck_assert_uint_eq(sub, 1);
	}
	kb_problemset_clear(&ps);
}
END_TEST

/* Hosted together with the other sets, as a deployment would. */
START_TEST(beside_the_other_sets)
{
	struct kb_problemset ps;
	char err[512] = "";

	ck_assert_msg(kb_problemset_load(PROBLEMS "/cpu.yaml:" PROBLEMS
						  "/pmpp.yaml:" PROBLEMS
						  "/pmpp_py.yaml",
					 &ps, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_ptr_nonnull(kb_problemset_find(&ps, "vectoradd"));
	ck_assert_ptr_nonnull(kb_problemset_find(&ps, "vectoradd_py"));
	kb_problemset_clear(&ps);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("pyh_tasks");
	TCase *tc = tcase_create("pyh_tasks");

	tcase_add_test(tc, pmpp_py_set);
	tcase_add_test(tc, beside_the_other_sets);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kb_check_run(suite());
}
