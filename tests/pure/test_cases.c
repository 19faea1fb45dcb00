/* kb_cases: case lines, the secret-seed combination and the cases file. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kb_cases.h"
#include "kb_check_main.h"

/* Substring checks that print both strings when they fail. */
#define ck_assert_contains(hay, needle)                                        \
	ck_assert_msg(strstr((hay), (needle)) != NULL,                         \
		      "'%s' does not contain '%s'", (hay), (needle))
#define ck_assert_not_contains(hay, needle)                                    \
	ck_assert_msg(strstr((hay), (needle)) == NULL, "'%s' contains '%s'",   \
		      (hay), (needle))

START_TEST(parse_simple)
{
	struct kb_case c;
	char err[256] = "";

	ck_assert_int_eq(kb_case_parse("size: 127; seed: 4242", &c, err,
				       sizeof(err)),
			 0);
	ck_assert_uint_eq(c.n, 2);
	ck_assert_str_eq(c.kv[0].key, "size");
	ck_assert_str_eq(c.kv[0].value, "127");
	ck_assert_str_eq(c.kv[1].key, "seed");
	ck_assert_str_eq(c.kv[1].value, "4242");
	ck_assert_str_eq(kb_case_get(&c, "seed"), "4242");
	ck_assert_ptr_null(kb_case_get(&c, "dtype"));
	kb_case_clear(&c);
	ck_assert_uint_eq(c.n, 0);
	ck_assert_ptr_null(c.kv);
}
END_TEST

START_TEST(parse_whitespace_and_values)
{
	struct kb_case c;
	char err[256] = "";

	/* Blanks around keys and values are not part of them; a value may
	 * hold inner blanks and colons. */
	ck_assert_int_eq(kb_case_parse("  m :\t7 ;k:x y;t: 12:30 ", &c, err,
				       sizeof(err)),
			 0);
	ck_assert_uint_eq(c.n, 3);
	ck_assert_str_eq(c.kv[0].key, "m");
	ck_assert_str_eq(c.kv[0].value, "7");
	ck_assert_str_eq(c.kv[1].value, "x y");
	ck_assert_str_eq(c.kv[2].value, "12:30");
	kb_case_clear(&c);
}
END_TEST

static void expect_bad(const char *line, const char *needle)
{
	struct kb_case c = {(struct kb_kv *)1, 99};
	char err[256] = "";

	ck_assert_int_eq(kb_case_parse(line, &c, err, sizeof(err)), -EINVAL);
	ck_assert_contains(err, needle);
	ck_assert_uint_eq(c.n, 0);
	ck_assert_ptr_null(c.kv);
}

START_TEST(parse_errors)
{
	expect_bad("", "no ':'");
	expect_bad("size 127", "no ':'");
	expect_bad("size: 1;", "no ':'"); /* trailing ';' = empty part */
	expect_bad(": 1", "empty key");
	expect_bad("size:", "empty value");
	expect_bad("size:   ", "empty value");
	expect_bad("the size: 1", "not [A-Za-z0-9_]+");
	expect_bad("s-ize: 1", "not [A-Za-z0-9_]+");
	expect_bad("size: 1; size: 2", "given twice");
	expect_bad("size: 1\nseed: 2", "line break");
	expect_bad("size: 1\r", "line break");
	expect_bad("size: \xC3", "UTF-8");
}
END_TEST

START_TEST(seed_combine_small)
{
	/* a + (a+b)(a+b+1)/2 by hand. */
	ck_assert_uint_eq(kb_seed_combine(0, 0), 0);
	ck_assert_uint_eq(kb_seed_combine(1, 0), 2);          /* 1 + 1 */
	ck_assert_uint_eq(kb_seed_combine(0, 1), 1);          /* 0 + 1 */
	ck_assert_uint_eq(kb_seed_combine(5, 7), 83);         /* 5 + 12*13/2 */
	ck_assert_uint_eq(kb_seed_combine(4242, 0), 9003645); /* +4242*4243/2 */
	ck_assert_uint_eq(kb_seed_combine(4242, 12345), 137576820);
	/* s = 2^33: s/2 (s+1) = 2^32 (2^33+1) = 2^65 + 2^32 = 2^32 (mod
	 * 2^64), plus a = 2^32 gives 2^33. */
	ck_assert_uint_eq(kb_seed_combine(UINT64_C(1) << 32, UINT64_C(1) << 32),
			  UINT64_C(8589934592));
}
END_TEST

/* POPCORN_SEED stays in upstream's range: numpy (upstream's set_seed)
 * refuses seeds from 2**32 up. */
START_TEST(seed_env_range)
{
	ck_assert_uint_eq(kb_seed_env(0), 0);
	ck_assert_uint_eq(kb_seed_env(12345), 12345);
	ck_assert_uint_eq(kb_seed_env(0x7fffffffull), 0x7fffffffull);
	ck_assert_uint_eq(kb_seed_env(0x80000000ull), 0);
	ck_assert_uint_lt(kb_seed_env(UINT64_MAX), 1ull << 31);
	ck_assert_uint_eq(kb_seed_env(0xdeadbeefcafef00dull), 0x4afef00dull);
}
END_TEST

