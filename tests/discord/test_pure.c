/* The Discord front end's pure parts: signatures, interaction JSON,
 * answers, texts, rate-limit headers and the command set. */
#include <check.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "discord/commands.h"
#include "discord/interaction.h"
#include "discord/rest.h"
#include "discord/text.h"
#include "discord/verify.h"
#include "kb_check_main.h"
#include "kb_util.h"

/* ---- signatures ---- */

static unsigned char pk[32], sk[64];

static void keys(void)
{
	ck_assert_int_eq(sodium_init() >= 0, 1);
	crypto_sign_keypair(pk, sk);
}

static void sign_hex(const char *ts, const char *body, char out[129])
{
	unsigned char sig[64];
	size_t tn = strlen(ts), bn = strlen(body);
	unsigned char *m = malloc(tn + bn);

	memcpy(m, ts, tn);
	memcpy(m + tn, body, bn);
	crypto_sign_detached(sig, NULL, m, tn + bn, sk);
	free(m);
	sodium_bin2hex(out, 129, sig, sizeof(sig));
}

START_TEST(verify_good_forged_stale)
{
	const char *body = "{\"type\":1}";
	char sig[129];

	keys();
	sign_hex("1700000000", body, sig);
	ck_assert_int_eq(kb_dc_verify(pk, sig, "1700000000", body, strlen(body),
				      1700000010, 300, 60),
			 0);
	/* Another body, another timestamp, another key. */
	ck_assert_int_eq(kb_dc_verify(pk, sig, "1700000000", "{\"type\":2}", 10,
				      1700000010, 300, 60),
			 -EBADMSG);
	ck_assert_int_eq(kb_dc_verify(pk, sig, "1700000001", body, strlen(body),
				      1700000010, 300, 60),
			 -EBADMSG);
	unsigned char pk2[32], sk2[64];
	crypto_sign_keypair(pk2, sk2);
	ck_assert_int_eq(kb_dc_verify(pk2, sig, "1700000000", body,
				      strlen(body), 1700000010, 300, 60),
			 -EBADMSG);
	/* Stale and future: a good signature, a bad clock. */
	ck_assert_int_eq(kb_dc_verify(pk, sig, "1700000000", body, strlen(body),
				      1700000301, 300, 60),
			 -ETIME);
	ck_assert_int_eq(kb_dc_verify(pk, sig, "1700000000", body, strlen(body),
				      1699999939, 300, 60),
			 -ETIME);
	ck_assert_int_eq(kb_dc_verify(pk, sig, "1700000000", body, strlen(body),
				      1699999940, 300, 60),
			 0);
	/* Malformed headers. */
	ck_assert_int_eq(kb_dc_verify(pk, NULL, "1700000000", body,
				      strlen(body), 1700000000, 300, 60),
			 -EINVAL);
	ck_assert_int_eq(kb_dc_verify(pk, "zz", "1700000000", body,
				      strlen(body), 1700000000, 300, 60),
			 -EINVAL);
	sig[5] = 'x';
	ck_assert_int_eq(kb_dc_verify(pk, sig, "1700000000", body, strlen(body),
				      1700000000, 300, 60),
			 -EINVAL);
	sign_hex("1700000000", body, sig);
	ck_assert_int_eq(kb_dc_verify(pk, sig, "17e8", body, strlen(body),
				      1700000000, 300, 60),
			 -EINVAL);
	ck_assert_int_eq(kb_dc_verify(pk, sig, "", body, strlen(body),
				      1700000000, 300, 60),
			 -EINVAL);
	/* A flipped bit of the signature. */
	sig[0] = sig[0] == '0' ? '1' : '0';
	ck_assert_int_eq(kb_dc_verify(pk, sig, "1700000000", body, strlen(body),
				      1700000000, 300, 60),
			 -EBADMSG);
}
END_TEST

START_TEST(hex_decode)
{
	unsigned char b[2];

	ck_assert_int_eq(kb_dc_hex_decode("0aFf", b, 2), 0);
	ck_assert_uint_eq(b[0], 0x0a);
	ck_assert_uint_eq(b[1], 0xff);
	ck_assert_int_eq(kb_dc_hex_decode("0aF", b, 2), -EINVAL);
	ck_assert_int_eq(kb_dc_hex_decode("0aFg", b, 2), -EINVAL);
	ck_assert_int_eq(kb_dc_hex_decode(NULL, b, 2), -EINVAL);
}
END_TEST

/* ---- interactions ---- */

