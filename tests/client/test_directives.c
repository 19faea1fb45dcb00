/* kb_directives: the #!POPCORN / //!POPCORN header lines and how flags
 * combine with them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "directives.h"
#include "kb_check_main.h"

static int parse(const char *s, struct kb_directives *d, char *err)
{
	return kb_directives_parse(s, strlen(s), d, err, 256);
}

START_TEST(python_style)
{
	struct kb_directives d;
	char err[256];

	ck_assert_int_eq(
		parse("#!POPCORN leaderboard grayscale\n#!POPCORN gpu H100\n"
		      "import torch\n",
		      &d, err),
		0);
	ck_assert_str_eq(d.leaderboard, "grayscale");
	ck_assert_str_eq(d.gpu, "H100");
	ck_assert_int_eq(d.gpu_count, 1);
	ck_assert_int_eq(d.leaderboard_line, 1);
	ck_assert_int_eq(d.gpu_line, 2);
}
END_TEST

START_TEST(c_style_crlf_bom)
{
	struct kb_directives d;
	char err[256];

	ck_assert_int_eq(
		parse("\xEF\xBB\xBF//!POPCORN leaderboard vectorsum_cpu\r\n"
		      "//!POPCORN\tgpu\tCPU\r\n#include <stdio.h>\r\n",
		      &d, err),
		0);
	ck_assert_str_eq(d.leaderboard, "vectorsum_cpu");
	ck_assert_str_eq(d.gpu, "CPU");
}
END_TEST

START_TEST(absent)
{
	struct kb_directives d;
	char err[256];

	ck_assert_int_eq(
		parse("#!/usr/bin/env python3\n# POPCORN leaderboard x\n"
		      "  #!POPCORN leaderboard indented\n#!popcorn gpu lower\n"
		      "#!POPCORNgpu H100\n",
		      &d, err),
		0);
	ck_assert_str_eq(d.leaderboard, "");
	ck_assert_str_eq(d.gpu, "");
	ck_assert_int_eq(d.leaderboard_line, 0);
	ck_assert_int_eq(parse("", &d, err), 0);
	ck_assert_int_eq(kb_directives_parse(NULL, 0, &d, err, sizeof(err)), 0);
}
END_TEST

START_TEST(keywords_and_gpu_lists)
{
	struct kb_directives d;
	char err[256];

	ck_assert_int_eq(
		parse("#!POPCORN LEADERBOARD lb\n#!POPCORN gpus A100 H100 MI300\n"
		      "#!POPCORN mode benchmark\n",
		      &d, err),
		0);
	ck_assert_str_eq(d.leaderboard, "lb");
	ck_assert_str_eq(d.gpu, "A100");
	ck_assert_int_eq(d.gpu_count, 3);
}
END_TEST

START_TEST(anywhere_in_file)
{
	/* popcorn-cli reads every line, so a late directive still counts. */
	struct kb_directives d;
	char err[256];

	ck_assert_int_eq(
		parse("import os\n\n#!POPCORN leaderboard late\n", &d, err), 0);
	ck_assert_str_eq(d.leaderboard, "late");
	ck_assert_int_eq(d.leaderboard_line, 3);
}
END_TEST

START_TEST(repeated_and_conflicting)
{
	struct kb_directives d;
	char err[256];

	ck_assert_int_eq(
		parse("#!POPCORN gpu H100\n//!POPCORN gpu H100\n", &d, err), 0);
	ck_assert_str_eq(d.gpu, "H100");

	ck_assert_int_eq(
		parse("#!POPCORN leaderboard a\nx\n#!POPCORN leaderboard b\n",
		      &d, err),
		-EINVAL);
	ck_assert_msg(strstr(err, "line 3") && strstr(err, "'b'") &&
			      strstr(err, "'a'") && strstr(err, "line 1"),
		      "%s", err);
	ck_assert_str_eq(d.leaderboard, "");

	ck_assert_int_eq(parse("#!POPCORN gpu H100\n#!POPCORN gpu A100\n", &d,
			       err),
			 -EINVAL);
}
END_TEST

