/* The gateway's input rules: the uploaded file (size, UTF-8),
 * Content-Length, paging, identities, admin auth, file names, times. */
#include <check.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/seed.h"
#include "http/rules.h"
#include "kb_check_main.h"
#include "kb_time.h"

static const char *why;

START_TEST(code_rules)
{
	ck_assert_int_eq(kb_rules_code("int x;", 6, 100, &why), 0);
	ck_assert_int_eq(kb_rules_code("", 0, 100, &why), 400);
	ck_assert_str_eq(why, "empty file");
	ck_assert_int_eq(kb_rules_code("a\0b", 3, 100, &why), 400);
	ck_assert_int_eq(kb_rules_code("\xff", 1, 100, &why), 400);
	ck_assert_int_eq(kb_rules_code("\xc0\xaf", 2, 100, &why),
			 400); /* overlong */
	ck_assert_int_eq(kb_rules_code("\xed\xa0\x80", 3, 100, &why),
			 400); /* surrogate */
	ck_assert_int_eq(kb_rules_code("\xe2\x82", 2, 100, &why),
			 400); /* cut */
	const char *utf8 = "// \xc3\xa9t\xc3\xa9 \xf0\x9f\x9a\x80";
	ck_assert_int_eq(kb_rules_code(utf8, strlen(utf8), 100, &why), 0);
	ck_assert_int_eq(kb_rules_code("12345", 5, 5, &why), 0);
	ck_assert_int_eq(kb_rules_code("123456", 6, 5, &why), 413);
}
END_TEST

START_TEST(content_length)
{
	ck_assert_int_eq(kb_rules_content_length(NULL, 10, &why), 0);
	ck_assert_int_eq(kb_rules_content_length("10", 10, &why), 0);
	ck_assert_int_eq(kb_rules_content_length("0", 10, &why), 0);
	ck_assert_int_eq(kb_rules_content_length("0010", 10, &why), 0);
	ck_assert_int_eq(kb_rules_content_length("11", 10, &why), 413);
	ck_assert_int_eq(kb_rules_content_length("99999999999999999999999", 10,
						 &why),
			 400);
	ck_assert_int_eq(kb_rules_content_length("-1", 10, &why), 400);
	ck_assert_int_eq(kb_rules_content_length("1e3", 10, &why), 400);
	ck_assert_int_eq(kb_rules_content_length("", 10, &why), 400);
	ck_assert_int_eq(kb_rules_content_length(" 5", 10, &why), 400);
}
END_TEST

START_TEST(paging)
{
	long limit, offset;

	ck_assert_int_eq(
		kb_rules_page(NULL, NULL, 100, 1000, &limit, &offset, &why), 0);
	ck_assert_int_eq(limit, 100);
	ck_assert_int_eq(offset, 0);
	ck_assert_int_eq(
		kb_rules_page("5", "10", 100, 1000, &limit, &offset, &why), 0);
	ck_assert_int_eq(limit, 5);
	ck_assert_int_eq(offset, 10);
	ck_assert_int_eq(kb_rules_page("5000", NULL, 100, 1000, &limit, &offset,
				       &why),
			 0);
	ck_assert_int_eq(limit, 1000); /* capped, not refused */
	ck_assert_int_eq(kb_rules_page("0", NULL, 100, 1000, &limit, &offset,
				       &why),
			 400);
	ck_assert_int_eq(kb_rules_page("-1", NULL, 100, 1000, &limit, &offset,
				       &why),
			 400);
	ck_assert_int_eq(kb_rules_page("x", NULL, 100, 1000, &limit, &offset,
				       &why),
			 400);
	ck_assert_int_eq(kb_rules_page(NULL, "-1", 100, 1000, &limit, &offset,
				       &why),
			 400);
	ck_assert_int_eq(kb_rules_page(NULL, "1000000001", 100, 1000, &limit,
				       &offset, &why),
			 400);
	ck_assert_int_eq(
		kb_rules_page("", NULL, 100, 1000, &limit, &offset, &why), 400);
}
END_TEST

START_TEST(identities)
{
	ck_assert(kb_rules_cli_id_ok("abc-DEF_123"));
	ck_assert(!kb_rules_cli_id_ok(""));
	ck_assert(!kb_rules_cli_id_ok(NULL));
	ck_assert(!kb_rules_cli_id_ok("a b"));
	ck_assert(!kb_rules_cli_id_ok("a\tb"));
	ck_assert(!kb_rules_cli_id_ok("\xc3\xa9"));
	char long_id[130];
	memset(long_id, 'a', 129);
	long_id[129] = '\0';
	ck_assert(!kb_rules_cli_id_ok(long_id));
	long_id[128] = '\0';
	ck_assert(kb_rules_cli_id_ok(long_id));

	ck_assert(kb_rules_user_name_ok("alice"));
	ck_assert(kb_rules_user_name_ok("J\xc3\xa9r\xc3\xb4me D."));
	ck_assert(!kb_rules_user_name_ok(""));
	ck_assert(!kb_rules_user_name_ok("   "));
	ck_assert(!kb_rules_user_name_ok("a\nb"));
	ck_assert(!kb_rules_user_name_ok("\xff"));
	ck_assert(!kb_rules_user_name_ok(NULL));
}
END_TEST