static const char submit_json[] =
	"{\"type\":2,\"id\":\"11\",\"token\":\"tok\",\"application_id\":\"99\","
	"\"guild_id\":\"5\",\"channel_id\":\"6\","
	"\"member\":{\"roles\":[\"700\",\"701\"],\"user\":{\"id\":\"42\","
	"\"username\":\"alice\",\"global_name\":\"Alice A\"}},"
	"\"data\":{\"name\":\"leaderboard\",\"options\":[{\"type\":2,\"name\":\"submit\","
	"\"options\":[{\"type\":1,\"name\":\"ranked\",\"options\":["
	"{\"type\":11,\"name\":\"script\",\"value\":\"900\"},"
	"{\"type\":3,\"name\":\"leaderboard\",\"value\":\"vectorsum_cpu\"}]}]}],"
	"\"resolved\":{\"attachments\":{\"900\":{\"id\":\"900\",\"filename\":\"sub.c\","
	"\"size\":1234,\"url\":\"https://cdn.discordapp.com/a/sub.c\"}}}}}";

START_TEST(parse_submit)
{
	struct kb_dc_interaction it;
	struct kb_dc_attachment a;
	char err[128];

	ck_assert_int_eq(kb_dc_interaction_parse(submit_json,
						 strlen(submit_json), &it, err,
						 sizeof(err)),
			 0);
	ck_assert_int_eq(it.type, KB_DC_IT_COMMAND);
	ck_assert_str_eq(it.command, "leaderboard submit ranked");
	ck_assert_str_eq(it.token, "tok");
	ck_assert_str_eq(it.application_id, "99");
	ck_assert_str_eq(it.channel_id, "6");
	ck_assert_str_eq(it.user_id, "42");
	ck_assert_str_eq(it.user_name, "Alice A");
	ck_assert_uint_eq(it.nroles, 2);
	ck_assert_uint_eq(it.nopts, 2);
	ck_assert_str_eq(kb_dc_opt_str(&it, "leaderboard"), "vectorsum_cpu");
	ck_assert_ptr_null(kb_dc_opt_str(&it, "gpu"));
	const struct kb_dc_option *o = kb_dc_opt(&it, "script");
	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(o->type, KB_DC_OPT_ATTACHMENT);
	ck_assert_int_eq(kb_dc_attachment(&it, o->str, &a), 0);
	ck_assert_str_eq(a.filename, "sub.c");
	ck_assert_int_eq(a.size, 1234);
	ck_assert_str_eq(a.url, "https://cdn.discordapp.com/a/sub.c");
	ck_assert_int_eq(kb_dc_attachment(&it, "901", &a), -ENOENT);
	/* Admins by user id or by role. */
	ck_assert_int_eq(kb_dc_is_listed(&it, "1, 42"), 1);
	ck_assert_int_eq(kb_dc_is_listed(&it, "701"), 1);
	ck_assert_int_eq(kb_dc_is_listed(&it, "4,420,70"), 0);
	ck_assert_int_eq(kb_dc_is_listed(&it, ""), 0);
	kb_dc_interaction_clear(&it);
}
END_TEST

START_TEST(parse_ping_autocomplete_dm_bad)
{
	struct kb_dc_interaction it;
	char err[128];
	const char *ping = "{\"type\":1,\"id\":\"1\",\"application_id\":\"9\"}";
	const char *ac =
		"{\"type\":4,\"id\":\"1\",\"token\":\"t\",\"application_id\":\"9\","
		"\"user\":{\"id\":\"3\",\"username\":\"bob\"},"
		"\"data\":{\"name\":\"leaderboard\",\"options\":[{\"type\":1,"
		"\"name\":\"show\",\"options\":[{\"type\":3,\"name\":\"leaderboard\","
		"\"value\":\"vec\",\"focused\":true}]}]}}";

	ck_assert_int_eq(kb_dc_interaction_parse(ping, strlen(ping), &it, err,
						 sizeof(err)),
			 0);
	ck_assert_int_eq(it.type, KB_DC_IT_PING);
	kb_dc_interaction_clear(&it);

	ck_assert_int_eq(kb_dc_interaction_parse(ac, strlen(ac), &it, err,
						 sizeof(err)),
			 0);
	ck_assert_int_eq(it.type, KB_DC_IT_AUTOCOMPLETE);
	ck_assert_str_eq(it.command, "leaderboard show");
	ck_assert_str_eq(it.user_id, "3");
	ck_assert_str_eq(it.user_name, "bob"); /* DM: user, no global_name */
	ck_assert_ptr_nonnull(kb_dc_focused(&it));
	ck_assert_str_eq(kb_dc_focused(&it)->str, "vec");
	kb_dc_interaction_clear(&it);

	const char *bad[] = {
		"",
		"[]",
		"{\"type\":0}",
		"{\"id\":\"1\"}",
		"{\"type\":2,\"token\":\"t\",\"application_id\":\"9\","
		"\"user\":{\"id\":\"3\"},\"data\":{}}",
		"{\"type\":2,\"application_id\":\"9\",\"user\":{\"id\":\"3\"},"
		"\"data\":{\"name\":\"x\"}}",
		"{\"type\":1,\"type\":2}"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(kb_dc_interaction_parse(bad[i], strlen(bad[i]),
						      &it, err,
						      sizeof(err)) == -EINVAL,
			      "%s", bad[i]);
		kb_dc_interaction_clear(&it);
	}
}
END_TEST

