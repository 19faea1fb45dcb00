/* gateway/core/results.c without a server: how a finished submission's
 * outcome reads (upstream's job object, which popcorn-cli prints). */
#include <check.h>
#include <string.h>

#include "core/results.h"
#include "kb_check_main.h"

/* The job error of a compile error whose compiler wrote stderr. */
static void compile_error_says(const char *stderr_text, char *out, size_t size)
{
	Kb__Result r = KB__RESULT__INIT;
	Kb__CompileResult c = KB__COMPILE_RESULT__INIT;
	struct kb_gw_job j;

	c.stderr = (char *)stderr_text;
	c.stdout = "";
	r.compile = &c;
	struct kb_gw_job_in in = {.id = 7,
				  .status = "done",
				  .mode = "test",
				  .verdict = "compile_error",
				  .gpu = "CPU",
				  .result = &r};
	kb_gw_job_of(&in, &j);
	ck_assert_str_eq(j.status, "failed");
	snprintf(out, size, "%s", j.error);
}

/* gcc's context line comes first; the reason is the error line. */
START_TEST(compile_error_names_the_error)
{
	char e[512];

	compile_error_says(
		"submission.c: In function 'custom_kernel':\n"
		"submission.c:3:5: error: 'x' undeclared (first use in this function)\n"
		"    3 |     x = 1;\n",
		e, sizeof(e));
	ck_assert_str_eq(e, "compilation failed: submission.c:3:5: error: 'x' "
			    "undeclared (first use in this function)");

	compile_error_says(
		"In file included from submission.c:1:\n"
		"x.h:1:10: fatal error: y.h: No such file or directory\n",
		e, sizeof(e));
	ck_assert_str_eq(e,
			 "compilation failed: x.h:1:10: fatal error: y.h: No "
			 "such file or directory");

	/* No error line (a linker, a killed compiler): the first line. */
	compile_error_says("\nundefined reference to `foo'\nld returned 1\n", e,
			   sizeof(e));
	ck_assert_str_eq(e, "compilation failed: undefined reference to `foo'");
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("gw_results");
	TCase *tc = tcase_create("job");

	tcase_add_test(tc, compile_error_names_the_error);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kb_check_run(suite());
}
