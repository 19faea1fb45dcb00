/* The REST client (kb_dc_rest) against a fake Discord: order, coalescing,
 * rate limits (429 retry_after, route and global; Remaining/Reset-After),
 * retries, uploads, registration and attachment downloads. */
#include <check.h>
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "discord/commands.h"
#include "discord/rest.h"
#include "fake_discord.h"
#include "kb_budget.h"
#include "kb_check_main.h"
#include "kb_log.h"
#include "kb_util.h"

static struct fake_discord *fd;
static struct kb_dc_rest *rest;

static void up(void)
{
	char err[256];

	kb_log_init("test", KB_LOG_WARN, 0);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	fd = fd_start();
	ck_assert_ptr_nonnull(fd);
	struct kb_dc_rest_cfg cfg = {.api_base = fd_url(fd),
				     .bot_token = "bot-secret",
				     .timeout_ms = 5000,
				     .max_queue = 100};
	rest = kb_dc_rest_new(&cfg, err, sizeof(err));
	ck_assert_msg(rest != NULL, "%s", err);
}

static void down(void)
{
	kb_dc_rest_destroy(rest, 0);
	fd_stop(fd);
}

static struct kb_dc_call *edit(const char *token, const char *content,
			       int coalesce)
{
	struct kb_dc_call *c = kb_dc_call_new(
		"PATCH", "/webhooks/9/%s/messages/@original", token);
	char json[256], key[64];

	snprintf(json, sizeof(json), "{\"content\":\"%s\"}", content);
	snprintf(key, sizeof(key), "edit:%s", token);
	kb_dc_call_set(&c->json, json);
	kb_dc_call_set(&c->order_key, token);
	if (coalesce)
		kb_dc_call_set(&c->coalesce_key, key);
	snprintf(c->what, sizeof(c->what), "edit %s", content);
	return c;
}

static struct fd_call get(size_t i)
{
	struct fd_call c;

	ck_assert_int_eq(fd_get(fd, i, &c), 0);
	return c;
}

START_TEST(coalesce_order_429)
{
	up();
	fd_rule(fd, "PATCH", "/webhooks/9/t1/", 429,
		"{\"message\":\"You are being rate limited.\",\"retry_after\":3.0,"
		"\"global\":false}",
		NULL, 1);
	/* 3 s: time for B, C and F to be queued before A's retry is due,
	 * also on a loaded machine. */
	ck_assert_int_eq(kb_dc_rest_submit(rest, edit("t1", "A", 1)), 0);
	ck_assert_uint_eq(fd_wait(fd, "PATCH", NULL, NULL, 1, 5000), 1);
	/* A was refused; B and C replace each other; F must follow C. */
	ck_assert_int_eq(kb_dc_rest_submit(rest, edit("t1", "B", 1)), 0);
	ck_assert_int_eq(kb_dc_rest_submit(rest, edit("t1", "C", 1)), 0);
	struct kb_dc_call *f = kb_dc_call_new("POST", "/webhooks/9/t1");
	kb_dc_call_set(&f->json, "{\"content\":\"F\"}");
	kb_dc_call_set(&f->order_key, "t1");
	ck_assert_int_eq(kb_dc_rest_submit(rest, f), 0);
	ck_assert_uint_eq(fd_wait(fd, "POST", "/webhooks/9/t1", NULL, 1, 30000),
			  1);
	kb_dc_rest_destroy(rest, 2000);
	rest = NULL;

	ck_assert_uint_eq(fd_ncalls(fd), 3);
	struct fd_call a = get(0), c = get(1), fo = get(2);
	ck_assert_int_eq(a.status, 429);
	ck_assert_str_eq(c.method, "PATCH");
	ck_assert_str_eq(c.payload, "{\"content\":\"C\"}");
	ck_assert_int_eq(c.status, 200);
	ck_assert_msg(c.at - a.at >= 2.99, "retry after %.3f s", c.at - a.at);
	ck_assert_str_eq(fo.payload, "{\"content\":\"F\"}");
	ck_assert(fo.at >= c.at);
	/* Webhook calls carry no bot token. */
	ck_assert_str_eq(c.auth, "");
	fd_call_free(&a);
	fd_call_free(&c);
	fd_call_free(&fo);
	fd_stop(fd);
}
END_TEST

