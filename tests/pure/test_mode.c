/* kb_mode: the one vocabulary of submission modes, and its numbering
 * against kb.proto's Mode. */
#include <check.h>
#include <stddef.h>

#include "kb.pb-c.h"
#include "kb_mode.h"
#include "kb_check_main.h"

_Static_assert((int)KB_MODE_INVALID == (int)KB__MODE__MODE_UNSPECIFIED,
	       "numbering");
_Static_assert((int)KB_MODE_TEST == (int)KB__MODE__MODE_TEST, "numbering");
_Static_assert((int)KB_MODE_BENCHMARK == (int)KB__MODE__MODE_BENCHMARK,
	       "numbering");
_Static_assert((int)KB_MODE_PROFILE == (int)KB__MODE__MODE_PROFILE,
	       "numbering");
_Static_assert((int)KB_MODE_LEADERBOARD == (int)KB__MODE__MODE_LEADERBOARD,
	       "numbering");

START_TEST(parse_takes_the_four_names_only)
{
	ck_assert_int_eq(kb_mode_parse("test"), KB_MODE_TEST);
	ck_assert_int_eq(kb_mode_parse("benchmark"), KB_MODE_BENCHMARK);
	ck_assert_int_eq(kb_mode_parse("profile"), KB_MODE_PROFILE);
	ck_assert_int_eq(kb_mode_parse("leaderboard"), KB_MODE_LEADERBOARD);
	const char *bad[] = {"ranked",  "Test",   "LEADERBOARD", "",
			     "private", "script", "test ",       NULL};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_int_eq(kb_mode_parse(bad[i]), KB_MODE_INVALID);
}
END_TEST

START_TEST(names_and_fallbacks)
{
	for (int m = KB_MODE_TEST; m <= KB_MODE_LEADERBOARD; m++) {
		ck_assert_int_eq(kb_mode_parse(kb_mode_name(m)), m);
		ck_assert_str_eq(kb_mode_name_or(m, "x"), kb_mode_name(m));
		ck_assert_str_eq(kb_mode_label(m), kb_mode_name(m));
	}
	ck_assert_str_eq(kb_mode_name(KB__MODE__MODE_LEADERBOARD),
			 "leaderboard");
	ck_assert_str_eq(kb_mode_name(KB_MODE_INVALID), "");
	ck_assert_str_eq(kb_mode_name(99), "");
	ck_assert_str_eq(kb_mode_name(-1), "");
	ck_assert_str_eq(kb_mode_name_or(99, "unspecified"), "unspecified");
	ck_assert_str_eq(kb_mode_name_or(0, "unspecified"), "unspecified");
	ck_assert_str_eq(kb_mode_label(KB_MODE_INVALID), "unspecified");
	ck_assert_str_eq(kb_mode_label(99), "unknown");
	ck_assert_str_eq(kb_mode_label(-1), "unknown");
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("mode");
	TCase *tc = tcase_create("mode");

	tcase_add_test(tc, parse_takes_the_four_names_only);
	tcase_add_test(tc, names_and_fallbacks);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kb_check_run(suite());
}