START_TEST(admin_auth)
{
	ck_assert_int_eq(kb_rules_admin("Bearer tok", NULL, &why), 403);
	ck_assert_int_eq(kb_rules_admin("Bearer tok", "", &why), 403);
	ck_assert_int_eq(kb_rules_admin(NULL, "tok", &why), 401);
	ck_assert_int_eq(kb_rules_admin("tok", "tok", &why), 401);
	ck_assert_int_eq(kb_rules_admin("Basic tok", "tok", &why), 401);
	ck_assert_int_eq(kb_rules_admin("Bearer tok2", "tok", &why), 401);
	ck_assert_int_eq(kb_rules_admin("Bearer to", "tok", &why), 401);
	ck_assert_int_eq(kb_rules_admin("Bearer ", "tok", &why), 401);
	ck_assert_int_eq(kb_rules_admin("Bearer tok", "tok", &why), 0);
	ck_assert_int_eq(kb_rules_admin("bearer tok", "tok", &why), 0);
}
END_TEST

START_TEST(file_names)
{
	char out[256];

	kb_rules_file_name("sub.py", out, sizeof(out));
	ck_assert_str_eq(out, "sub.py");
	kb_rules_file_name("/home/me/sub.cu", out, sizeof(out));
	ck_assert_str_eq(out, "sub.cu");
	kb_rules_file_name("C:\\Users\\me\\k.c", out, sizeof(out));
	ck_assert_str_eq(out, "k.c");
	kb_rules_file_name("a\tb\x01.c", out, sizeof(out));
	ck_assert_str_eq(out, "ab.c");
	kb_rules_file_name(NULL, out, sizeof(out));
	ck_assert_str_eq(out, "submission");
	kb_rules_file_name("dir/", out, sizeof(out));
	ck_assert_str_eq(out, "submission");
	kb_rules_file_name("..", out, sizeof(out));
	ck_assert_str_eq(out, "submission");

	/* 200 two-byte characters: cut at 255 bytes, on a character edge. */
	char big[401];
	for (int i = 0; i < 200; i++)
		memcpy(big + 2 * i, "\xc3\xa9", 2);
	big[400] = '\0';
	kb_rules_file_name(big, out, sizeof(out));
	ck_assert_uint_eq(strlen(out), 254);

	char small[8];
	kb_rules_file_name("abcdefghijkl", small, sizeof(small));
	ck_assert_str_eq(small, "abcdefg");
}
END_TEST

START_TEST(times)
{
	char t[40];

	kb_time_iso8601(0, t, sizeof(t));
	ck_assert_str_eq(t, "1970-01-01T00:00:00.000Z");
	kb_time_iso8601(1700000000123LL, t, sizeof(t));
	ck_assert_str_eq(t, "2023-11-14T22:13:20.123Z");
	kb_time_iso8601(-1, t, sizeof(t));
	ck_assert_str_eq(t, "1969-12-31T23:59:59.999Z");
}
END_TEST

START_TEST(sanitize)
{
	size_t n;
	char *s = kb_gw_utf8_sanitize("ok \xc3\xa9 \xff\xc3", 8, &n);

	ck_assert_str_eq(s, "ok \xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd");
	ck_assert_uint_eq(n, strlen(s));
	free(s);
	s = kb_gw_utf8_sanitize("", 0, &n);
	ck_assert_str_eq(s, "");
	free(s);
}
END_TEST

/* The per-submission secret seed (seed.h): the expected values were
 * computed outside this code base (Python's hmac over the documented
 * message), so a change of the rule cannot pass unnoticed. */
START_TEST(secret_seeds)
{
	const uint64_t secret = 0x0123456789abcdefull;

	ck_assert_int_ge(sodium_init(), 0);
	ck_assert_uint_eq(kb_gw_seed_derive(secret, "vectorsum_cpu", 1),
			  6477834609525965704ull);
	ck_assert_uint_eq(kb_gw_seed_derive(secret, "vectorsum_cpu", 2),
			  7044025669543187992ull);
	ck_assert_uint_eq(kb_gw_seed_derive(secret, "matmul_cpu", 1),
			  8642880129756631933ull);
	ck_assert_uint_eq(kb_gw_seed_derive(UINT64_MAX, "gw_sum_cpu",
					    123456789012ull),
			  15417658473856698188ull);
	/* The same submission, the same seed (a redelivery); never the
	 * board's own secret. */
	ck_assert_uint_eq(kb_gw_seed_derive(secret, "vectorsum_cpu", 1),
			  kb_gw_seed_derive(secret, "vectorsum_cpu", 1));
	for (uint64_t id = 1; id < 1000; id++)
		ck_assert(kb_gw_seed_derive(secret, "vectorsum_cpu", id) !=
			  secret);
	/* Fields cannot slide into each other: board "a1" with id 2 is not
	 * board "a" with id 12. */
	ck_assert(kb_gw_seed_derive(secret, "a1", 2) !=
		  kb_gw_seed_derive(secret, "a", 12));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gateway_rules");
	TCase *tc = tcase_create("rules");

	tcase_add_test(tc, code_rules);
	tcase_add_test(tc, content_length);
	tcase_add_test(tc, paging);
	tcase_add_test(tc, identities);
	tcase_add_test(tc, admin_auth);
	tcase_add_test(tc, file_names);
	tcase_add_test(tc, times);
	tcase_add_test(tc, sanitize);
	tcase_add_test(tc, secret_seeds);
	suite_add_tcase(s, tc);
	return kb_check_run(s);
}