START_TEST(malformed)
{
	struct kb_directives d;
	char err[256], big[400];

	ck_assert_int_eq(parse("#!POPCORN leaderboard\n", &d, err), -EINVAL);
	ck_assert_msg(strstr(err, "line 1"), "%s", err);
	ck_assert_int_eq(parse("x\n//!POPCORN gpu   \n", &d, err), -EINVAL);
	ck_assert_msg(strstr(err, "line 2"), "%s", err);
	snprintf(big, sizeof(big), "#!POPCORN leaderboard %0300d\n", 7);
	ck_assert_int_eq(parse(big, &d, err), -EINVAL);
	ck_assert_msg(strstr(err, "longer"), "%s", err);
}
END_TEST

START_TEST(resolve_from_directives)
{
	struct kb_directives d;
	struct kb_target t;
	char err[256], warn[256];

	ck_assert_int_eq(parse("#!POPCORN leaderboard lb\n#!POPCORN gpu H100\n",
			       &d, err),
			 0);
	ck_assert_int_eq(kb_directives_resolve(&d, NULL, "", &t, warn,
					       sizeof(warn), err, sizeof(err)),
			 0);
	ck_assert_str_eq(t.leaderboard, "lb");
	ck_assert_str_eq(t.gpu, "H100");
	ck_assert_str_eq(warn, "");
}
END_TEST

START_TEST(resolve_flags_win)
{
	struct kb_directives d;
	struct kb_target t;
	char err[256], warn[512];

	ck_assert_int_eq(
		parse("#!POPCORN leaderboard lb\n#!POPCORN gpu H100 A100\n", &d,
		      err),
		0);
	ck_assert_int_eq(kb_directives_resolve(&d, "other", "MI300", &t, warn,
					       sizeof(warn), err, sizeof(err)),
			 0);
	ck_assert_str_eq(t.leaderboard, "other");
	ck_assert_str_eq(t.gpu, "MI300");
	ck_assert_msg(
		strstr(warn,
		       "--leaderboard other overrides the file's directive 'lb'"),
		"%s", warn);
	ck_assert_msg(
		strstr(warn,
		       "--gpu MI300 overrides the file's directive 'H100'"),
		"%s", warn);
	ck_assert_msg(!strstr(warn, "GPUs"),
		      "no list note when --gpu is given: %s", warn);

	/* The same value as the directive: nothing to say. */
	ck_assert_int_eq(kb_directives_resolve(&d, "lb", NULL, &t, warn,
					       sizeof(warn), err, sizeof(err)),
			 0);
	ck_assert_str_eq(t.gpu, "H100");
	ck_assert_msg(strstr(warn, "lists 2 GPUs; submitting to H100 only"),
		      "%s", warn);
	ck_assert_msg(!strstr(warn, "overrides"), "%s", warn);
}
END_TEST

START_TEST(resolve_flags_only_and_missing)
{
	struct kb_target t;
	char err[256], warn[256];

	ck_assert_int_eq(kb_directives_resolve(NULL, "lb", "CPU", &t, warn,
					       sizeof(warn), err, sizeof(err)),
			 0);
	ck_assert_str_eq(t.leaderboard, "lb");
	ck_assert_str_eq(t.gpu, "CPU");

	ck_assert_int_eq(kb_directives_resolve(NULL, NULL, "CPU", &t, NULL, 0,
					       err, sizeof(err)),
			 -EINVAL);
	ck_assert_msg(strstr(err, "no leaderboard given: use --leaderboard") &&
			      strstr(err, "#!POPCORN leaderboard NAME"),
		      "%s", err);
	ck_assert_int_eq(kb_directives_resolve(NULL, "lb", NULL, &t, NULL, 0,
					       err, sizeof(err)),
			 -EINVAL);
	ck_assert_msg(strstr(err, "no GPU given: use --gpu"), "%s", err);
	ck_assert_str_eq(t.leaderboard, "");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("client_directives");
	TCase *tc = tcase_create("directives");

	tcase_add_test(tc, python_style);
	tcase_add_test(tc, c_style_crlf_bom);
	tcase_add_test(tc, absent);
	tcase_add_test(tc, keywords_and_gpu_lists);
	tcase_add_test(tc, anywhere_in_file);
	tcase_add_test(tc, repeated_and_conflicting);
	tcase_add_test(tc, malformed);
	tcase_add_test(tc, resolve_from_directives);
	tcase_add_test(tc, resolve_flags_win);
	tcase_add_test(tc, resolve_flags_only_and_missing);
	suite_add_tcase(s, tc);
	return kb_check_run(s);
}