START_TEST(answers)
{
	json_t *j = kb_dc_resp_pong();
	ck_assert_int_eq(json_integer_value(json_object_get(j, "type")), 1);
	json_decref(j);

	j = kb_dc_resp_message("hi @everyone", 1);
	json_t *d = json_object_get(j, "data");
	ck_assert_int_eq(json_integer_value(json_object_get(j, "type")), 4);
	ck_assert_int_eq(json_integer_value(json_object_get(d, "flags")), 64);
	ck_assert_str_eq(json_string_value(json_object_get(d, "content")),
			 "hi @everyone");
	/* No mention is parsed from content. */
	ck_assert_uint_eq(
		json_array_size(json_object_get(
			json_object_get(d, "allowed_mentions"), "parse")),
		0);
	json_decref(j);

	j = kb_dc_resp_deferred(1);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "type")), 5);
	ck_assert_int_eq(json_integer_value(json_object_get(
				 json_object_get(j, "data"), "flags")),
			 64);
	json_decref(j);

	const char *names[30];
	for (int i = 0; i < 30; i++)
		names[i] = "board";
	j = kb_dc_resp_choices(names, NULL, 30);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "type")), 8);
	json_t *ch = json_object_get(json_object_get(j, "data"), "choices");
	ck_assert_uint_eq(json_array_size(ch), 25);
	ck_assert_str_eq(json_string_value(json_object_get(
				 json_array_get(ch, 0), "value")),
			 "board");
	json_decref(j);

	const char *files[] = {"a.txt", "b.txt"};
	j = kb_dc_message_body("x", 0, files, 2, "42");
	ck_assert_ptr_null(json_object_get(j, "flags"));
	json_t *att = json_object_get(j, "attachments");
	ck_assert_uint_eq(json_array_size(att), 2);
	ck_assert_int_eq(json_integer_value(
				 json_object_get(json_array_get(att, 1), "id")),
			 1);
	ck_assert_str_eq(json_string_value(json_object_get(
				 json_array_get(att, 1), "filename")),
			 "b.txt");
	ck_assert_str_eq(
		json_string_value(json_array_get(
			json_object_get(json_object_get(j, "allowed_mentions"),
					"users"),
			0)),
		"42");
	json_decref(j);
}
END_TEST

/* ---- texts ---- */

START_TEST(units_clean_fit)
{
	ck_assert_uint_eq(kb_dc_text_units("abc"), 3);
	ck_assert_uint_eq(kb_dc_text_units("µs"), 2);   /* 2 bytes, 1 unit */
	ck_assert_uint_eq(kb_dc_text_units("🥇"), 2); /* 4 bytes, 2 units */

	char *c = kb_dc_text_clean("a`b\xff\0c", 6, 0, 1);
	ck_assert_str_eq(c, "a'b\xEF\xBF\xBD"
			    "c");
	free(c);
	c = kb_dc_text_clean("abcdef", 6, 4, 0);
	ck_assert_str_eq(c, "abc…");
	free(c);

	char *f = kb_dc_text_fit("short", 10, NULL);
	ck_assert_str_eq(f, "short");
	free(f);
	f = kb_dc_text_fit("hello brave new world", 17, " [cut]");
	ck_assert_str_eq(f,
			 "hello brave [cut]"); /* at a space, never mid-word */
	free(f);
	f = kb_dc_text_fit("hello brave new world", 16, " [cut]");
	ck_assert_str_eq(f, "hello [cut]");
	free(f);
	f = kb_dc_text_fit("line one\nline two is long", 15, " [cut]");
	ck_assert_str_eq(f, "line one [cut]");
	free(f);
}
END_TEST

