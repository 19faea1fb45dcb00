/* The JSON bodies, the OAuth state and the newer input rules, as pure
 * functions. */
#include <check.h>
#include <errno.h>
#include <sodium.h>
#include <string.h>

#include "http/bodies.h"
#include "http/rules.h"
#include "kb_check_main.h"
#include "kb_time.h"

#define LEN(s) strlen(s)

START_TEST(join_and_user)
{
	struct kb_gw_body_join j;
	struct kb_gw_body_user u;
	const char *why = "";

	ck_assert_int_eq(kb_gw_body_join("{\"code\":\"abc123\"}", 17, &j, &why),
			 0);
	ck_assert_str_eq(j.code, "abc123");
	ck_assert_int_eq(kb_gw_body_join("{\"code\":\"abc\",\"extra\":1}", 24,
					 &j, &why),
			 0);
	const char *bad[] = {"",
			     "{",
			     "[]",
			     "{}",
			     "{\"code\":1}",
			     "{\"code\":\"\"}",
			     "{\"code\":\"a b\"}",
			     "{\"code\":\"a\",\"code\":\"b\"}",
			     "{\"code\":\"a\\u0000b\"}",
			     "{\"code\":\"../a\"}"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(kb_gw_body_join(bad[i], LEN(bad[i]), &j, &why) ==
				      400,
			      "%s", bad[i]);
	ck_assert_int_eq(kb_gw_body_join(NULL, 0, &j, &why), 400);
	ck_assert_int_eq(kb_gw_body_user("{\"name\":\"al ice\"}", 17, &u, &why),
			 0);
	ck_assert_str_eq(u.name, "al ice");
	ck_assert_int_eq(kb_gw_body_user("{\"name\":\"   \"}", 14, &u, &why),
			 400);
	ck_assert_int_eq(kb_gw_body_user("{\"name\":\"a\\nb\"}", 15, &u, &why),
			 400);
}
END_TEST

START_TEST(invites_rate_visibility_create)
{
	struct kb_gw_body_invites iv;
	struct kb_gw_body_rate rl;
	struct kb_gw_body_lb_create lc;
	const char *why = "";
	int closed;
	const char *ok1 = "{\"leaderboards\":[\"a\",\"b\",\"a\"],\"count\":3}";

	ck_assert_int_eq(kb_gw_body_invites(ok1, LEN(ok1), &iv, &why), 0);
	ck_assert_uint_eq(iv.n, 2); /* duplicates folded */
	ck_assert_int_eq(iv.count, 3);
	const char *ok2 = "{\"leaderboard\":\"x\",\"count\":10000}";
	ck_assert_int_eq(kb_gw_body_invites(ok2, LEN(ok2), &iv, &why), 0);
	ck_assert_str_eq(iv.lbs[0], "x");
	const char *bad[] = {"{\"leaderboard\":\"x\",\"count\":0}",
			     "{\"leaderboard\":\"x\",\"count\":10001}",
			     "{\"leaderboard\":\"x\",\"count\":1.5}",
			     "{\"count\":1}",
			     "{\"leaderboards\":\"x\",\"count\":1}",
			     "{\"leaderboards\":[1],\"count\":1}",
			     "{\"leaderboards\":[\"../x\"],\"count\":1}"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(kb_gw_body_invites(bad[i], LEN(bad[i]), &iv,
						 &why) == 400,
			      "%s", bad[i]);
	const char *r1 =
		"{\"mode_category\":\"leaderboard\",\"max_submissions_per_hour\":7}";
	ck_assert_int_eq(kb_gw_body_rate(r1, LEN(r1), &rl, &why), 0);
	ck_assert_str_eq(rl.category, "leaderboard");
	ck_assert_int_eq(rl.max, 7);
	const char *r2 =
		"{\"mode_category\":\"test\",\"max_submissions_per_hour\":0}";
	ck_assert_int_eq(kb_gw_body_rate(r2, LEN(r2), &rl, &why), 400);
	ck_assert_int_eq(kb_gw_body_visibility("{\"visibility\":\"closed\"}",
					       23, &closed, &why),
			 0);
	ck_assert_int_eq(closed, 1);
	ck_assert_int_eq(kb_gw_body_visibility("{}", 2, &closed, &why), 400);
	const char *c1 = "{\"directory\":\"identity_py\"}";
	ck_assert_int_eq(kb_gw_body_lb_create(c1, LEN(c1), &lc, &why), 0);
	ck_assert_str_eq(lc.directory, "identity_py");
	ck_assert_int_eq(lc.closed, 0);
	const char *c2 = "{\"directory\":\"..\"}";
	ck_assert_int_eq(kb_gw_body_lb_create(c2, LEN(c2), &lc, &why), 400);
	const char *c3 = "{\"directory\":\"a/b\"}";
	ck_assert_int_eq(kb_gw_body_lb_create(c3, LEN(c3), &lc, &why), 400);
}
END_TEST

static void b64(const char *json, char *out, size_t size, int variant)
{
	sodium_bin2base64(out, size, (const unsigned char *)json, strlen(json),
			  variant);
}

START_TEST(oauth_state)
{
	struct kb_gw_oauth_state st;
	const char *why = "";
	char s[512];

	ck_assert_int_eq(sodium_init() >= 0, 1);
	b64("{\"cli_id\":\"1b4e28ba-2fa1-11d2-883f-0016d3cca427\",\"is_reset\":true}",
	    s, sizeof(s), sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	ck_assert_int_eq(kb_gw_oauth_state_parse(s, &st, &why), 0);
	ck_assert_str_eq(st.cli_id, "1b4e28ba-2fa1-11d2-883f-0016d3cca427");
	ck_assert_int_eq(st.reset, 1);
	b64("{\"cli_id\":\"abc\"}", s, sizeof(s),
	    sodium_base64_VARIANT_URLSAFE);
	ck_assert_int_eq(kb_gw_oauth_state_parse(s, &st, &why), 0); /* padded */
	ck_assert_int_eq(st.reset, 0);
	const char *bad_json[] = {"{}", "{\"cli_id\":\"a b\"}", "[1]",
				  "{\"cli_id\":\"a\","
				  "\"is_reset\":\"yes\"}",
				  "x"};
	for (size_t i = 0; i < sizeof(bad_json) / sizeof(bad_json[0]); i++) {
		b64(bad_json[i], s, sizeof(s),
		    sodium_base64_VARIANT_URLSAFE_NO_PADDING);
		ck_assert_msg(kb_gw_oauth_state_parse(s, &st, &why) == 400,
			      "%s", bad_json[i]);
	}
	ck_assert_int_eq(kb_gw_oauth_state_parse("%%%", &st, &why), 400);
	ck_assert_int_eq(kb_gw_oauth_state_parse("", &st, &why), 400);
	ck_assert_int_eq(kb_gw_oauth_state_parse(NULL, &st, &why), 400);

	/* The start page's state: the client's plus the nonce, both ways. */
	struct kb_gw_oauth_state in = {.cli_id = "abc-123", .reset = 1}, back;
	memset(in.nonce, 'f', KB_GW_NONCE_HEX);
	ck_assert_int_eq(kb_gw_oauth_state_encode(&in, s, sizeof(s)), 0);
	ck_assert_ptr_null(strchr(s, '='));
	ck_assert_int_eq(kb_gw_oauth_state_parse(s, &back, &why), 0);
	ck_assert_str_eq(back.cli_id, "abc-123");
	ck_assert_int_eq(back.reset, 1);
	ck_assert_str_eq(back.nonce, in.nonce);
	ck_assert_int_eq(kb_gw_oauth_state_encode(&in, s, 8), -E2BIG);
	const char *bad_nonce[] = {"{\"cli_id\":\"a\",\"nonce\":\"abc\"}",
				   "{\"cli_id\":\"a\",\"nonce\":1}",
				   "{\"cli_id\":\"a\",\"nonce\":\"\"}"};
	for (size_t i = 0; i < sizeof(bad_nonce) / sizeof(bad_nonce[0]); i++) {
		b64(bad_nonce[i], s, sizeof(s),
		    sodium_base64_VARIANT_URLSAFE_NO_PADDING);
		ck_assert_msg(kb_gw_oauth_state_parse(s, &st, &why) == 400,
			      "%s", bad_nonce[i]);
	}
}
END_TEST

START_TEST(iso8601_and_names)
{
	int64_t ms;

	ck_assert_int_eq(kb_time_parse_iso8601("2099-12-31T23:59:59Z", &ms), 0);
	ck_assert_int_eq(ms, 4102444799000LL);
	ck_assert_int_eq(kb_time_parse_iso8601("1970-01-01", &ms), 0);
	ck_assert_int_eq(ms, 0);
	ck_assert_int_eq(
		kb_time_parse_iso8601("1970-01-01T01:00:00+01:00", &ms), 0);
	ck_assert_int_eq(ms, 0);
	ck_assert_int_eq(kb_time_parse_iso8601("1970-01-01 00:00:01.5", &ms),
			 0);
	ck_assert_int_eq(ms, 1500);
	ck_assert_int_eq(kb_time_parse_iso8601("1970-01-01 6:59", &ms), 0);
	ck_assert_int_eq(ms, (6 * 60 + 59) * 60000LL);
	const char *bad[] = {"",
			     "2024-02-30",
			     "2024-13-01",
			     "2024-01-01T25:00",
			     "2024-01-01T00:00Zx",
			     "24-01-01",
			     "2024-01-01T00:00:00+2",
			     "2024-01-01T:00",
			     "2024-01-01T123:00"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(kb_time_parse_iso8601(bad[i], &ms) != 0, "%s",
			      bad[i]);
	ck_assert_str_eq(kb_rules_category(KB_MODE_LEADERBOARD), "leaderboard");
	ck_assert_str_eq(kb_rules_category(KB_MODE_PROFILE), "test");
	ck_assert(kb_rules_user_id_ok("discord-80351110224678912"));
	ck_assert(!kb_rules_user_id_ok("a:b"));
	ck_assert(!kb_rules_name_ok("-x", 10));
	ck_assert(!kb_rules_name_ok("abcdefghijk", 10));
	ck_assert_int_eq(kb_rules_bool("TRUE", 0), 1);
	ck_assert_int_eq(kb_rules_bool("off", 1), 0);
	ck_assert_int_eq(kb_rules_bool(NULL, 1), 1);
	ck_assert_int_eq(kb_rules_bool("maybe", 0), -1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gateway_bodies");
	TCase *tc = tcase_create("bodies");

	tcase_add_test(tc, join_and_user);
	tcase_add_test(tc, invites_rate_visibility_create);
	tcase_add_test(tc, oauth_state);
	tcase_add_test(tc, iso8601_and_names);
	suite_add_tcase(s, tc);
	return kb_check_run(s);
}