START_TEST(route_and_global_limits)
{
	up();
	/* A global 429 on a channel holds every route. */
	fd_rule(fd, "POST", "/channels/", 429,
		"{\"retry_after\":0.4,\"global\":true}", NULL, 1);
	struct kb_dc_call *c = kb_dc_call_new("POST", "/channels/55/messages");
	kb_dc_call_set(&c->json, "{\"content\":\"hello\"}");
	c->bot_auth = 1;
	ck_assert_int_eq(kb_dc_rest_submit(rest, c), 0);
	ck_assert_uint_eq(fd_wait(fd, "POST", "/channels/55", NULL, 1, 5000),
			  1);
	ck_assert_int_eq(kb_dc_rest_submit(rest, edit("t3", "x", 0)), 0);
	ck_assert_uint_eq(fd_wait(fd, "POST", "/channels/55", NULL, 2, 5000),
			  2);
	ck_assert_uint_eq(fd_wait(fd, "PATCH", "t3", NULL, 1, 5000), 1);
	size_t n = fd_ncalls(fd);
	double first429 = 0, t3 = 0, retried = 0;
	for (size_t i = 0; i < n; i++) {
		struct fd_call x = get(i);
		if (strstr(x.path, "/channels/") && x.status == 429)
			first429 = x.at;
		else if (strstr(x.path, "/channels/")) {
			retried = x.at;
			ck_assert_str_eq(x.auth, "Bot bot-secret");
		} else if (strstr(x.path, "t3"))
			t3 = x.at;
		fd_call_free(&x);
	}
	ck_assert_msg(retried - first429 >= 0.39,
		      "channel retried after %.3f s", retried - first429);
	ck_assert_msg(t3 - first429 >= 0.39, "another route went after %.3f s",
		      t3 - first429);
	struct kb_dc_rest_stats st;
	kb_dc_rest_stats(rest, &st);
	ck_assert_int_eq(st.rate_limited, 1);
	down();
}
END_TEST

START_TEST(reset_after_waits)
{
	up();
	/* The answer says: no requests left on this route, reset in 3 s
	 * (time for the test to queue both calls, also under load). The
	 * same route waits; another does not. */
	fd_rule(fd, "PATCH", "/webhooks/9/t4/", 200, NULL,
		"X-RateLimit-Remaining: 0\nX-RateLimit-Reset-After: 3", 1);
	ck_assert_int_eq(kb_dc_rest_submit(rest, edit("t4", "1", 0)), 0);
	ck_assert_uint_eq(fd_wait(fd, "PATCH", "t4", NULL, 1, 5000), 1);
	ck_assert_int_eq(kb_dc_rest_submit(rest, edit("t4", "2", 0)), 0);
	ck_assert_int_eq(kb_dc_rest_submit(rest, edit("t9", "3", 0)), 0);
	ck_assert_uint_eq(fd_wait(fd, "PATCH", "t4", NULL, 2, 30000), 2);
	ck_assert_uint_eq(fd_wait(fd, "PATCH", "t9", NULL, 1, 5000), 1);
	/* The other route went before the same route's reset (an order, not
	 * a duration: load may delay it, the reset delays the second t4 by
	 * at least its 3 s); how soon it went is a budget. */
	struct fd_call a = get(0), b = get(1), c = get(2);
	ck_assert_msg(strstr(b.path, "t9"),
		      "other route went after the same route");
	kb_budget("discord rest: another route's wait", b.at - a.at, 0.5, "s");
	ck_assert_msg(strstr(c.path, "t4") && c.at - a.at >= 2.99,
		      "same route waited %.3f s", c.at - a.at);
	fd_call_free(&a);
	fd_call_free(&b);
	fd_call_free(&c);
	/* Reset-After alone (Remaining left) is no reason to wait: the
	 * second goes long before the reset would have let it. */
	fd_rule(fd, "PATCH", "/webhooks/9/t10/", 200, NULL,
		"X-RateLimit-Remaining: 3\nX-RateLimit-Reset-After: 120", 1);
	ck_assert_int_eq(kb_dc_rest_submit(rest, edit("t10", "1", 0)), 0);
	ck_assert_int_eq(kb_dc_rest_submit(rest, edit("t10", "2", 0)), 0);
	ck_assert_uint_eq(fd_wait(fd, "PATCH", "t10", NULL, 2, 60000), 2);
	down();
}
END_TEST