START_TEST(split_pack)
{
	char **p;
	size_t n;
	struct kb_buf b = {0};

	for (int i = 0; i < 300; i++)
		kb_buf_printf(&b, "word%03d ", i);
	ck_assert_int_eq(kb_dc_text_split(b.data, 2000, &p, &n), 0);
	ck_assert_uint_eq(n, 2);
	size_t total = 0;
	for (size_t i = 0; i < n; i++) {
		ck_assert_uint_le(kb_dc_text_units(p[i]), 2000);
		/* Every part ends at a word's end. */
		size_t l = strlen(p[i]);
		ck_assert_msg(l >= 7 && strncmp(p[i] + l - 7, "word", 4) == 0,
			      "%s", p[i] + l - 10);
		total += l;
	}
	ck_assert_uint_ge(total, b.len - 2);
	kb_dc_text_free_parts(p, n);
	kb_buf_free(&b);

	/* No space at all: a hard cut says so. */
	char *longword = malloc(3001);
	memset(longword, 'x', 3000);
	longword[3000] = '\0';
	ck_assert_int_eq(kb_dc_text_split(longword, 2000, &p, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_ptr_nonnull(strstr(p[0], "continues"));
	ck_assert_uint_le(kb_dc_text_units(p[0]), 2000);
	kb_dc_text_free_parts(p, n);
	free(longword);

	/* Lines packed into code blocks of at most 100 units. */
	const char *lines[20];
	for (int i = 0; i < 20; i++)
		lines[i] = "0123456789";
	ck_assert_int_eq(kb_dc_text_pack("Title", lines, 20, 1, 100, &p, &n),
			 0);
	ck_assert_uint_gt(n, 2);
	for (size_t i = 0; i < n; i++) {
		ck_assert_uint_le(kb_dc_text_units(p[i]), 100);
		ck_assert_ptr_nonnull(strstr(p[i], "```\n"));
		ck_assert_int_eq(strcmp(p[i] + strlen(p[i]) - 3, "```"), 0);
	}
	ck_assert_int_eq(strncmp(p[0], "Title\n", 6), 0);
	ck_assert_int_ne(strncmp(p[1], "Title", 5), 0);
	kb_dc_text_free_parts(p, n);
}
END_TEST

START_TEST(seconds)
{
	char b[32];

	kb_dc_fmt_seconds(812e-9, b, sizeof(b));
	ck_assert_str_eq(b, "812 ns");
	kb_dc_fmt_seconds(1.234e-6, b, sizeof(b));
	ck_assert_str_eq(b, "1.23 µs");
	kb_dc_fmt_seconds(45.6e-3, b, sizeof(b));
	ck_assert_str_eq(b, "45.6 ms");
	kb_dc_fmt_seconds(1.2, b, sizeof(b));
	ck_assert_str_eq(b, "1.20 s");
	kb_dc_fmt_seconds(999.9e-9, b, sizeof(b));
	ck_assert_str_eq(b, "1.00 µs");
	kb_dc_fmt_seconds(NAN, b, sizeof(b));
	ck_assert_str_eq(b, "?");
}
END_TEST

START_TEST(progress)
{
	struct kb_dc_progress p = {.head = {7, "vectorsum_cpu", "CPU",
					    "leaderboard", "sub.c"},
				   .position = -1};
	char *s = kb_dc_render_progress(&p, 1000);

	ck_assert_ptr_nonnull(strstr(s, "**Submission #7**"));
	ck_assert_ptr_nonnull(strstr(s, "ranked"));
	free(s);
	kb_dc_progress_stage(&p, "queued", "", 2, 1000);
	kb_dc_progress_stage(&p, "compiling", "cc -O3", -1, 2500);
	kb_dc_progress_stage(&p, "compiling", "still", -1, 2600);
	kb_dc_progress_stage(&p, "testing", "12 tests", -1, 4000);
	kb_dc_progress_stage(&p, "ranked_run", "ranked run", -1, 4500);
	ck_assert_uint_eq(p.nstages, 4);
	s = kb_dc_render_progress(&p, 5000);
	ck_assert_ptr_nonnull(strstr(s, "✅ Queued (1.5 s)"));
	ck_assert_ptr_nonnull(strstr(s, "✅ Compiling (1.5 s)"));
	ck_assert_ptr_nonnull(strstr(s, "✅ Testing (0.5 s)"));
	/* A message that only repeats the stage is not shown twice. */
	ck_assert_ptr_nonnull(strstr(s, "⏳ Ranked run (0.5 s)"));
	free(s);
}
END_TEST

static Kb__KeyValue kvs[16];
static Kb__KeyValue *kvp[16];

static Kb__RunResult run(const char *key, int passed, const char *const *kv,
			 size_t n)
{
	Kb__RunResult rr = KB__RUN_RESULT__INIT;
	static size_t used;

	rr.key = (char *)key;
	rr.passed = passed;
	rr.success = 1;
	rr.stdout = rr.stderr = (char *)"";
	rr.result = &kvp[used];
	for (size_t i = 0; i < n; i += 2) {
		Kb__KeyValue k = KB__KEY_VALUE__INIT;
		k.key = (char *)kv[i];
		k.value = (char *)kv[i + 1];
		kvs[used] = k;
		kvp[used] = &kvs[used];
		used++;
		rr.n_result++;
	}
	return rr;
}

START_TEST(result_report)
{
	const char *tkv[] = {"check",       "pass",    "test-count",    "2",
			     "test.0.spec", "size: 1", "test.0.status", "pass",
			     "test.1.spec", "size: 2", "test.1.status", "pass"};
	const char *bkv[] = {"check",
			     "pass",
			     "benchmark-count",
			     "2",
			     "benchmark.0.mean",
			     "1500",
			     "benchmark.1.mean",
			     "3000000"};
	Kb__RunResult t = run("test", 1, tkv, 12),
		      l = run("leaderboard", 1, bkv, 8);
	Kb__RunResult p = run("private", 1, NULL, 0);
	Kb__RunResult *runs[] = {&t, &l, &p};
	Kb__CompileResult comp = KB__COMPILE_RESULT__INIT;
	Kb__Result r = KB__RESULT__INIT;
	struct kb_dc_sub_head h = {9, "vectorsum_cpu", "CPU", "leaderboard",
				   "s`ub.c"};
	struct kb_dc_placement pl = {.known = 1,
				     .is_best = 1,
				     .rank = 1,
				     .first_success = 1,
				     .best_score = 1.5e-6};

	comp.success = 1;
	r.compile = &comp;
	r.runs = runs;
	r.n_runs = 3;
	r.verdict = KB__VERDICT__VERDICT_PASSED;
	r.has_score = 1;
	r.score = 1.5e-6;
	char *s = kb_dc_render_result(&h, &r, &pl, 1, 2000);
	ck_assert_ptr_nonnull(strstr(s, "✅ **Passed** — score **1.50 µs**"));
	ck_assert_ptr_nonnull(strstr(s, "🥇 First place on CPU"));
	ck_assert_ptr_nonnull(strstr(s, "first successful submission"));
	ck_assert_ptr_nonnull(strstr(s, "Tests: 2/2 passed"));
	ck_assert_ptr_nonnull(
		strstr(s, "Ranked run: 2 benchmarks, means 1.50 µs … 3.00 ms"));
	ck_assert_ptr_nonnull(strstr(s, "Secret run passed"));
	ck_assert_ptr_nonnull(
		strstr(s, "`s'ub.c`")); /* no backtick from the user */
	ck_assert_ptr_nonnull(strstr(s, "attached"));
	free(s);

	/* Not the user's best any more; rank 5; a personal best variant. */
	pl = (struct kb_dc_placement){
		.known = 1, .is_best = 0, .rank = 5, .best_score = 1e-6};
	s = kb_dc_render_result(&h, &r, &pl, 0, 2000);
	ck_assert_ptr_nonnull(
		strstr(s, "your best on CPU stays 1.00 µs (rank #5)"));
	free(s);
	pl = (struct kb_dc_placement){.known = 1,
				      .is_best = 1,
				      .rank = 5,
				      .had_prev = 1,
				      .prev_score = 2e-6,
				      .best_score = 1.5e-6};
	s = kb_dc_render_result(&h, &r, &pl, 0, 2000);
	ck_assert_ptr_nonnull(
		strstr(s, "Rank **#5** on CPU · personal best (was 2.00 µs)"));
	free(s);
	char *line = kb_dc_render_ranked_line("42", &h, &pl, 1.5e-6);
	ck_assert_ptr_nonnull(
		strstr(line, "<@42>'s submission #9 to `vectorsum_cpu`:\n> "));
	ck_assert_ptr_nonnull(
		strstr(line, "personal best on CPU: 1.50 µs (#5)"));
	free(line);

	/* A compile error shows the compiler's output, cut to fit. */
	struct kb_buf big = {0};
	for (int i = 0; i < 400; i++)
		kb_buf_printf(&big, "error: line %d\n", i);
	comp.success = 0;
	comp.stderr = big.data;
	comp.stdout = (char *)"";
	r.n_runs = 0;
	r.has_score = 0;
	r.verdict = KB__VERDICT__VERDICT_COMPILE_ERROR;
	s = kb_dc_render_result(&h, &r, NULL, 1, 2000);
	ck_assert_ptr_nonnull(strstr(s, "❌ **Compile error**"));
	ck_assert_ptr_nonnull(strstr(s, "error: line 0"));
	ck_assert_ptr_nonnull(strstr(s, "[… cut]"));
	ck_assert_uint_le(kb_dc_text_units(s), 2000);
	/* The code block is closed. */
	size_t fences = 0;
	for (const char *q = s; (q = strstr(q, "```")); q += 3)
		fences++;
	ck_assert_uint_eq(fences % 2, 0);
	free(s);
	kb_buf_free(&big);
}
END_TEST

/* The short report tells the outcome the API's job tells (results.h):
 * a ranked submission that is not ranked says so and why, as upstream. */
START_TEST(result_outcome)
{
	Kb__RunResult t = run("test", 1, NULL, 0),
		      l = run("leaderboard", 1, NULL, 0);
	Kb__RunResult p = run("private", 0, NULL, 0);
	Kb__RunResult *runs[] = {&t, &l, &p};
	Kb__Result r = KB__RESULT__INIT;
	struct kb_dc_sub_head h = {7, "vectorsum_cpu", "CPU", "leaderboard",
				   "s.c"};

	r.runs = runs;
	r.n_runs = 3;
	r.gpu = (char *)"CPU";
	r.mode = KB__MODE__MODE_LEADERBOARD;
	r.verdict = KB__VERDICT__VERDICT_FAILED;
	char *s = kb_dc_render_result(&h, &r, NULL, 0, 2000);
	ck_assert_ptr_nonnull(strstr(
		s, "❌ **Failed** — secret validation "
		   "failed on CPU; it will not appear on the leaderboard"));
	free(s);
	/* Every run passed, yet no score was recorded: not ranked. */
	p.passed = p.success = 1;
	r.verdict = KB__VERDICT__VERDICT_PASSED;
	s = kb_dc_render_result(&h, &r, NULL, 0, 2000);
	ck_assert_ptr_nonnull(strstr(s, "❌ **Not ranked** — no leaderboard "
					"score was recorded on CPU"));
	free(s);
	r.verdict = KB__VERDICT__VERDICT_SUSPECT;
	r.error = (char *)"benchmark 0 ran below the device's floor";
	s = kb_dc_render_result(&h, &r, NULL, 0, 2000);
	ck_assert_ptr_nonnull(strstr(s, "**Suspect timing**"));
	ck_assert_ptr_nonnull(
		strstr(s, "— benchmark 0 ran below the device's floor"));
	free(s);
}
END_TEST

START_TEST(announce)
{
	struct kb_dc_podium before = {
		2, {"discord-1", "bob"}, {"Ann", "Bob"}, {1e-6, 2e-6}};
	struct kb_dc_podium after = before;

	ck_assert_ptr_null(kb_dc_render_announce("lb", "CPU", &before, &after));
	/* A newcomer takes #1. */
	after = (struct kb_dc_podium){3,
				      {"discord-7", "discord-1", "bob"},
				      {"Cy", "Ann", "Bob"},
				      {5e-7, 1e-6, 2e-6}};
	char *s = kb_dc_render_announce("lb", "CPU", &before, &after);
	ck_assert_ptr_nonnull(s);
	ck_assert_ptr_nonnull(strstr(s, "<@7> takes #1 with 500 ns!"));
	ck_assert_ptr_nonnull(strstr(s, "🥉 **Bob** — 2.00 µs"));
	free(s);
	/* Someone enters at #2 and pushes #3 out. */
	before = after;
	after = (struct kb_dc_podium){3,
				      {"discord-7", "discord-8", "discord-1"},
				      {"Cy", "Di", "Ann"},
				      {5e-7, 6e-7, 1e-6}};
	s = kb_dc_render_announce("lb", "CPU", &before, &after);
	ck_assert_ptr_nonnull(strstr(s, "<@8> enters the top 3 at #2"));
	ck_assert_ptr_nonnull(strstr(s, "**Bob** leaves the top 3."));
	ck_assert_ptr_null(strstr(s, "takes #1"));
	free(s);
	/* Reordering inside the top 3 below #1 is no news. */
	before = after;
	after = (struct kb_dc_podium){3,
				      {"discord-7", "discord-1", "discord-8"},
				      {"Cy", "Ann", "Di"},
				      {5e-7, 5.5e-7, 6e-7}};
	ck_assert_ptr_null(kb_dc_render_announce("lb", "CPU", &before, &after));
	ck_assert_ptr_null(kb_dc_snowflake_of("github-3"));
	ck_assert_ptr_null(kb_dc_snowflake_of("discord-"));
	ck_assert_str_eq(kb_dc_snowflake_of("discord-12"), "12");
}
END_TEST

START_TEST(directives)
{
	const char *code = "// hi\n//!POPCORN leaderboard vectorsum_cpu\r\n"
			   "#!POPCORN gpus CPU, H100\nint x;\n";
	char out[64];

	ck_assert_int_eq(kb_dc_directive(code, strlen(code), "leaderboard", out,
					 sizeof(out)),
			 1);
	ck_assert_str_eq(out, "vectorsum_cpu");
	ck_assert_int_eq(kb_dc_directive(code, strlen(code), "gpu", out,
					 sizeof(out)),
			 1);
	ck_assert_str_eq(out, "CPU");
	ck_assert_int_eq(kb_dc_directive("int x;", 6, "gpu", out, sizeof(out)),
			 0);
	ck_assert_int_eq(kb_dc_directive(code, strlen(code), "leaderboard", out,
					 4),
			 -EINVAL);
}
END_TEST

/* ---- rate limits ---- */

static void hdr(struct kb_dc_rl *rl, const char *line)
{
	kb_dc_rl_header(rl, line, strlen(line));
}

START_TEST(ratelimit)
{
	struct kb_dc_rl rl;
	int global;

	kb_dc_rl_init(&rl);
	hdr(&rl, "x-ratelimit-remaining: 0\r\n");
	hdr(&rl, "X-RateLimit-Reset-After: 1.250\r\n");
	hdr(&rl, "X-RateLimit-Bucket: abcd\r\n");
	hdr(&rl, "Content-Type: application/json\r\n");
	ck_assert_int_eq(rl.has_remaining, 1);
	ck_assert_int_eq(rl.remaining, 0);
	ck_assert_str_eq(rl.bucket, "abcd");
	ck_assert_double_eq_tol(kb_dc_rl_wait(&rl, 200, "{}", 2, &global), 1.25,
				1e-9);
	ck_assert_int_eq(global, 0);

	/* 429: the body's retry_after wins, global from the body. */
	kb_dc_rl_init(&rl);
	hdr(&rl, "Retry-After: 3");
	const char *b =
		"{\"message\":\"You are being rate limited.\",\"retry_after\":0.5,"
		"\"global\":true}";
	ck_assert_double_eq_tol(kb_dc_rl_wait(&rl, 429, b, strlen(b), &global),
				0.5, 1e-9);
	ck_assert_int_eq(global, 1);
	/* Without a body: Retry-After; scope global from the header. */
	hdr(&rl, "X-RateLimit-Scope: global");
	ck_assert_double_eq_tol(kb_dc_rl_wait(&rl, 429, "", 0, &global), 3,
				1e-9);
	ck_assert_int_eq(global, 1);
	/* Nothing at all: one second. Remaining > 0: no wait. */
	kb_dc_rl_init(&rl);
	ck_assert_double_eq_tol(kb_dc_rl_wait(&rl, 429, "oops", 4, &global), 1,
				1e-9);
	hdr(&rl, "X-RateLimit-Remaining: 4");
	hdr(&rl, "X-RateLimit-Reset-After: 9");
	ck_assert_double_eq_tol(kb_dc_rl_wait(&rl, 200, "", 0, &global), 0,
				1e-9);
	/* Absurd waits are capped. */
	b = "{\"retry_after\":100000}";
	ck_assert_double_eq_tol(kb_dc_rl_wait(&rl, 429, b, strlen(b), &global),
				600, 1e-9);

	char key[160];
	kb_dc_route_key("/webhooks/1/tok/messages/@original", key, sizeof(key));
	ck_assert_str_eq(key, "webhooks/1/tok");
	kb_dc_route_key("/webhooks/1/tok", key, sizeof(key));
	ck_assert_str_eq(key, "webhooks/1/tok");
	kb_dc_route_key("/channels/55/messages", key, sizeof(key));
	ck_assert_str_eq(key, "channels/55");
	kb_dc_route_key("/applications/9/guilds/3/commands", key, sizeof(key));
	ck_assert_str_eq(key, "applications/9");
	kb_dc_route_key("/gateway", key, sizeof(key));
	ck_assert_str_eq(key, "gateway");
}
END_TEST

/* ---- the command set ---- */

static void check_options(json_t *opts, const char *where)
{
	size_t i;
	json_t *o;
	int optional_seen = 0;

	ck_assert_msg(json_array_size(opts) <= 25, "%s: too many options",
		      where);
	json_array_foreach(opts, i, o)
	{
		const char *name =
			json_string_value(json_object_get(o, "name"));
		const char *desc =
			json_string_value(json_object_get(o, "description"));
		int type = (int)json_integer_value(json_object_get(o, "type"));
		ck_assert_ptr_nonnull(name);
		ck_assert_ptr_nonnull(desc);
		ck_assert_msg(strlen(name) >= 1 && strlen(name) <= 32, "%s",
			      name);
		for (const char *c = name; *c; c++)
			ck_assert_msg((*c >= 'a' && *c <= 'z') ||
					      (*c >= '0' && *c <= '9') ||
					      *c == '-' || *c == '_',
				      "%s: bad name %s", where, name);
		ck_assert_msg(kb_dc_text_units(desc) >= 1 &&
				      kb_dc_text_units(desc) <= 100,
			      "%s/%s: description of %zu units", where, name,
			      kb_dc_text_units(desc));
		if (type == 1 || type == 2) {
			check_options(json_object_get(o, "options"), name);
			continue;
		}
		int required = json_is_true(json_object_get(o, "required"));
		ck_assert_msg(!(required && optional_seen),
			      "%s: required %s after an "
			      "optional option",
			      where, name);
		optional_seen |= !required;
	}
}

START_TEST(command_set)
{
	json_t *cmds = kb_dc_commands_json();
	char url[256];
	size_t i;
	json_t *c;

	ck_assert_ptr_nonnull(cmds);
	ck_assert_uint_eq(json_array_size(cmds), 2);
	json_array_foreach(cmds, i, c)
	{
		ck_assert_int_eq(json_integer_value(json_object_get(c, "type")),
				 1);
		check_options(json_object_get(c, "options"),
			      json_string_value(json_object_get(c, "name")));
	}
	char *s = json_dumps(cmds, JSON_COMPACT);
	ck_assert_ptr_nonnull(strstr(s, "\"name\":\"ranked\""));
	ck_assert_ptr_nonnull(strstr(s, "\"name\":\"show-personal\""));
	ck_assert_ptr_nonnull(strstr(s, "\"name\":\"get-submission\""));
	ck_assert_ptr_nonnull(strstr(s, "\"name\":\"reload-problems\""));
	free(s);
	json_decref(cmds);

	ck_assert_int_eq(kb_dc_commands_url("http://x/api/v10/", "9", "5", url,
					    sizeof(url)),
			 0);
	ck_assert_str_eq(url,
			 "http://x/api/v10/applications/9/guilds/5/commands");
	ck_assert_int_eq(kb_dc_commands_url("http://x/api/v10", "9", "", url,
					    sizeof(url)),
			 0);
	ck_assert_str_eq(url, "http://x/api/v10/applications/9/commands");
	ck_assert_int_eq(kb_dc_commands_url("http://x", "9", NULL, url, 10),
			 -ENAMETOOLONG);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("discord_pure");
	TCase *tc = tcase_create("all");

	tcase_add_test(tc, verify_good_forged_stale);
	tcase_add_test(tc, hex_decode);
	tcase_add_test(tc, parse_submit);
	tcase_add_test(tc, parse_ping_autocomplete_dm_bad);
	tcase_add_test(tc, answers);
	tcase_add_test(tc, units_clean_fit);
	tcase_add_test(tc, split_pack);
	tcase_add_test(tc, seconds);
	tcase_add_test(tc, progress);
	tcase_add_test(tc, result_report);
	tcase_add_test(tc, result_outcome);
	tcase_add_test(tc, announce);
	tcase_add_test(tc, directives);
	tcase_add_test(tc, ratelimit);
	tcase_add_test(tc, command_set);
	suite_add_tcase(s, tc);
	return kb_check_run(s);
}