START_TEST(seed_combine_overflow)
{
	const uint64_t max = UINT64_MAX;

	/* a = 2^64-1, b = 0: s(s+1)/2 = (2^64-1) 2^63 = -2^63 = 2^63 (mod
	 * 2^64); plus a gives 2^63 - 1. */
	ck_assert_uint_eq(kb_seed_combine(max, 0),
			  UINT64_C(9223372036854775807));
	/* a = 0, b = 2^64-1: just 2^63. */
	ck_assert_uint_eq(kb_seed_combine(0, max),
			  UINT64_C(9223372036854775808));
	/* a = b = 2^64-1: s = 2^65-2 overflows; s/2 = 2^64-1 = -1 and
	 * s+1 = 2^65-1 = -1, so the product is 1; plus a is 0. */
	ck_assert_uint_eq(kb_seed_combine(max, max), 0);
	/* a = b = 2^63: s = 2^64 (s/2 = 2^63), s+1 = 1, product 2^63,
	 * plus 2^63 = 2^64 = 0. */
	ck_assert_uint_eq(kb_seed_combine(UINT64_C(1) << 63, UINT64_C(1) << 63),
			  0);
	/* a = 2^64-2, b = 1: s = 2^64-1 odd, (s+1)/2 = 2^63 exact only in
	 * 65-bit arithmetic; s 2^63 = -2^63 = 2^63, plus a = 2^63 - 2. */
	ck_assert_uint_eq(kb_seed_combine(max - 1, 1),
			  UINT64_C(9223372036854775806));
	/* A large pair checked with Python's integers mod 2^64. */
	ck_assert_uint_eq(kb_seed_combine(UINT64_C(123456789012345678),
					  UINT64_C(9876543210987654321)),
			  UINT64_C(13913900638422233934));
}
END_TEST

START_TEST(render_plain)
{
	char *const cases[] = {"size: 127; seed: 4242", "m:1;k: 2"};
	char err[256] = "";
	char *s = kb_cases_render(cases, 2, 0, 0, err, sizeof(err));

	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(s, "size: 127; seed: 4242\nm: 1; k: 2\n");
	free(s);
	s = kb_cases_render(NULL, 0, 1, 5, err, sizeof(err));
	ck_assert_str_eq(s, "");
	free(s);
}
END_TEST

START_TEST(render_with_secret)
{
	char *const cases[] = {"size: 127; seed: 4242", "size: 8",
			       "seed: 18446744073709551615; n: 1"};
	char err[256] = "";
	char *s = kb_cases_render(cases, 3, 1, 12345, err, sizeof(err));

	ck_assert_ptr_nonnull(s);
	/* 4242 with 12345 -> 137576820. 2^64-1 with 12345: s = 2^64+12344
	 * is even, s/2 = 2^63+6172, times s+1 = 12345 (mod 2^64) gives
	 * 2^63 + 76193340 (12345 is odd), plus a = -1: 2^63 + 76193339.
	 * Reducing s mod 2^64 before halving would give a wrong 76188339. */
	ck_assert_str_eq(s, "size: 127; seed: 137576820\n"
			    "size: 8\n"
			    "seed: 9223372036930969147; n: 1\n");
	free(s);
}
END_TEST

START_TEST(render_errors)
{
	char *const bad_case[] = {"size: 1", "size 2"};
	char *const bad_seed[] = {"seed: -1"};
	char *const big_seed[] = {"seed: 18446744073709551616"};
	char *const word_seed[] = {"seed: abc"};
	char err[256] = "";

	ck_assert_ptr_null(
		kb_cases_render(bad_case, 2, 0, 0, err, sizeof(err)));
	ck_assert_contains(err, "case 1:");
	ck_assert_ptr_null(
		kb_cases_render(bad_seed, 1, 1, 999, err, sizeof(err)));
	ck_assert_contains(err, "seed '-1'");
	ck_assert_not_contains(err, "999"); /* never the secret */
	ck_assert_ptr_null(
		kb_cases_render(big_seed, 1, 1, 999, err, sizeof(err)));
	ck_assert_contains(err, "not an unsigned 64-bit");
	ck_assert_ptr_null(
		kb_cases_render(word_seed, 1, 1, 999, err, sizeof(err)));
	ck_assert_contains(err, "seed 'abc'");
	/* Without a secret a seed is just a value. */
	char *s = kb_cases_render(word_seed, 1, 0, 0, err, sizeof(err));
	ck_assert_str_eq(s, "seed: abc\n");
	free(s);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cases");
	TCase *tc = tcase_create("cases");

	tcase_add_test(tc, seed_env_range);
	tcase_add_test(tc, parse_simple);
	tcase_add_test(tc, parse_whitespace_and_values);
	tcase_add_test(tc, parse_errors);
	tcase_add_test(tc, seed_combine_small);
	tcase_add_test(tc, seed_combine_overflow);
	tcase_add_test(tc, render_plain);
	tcase_add_test(tc, render_with_secret);
	tcase_add_test(tc, render_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kb_check_run(suite());
}