START_TEST(min_gap)
{
	up();
	/* Edits of one message reach Discord at least min_gap_ms apart, also
	 * when the first had to wait for a retry. */
	fd_rule(fd, "PATCH", "/webhooks/9/g1/", 429, "{\"retry_after\":0.3}",
		NULL, 1);
	struct kb_dc_call *c = edit("g1", "1", 1);
	c->min_gap_ms = 800;
	ck_assert_int_eq(kb_dc_rest_submit(rest, c), 0);
	ck_assert_uint_eq(fd_wait(fd, "PATCH", "g1", NULL, 2, 5000), 2);
	c = edit("g1", "2", 1);
	c->min_gap_ms = 800;
	ck_assert_int_eq(kb_dc_rest_submit(rest, c), 0);
	ck_assert_uint_eq(fd_wait(fd, "PATCH", "g1", NULL, 3, 5000), 3);
	struct fd_call a = get(1), b = get(2);
	ck_assert_int_eq(a.status, 200);
	ck_assert_str_eq(b.payload, "{\"content\":\"2\"}");
	ck_assert_msg(b.at - a.at >= 0.79, "edits %.3f s apart", b.at - a.at);
	fd_call_free(&a);
	fd_call_free(&b);
	down();
}
END_TEST

START_TEST(retries_and_drops)
{
	up();
	fd_rule(fd, "PATCH", "/webhooks/9/t5/", 502, NULL, NULL, 1);
	fd_rule(fd, "PATCH", "/webhooks/9/t6/", 404, NULL, NULL, 2);
	fd_rule(fd, "PATCH", "/webhooks/9/t7/", 400,
		"{\"message\":\"Invalid Form Body\"}", NULL, 5);
	ck_assert_int_eq(kb_dc_rest_submit(rest, edit("t5", "x", 0)), 0);
	struct kb_dc_call *c = edit("t6", "y", 0);
	c->retry_404_until_ms = (int64_t)(kb_mono_s() * 1e3) + 60000;
	ck_assert_int_eq(kb_dc_rest_submit(rest, c), 0);
	ck_assert_int_eq(kb_dc_rest_submit(rest, edit("t7", "z", 0)), 0);
	ck_assert_uint_eq(fd_wait(fd, "PATCH", "t5", NULL, 2, 30000), 2);
	ck_assert_uint_eq(fd_wait(fd, "PATCH", "t6", NULL, 3, 60000), 3);
	ck_assert_uint_eq(fd_wait(fd, "PATCH", "t7", NULL, 2, 1500),
			  1); /* no retry */
	struct kb_dc_rest_stats st;
	kb_dc_rest_stats(rest, &st);
	ck_assert_int_eq(st.sent, 2);
	ck_assert_int_eq(st.dropped, 1);
	down();
}
END_TEST

START_TEST(upload)
{
	up();
	struct kb_dc_call *c = edit("t8", "with files", 0);
	ck_assert_int_eq(kb_dc_call_add_file(c, "report.txt",
					     "line 1\nline 2\n", 14),
			 0);
	ck_assert_int_eq(kb_dc_call_add_file(c, "code.c", "int x;", 6), 0);
	ck_assert_int_eq(kb_dc_rest_submit(rest, c), 0);
	ck_assert_uint_eq(fd_wait(fd, "PATCH", "t8", NULL, 1, 5000), 1);
	struct fd_call x = get(0);
	ck_assert_str_eq(x.payload, "{\"content\":\"with files\"}");
	ck_assert_uint_eq(x.nfiles, 2);
	ck_assert_str_eq(x.file_name[0], "report.txt");
	ck_assert_str_eq(x.file[0], "line 1\nline 2\n");
	ck_assert_str_eq(x.file_name[1], "code.c");
	ck_assert_str_eq(x.file[1], "int x;");
	fd_call_free(&x);
	down();
}
END_TEST

START_TEST(drain_on_destroy)
{
	up();
	for (int i = 0; i < 5; i++) {
		char tok[8];
		snprintf(tok, sizeof(tok), "d%d", i);
		ck_assert_int_eq(kb_dc_rest_submit(rest, edit(tok, "bye", 0)),
				 0);
	}
	kb_dc_rest_destroy(rest, 5000);
	rest = NULL;
	ck_assert_uint_eq(fd_ncalls(fd), 5);
	fd_stop(fd);
}
END_TEST

START_TEST(register_commands)
{
	char err[512];

	up();
	fd_rule(fd, "PUT", "/applications/", 429, "{\"retry_after\":0.2}", NULL,
		1);
	int n = kb_dc_register(fd_url(fd), "9", "77", "bot-secret", err,
			       sizeof(err));
	ck_assert_msg(n == 2, "registered %d: %s", n, err);
	n = kb_dc_register(fd_url(fd), "9", "", "bot-secret", err, sizeof(err));
	ck_assert_int_eq(n, 2);
	ck_assert_uint_eq(fd_ncalls(fd), 3);
	struct fd_call a = get(1), b = get(2);
	ck_assert_str_eq(a.method, "PUT");
	ck_assert_str_eq(a.path, "/applications/9/guilds/77/commands");
	ck_assert_str_eq(a.auth, "Bot bot-secret");
	ck_assert_str_eq(b.path, "/applications/9/commands");
	json_t *j = json_loads(a.payload, 0, NULL);
	ck_assert_uint_eq(json_array_size(j), 2);
	json_decref(j);
	fd_call_free(&a);
	fd_call_free(&b);
	/* Without a token nothing is sent. */
	ck_assert_int_eq(kb_dc_register(fd_url(fd), "9", "", "", err,
					sizeof(err)),
			 -EINVAL);
	/* Discord's refusal comes back in errstr. */
	fd_rule(fd, "PUT", "/applications/", 400,
		"{\"message\":\"Invalid Form Body\"}", NULL, 1);
	ck_assert_int_lt(kb_dc_register(fd_url(fd), "9", "", "bot-secret", err,
					sizeof(err)),
			 0);
	ck_assert_ptr_nonnull(strstr(err, "Invalid Form Body"));
	down();
}
END_TEST

START_TEST(fetch)
{
	char err[256], url[256], *data;
	size_t len;
	char big[3000];

	up();
	memset(big, 'a', sizeof(big));
	fd_serve(fd, "/attachments/1/ok.c", "int main;", 9);
	fd_serve(fd, "/attachments/1/big.c", big, sizeof(big));
	snprintf(url, sizeof(url), "%s/attachments/1/ok.c", fd_url(fd));
	ck_assert_int_eq(
		kb_dc_fetch(url, 100, 5000, &data, &len, err, sizeof(err)), 0);
	ck_assert_uint_eq(len, 9);
	ck_assert_str_eq(data, "int main;");
	free(data);
	snprintf(url, sizeof(url), "%s/attachments/1/big.c", fd_url(fd));
	ck_assert_int_eq(kb_dc_fetch(url, 2999, 5000, &data, &len, err,
				     sizeof(err)),
			 -EFBIG);
	ck_assert_int_eq(
		kb_dc_fetch(url, 3000, 5000, &data, &len, err, sizeof(err)), 0);
	free(data);
	snprintf(url, sizeof(url), "%s/attachments/1/none.c", fd_url(fd));
	ck_assert_int_eq(kb_dc_fetch(url, 100, 5000, &data, &len, err,
				     sizeof(err)),
			 -EIO);
	ck_assert_ptr_nonnull(strstr(err, "404"));
	ck_assert_int_eq(kb_dc_fetch("file:///etc/passwd", 100, 5000, &data,
				     &len, err, sizeof(err)),
			 -EIO);
	down();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("discord_rest");
	TCase *tc = tcase_create("all");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, coalesce_order_429);
	tcase_add_test(tc, route_and_global_limits);
	tcase_add_test(tc, reset_after_waits);
	tcase_add_test(tc, min_gap);
	tcase_add_test(tc, retries_and_drops);
	tcase_add_test(tc, upload);
	tcase_add_test(tc, drain_on_destroy);
	tcase_add_test(tc, register_commands);
	tcase_add_test(tc, fetch);
	suite_add_tcase(s, tc);
	return kb_check_run(s);
}
