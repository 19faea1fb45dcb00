/* kb-gateway over HTTP: every status code of the first API slice, the 202
 * shape, the Submission that lands on kb.submissions.CPU, the Redis records,
 * rankings and results, Kafka down (503), SIGTERM (exit 0), and that no
 * response or log line carries a secret seed. */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <curl/curl.h>

#include "gw_env.h"
#include "kb.pb-c.h"
#include "kb_kafka.h"
#include "kb_taskstore.h"
#include "kb_util.h"
#include "kb_check_main.h"

#define BND "gwTestBoundary42"
#define SUBMIT_CPU(mode) "/submission/gw_sum_cpu/CPU/" mode

static struct gw_env E;

static void no_seed_in_log(void)
{
	char *log = NULL;
	size_t len = 0;

	ck_assert_int_eq(kb_read_file(E.log, 64 << 20, &log, &len), 0);
	for (int i = 0; i < E.nseeds; i++)
		ck_assert_msg(!strstr(log, E.seeds[i]),
			      "gateway log holds a seed");
	ck_assert_msg(!strstr(log, GW_ADMIN_TOKEN),
		      "gateway log holds the admin token");
	free(log);
}

static void expect_clean_exit(void)
{
	int status = gw_env_stop_gateway(&E);
	ck_assert_msg(
		WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"kb-gateway did not exit 0 on SIGTERM (status 0x%x); log %s",
		status, E.log);
	no_seed_in_log();
}

static const char *hget(const char *key, const char *field, char *buf,
			size_t size)
{
	redisReply *r = redisCommand(E.rc, "HGET %s %s", key, field);
	ck_assert_ptr_nonnull(r);
	if (r->type != REDIS_REPLY_STRING) {
		freeReplyObject(r);
		return NULL;
	}
	snprintf(buf, size, "%s", r->str);
	freeReplyObject(r);
	return buf;
}

static void redis_ok(const char *fmt, const char *a, const char *b)
{
	redisReply *r = redisCommand(E.rc, fmt, a, b);
	ck_assert_ptr_nonnull(r);
	ck_assert_msg(r->type != REDIS_REPLY_ERROR, "redis: %s", r->str);
	freeReplyObject(r);
}

/* ---- reads, routing, admin ---- */

START_TEST(reads_routing_and_admin)
{
	struct gw_resp r;
	json_t *j;

	gw_env_up(&E, 0, GW_ADMIN_TOKEN);

	r = gw_req(&E, "GET", "/health", NULL, NULL, 0);
	ck_assert_int_eq(r.code, 200);
	j = gw_json(&r);
	ck_assert_str_eq(json_string_value(json_object_get(j, "status")), "ok");
	json_decref(j);
	gw_resp_free(&r);
	r = gw_req(&E, "HEAD", "/health", NULL, NULL, 0);
	ck_assert_int_eq(r.code, 200);
	ck_assert_uint_eq(r.len, 0);
	gw_resp_free(&r);

	/* The upstream shape popcorn-cli reads: name, description, task. */
	r = gw_req(&E, "GET", "/leaderboards", NULL, NULL, 0);
	ck_assert_int_eq(r.code, 200);
	ck_assert_msg(!strstr(r.body, "secret"),
		      "leaderboards mention a secret");
	j = gw_json(&r);
	ck_assert(json_is_array(j));
	ck_assert_uint_eq(json_array_size(j), 2);
	json_t *lb = NULL, *e;
	size_t i;
	json_array_foreach(
		j, i,
		e) if (strcmp(json_string_value(json_object_get(e, "name")),
			      "gw_sum_cpu") == 0) lb = e;
	ck_assert_ptr_nonnull(lb);
	ck_assert_str_eq(json_string_value(json_object_get(lb, "description")),
			 "Sum n floats (gateway test fixture).");
	ck_assert(json_is_null(json_object_get(lb, "deadline")));
	ck_assert_str_eq(json_string_value(json_array_get(
				 json_object_get(lb, "gpu_types"), 0)),
			 "CPU");
	json_t *task = json_object_get(lb, "task");
	ck_assert(json_is_object(task));
	ck_assert_str_eq(json_string_value(json_object_get(task, "lang")), "c");
	ck_assert_str_eq(json_string_value(
				 json_object_get(json_object_get(task, "files"),
						 "submission.c")),
			 "@SUBMISSION@");
	ck_assert_ptr_nonnull(
		strstr(json_string_value(json_object_get(
			       json_object_get(task, "files"), "eval.c")),
		       "int main"));
	ck_assert_int_eq(
		json_integer_value(json_object_get(
			json_array_get(json_object_get(task, "tests"), 0),
			"size")),
		16);
	ck_assert_ptr_nonnull(json_string_value(
		json_object_get(json_object_get(task, "templates"), "C")));
	ck_assert_int_eq(
		json_integer_value(json_object_get(task, "ranked_timeout")),
		90);
	json_decref(j);
	gw_resp_free(&r);

	r = gw_req(&E, "GET", "/gpus/gw_sum_cpu", NULL, NULL, 0);
	ck_assert_int_eq(r.code, 200);
	ck_assert_str_eq(r.body, "[\"CPU\"]");
	gw_resp_free(&r);
	r = gw_req(&E, "GET", "/gpus/gw_gpu_only", NULL, NULL, 0);
	ck_assert_str_eq(r.body, "[\"H100\"]");
	gw_resp_free(&r);
	gw_expect_error(gw_req(&E, "GET", "/gpus/nope", NULL, NULL, 0), 404,
			"gpus of unknown");

	/* Unknown paths and wrong methods. */
	gw_expect_error(gw_req(&E, "GET", "/nope", NULL, NULL, 0), 404,
			"unknown path");
	gw_expect_error(gw_req(&E, "GET", "/submission/gw_sum_cpu", NULL, NULL,
			       0),
			404, "short path");
	r = gw_req(&E, "POST", "/health", NULL, "x", 1);
	ck_assert_ptr_nonnull(strstr(r.headers, "Allow: GET, HEAD"));
	gw_expect_error(r, 405, "POST /health");
	r = gw_req(&E, "GET", SUBMIT_CPU("test"), NULL, NULL, 0);
	ck_assert_ptr_nonnull(strstr(r.headers, "Allow: POST"));
	gw_expect_error(r, 405, "GET on submission");
	gw_expect_error(gw_req(&E, "DELETE", "/leaderboards", NULL, NULL, 0),
			405, "DELETE");

	/* Rankings of an empty board; unknown boards and gpus; paging. */
	r = gw_req(&E, "GET", "/submissions/gw_sum_cpu/CPU", NULL, NULL, 0);
	ck_assert_int_eq(r.code, 200);
	ck_assert_str_eq(r.body, "[]");
	gw_resp_free(&r);
	gw_expect_error(gw_req(&E, "GET", "/submissions/gw_sum_cpu/H100", NULL,
			       NULL, 0),
			404, "ranking gpu not offered");
	gw_expect_error(gw_req(&E, "GET", "/submissions/nope/CPU", NULL, NULL,
			       0),
			404, "ranking unknown board");
	gw_expect_error(gw_req(&E, "GET", "/submissions/gw_sum_cpu/CPU?limit=0",
			       NULL, NULL, 0),
			400, "limit 0");
	gw_expect_error(gw_req(&E, "GET",
			       "/submissions/gw_sum_cpu/CPU?offset=x", NULL,
			       NULL, 0),
			400, "offset x");

	/* Admin API. */
	const char *json_h[] = {"Content-Type: application/json", NULL};
	const char *bad_tok[] = {"Authorization: Bearer wrong", NULL};
	const char *basic[] = {"Authorization: Basic " GW_ADMIN_TOKEN, NULL};
	const char *good[] = {"Authorization: Bearer " GW_ADMIN_TOKEN, NULL};
	const char *body = "{\"name\":\"alice\"}";
	r = gw_req(&E, "POST", "/admin/users", json_h, body, strlen(body));
	ck_assert_ptr_nonnull(strstr(r.headers, "WWW-Authenticate: Bearer"));
	gw_expect_error(r, 401, "admin without token");
	gw_expect_error(gw_req(&E, "POST", "/admin/users", bad_tok, body,
			       strlen(body)),
			401, "admin wrong token");
	gw_expect_error(gw_req(&E, "POST", "/admin/users", basic, body,
			       strlen(body)),
			401, "admin basic auth");
	gw_expect_error(gw_req(&E, "POST", "/admin/users", good, "not json", 8),
			400, "admin not JSON");
	gw_expect_error(gw_req(&E, "POST", "/admin/users", good, "[1]", 3), 400,
			"admin not an object");
	gw_expect_error(gw_req(&E, "POST", "/admin/users", good,
			       "{\"nam\":\"x\"}", 11),
			400, "admin no name");
	gw_expect_error(gw_req(&E, "POST", "/admin/users", good,
			       "{\"name\":\"\"}", 11),
			400, "admin empty name");
	gw_expect_error(gw_req(&E, "POST", "/admin/users", good, NULL, 0), 400,
			"admin empty body");
	size_t big_len = 70 << 10;
	char *big = malloc(big_len);
	memset(big, ' ', big_len);
	gw_expect_error(gw_req(&E, "POST", "/admin/users", good, big, big_len),
			413, "admin huge body");
	free(big);

	char cli[80], uid[40], buf[128];
	gw_create_user(&E, "alice", cli, uid);
	ck_assert_uint_eq(strlen(uid), 16);
	ck_assert_uint_eq(strlen(cli), 64);
	redisReply *rr = redisCommand(E.rc, "GET kb:cli:%s", cli);
	ck_assert_str_eq(rr->str, uid);
	freeReplyObject(rr);
	char key[64];
	snprintf(key, sizeof(key), "kb:user:%s", uid);
	ck_assert_str_eq(hget(key, "name", buf, sizeof(buf)), "alice");
	ck_assert_str_eq(hget(key, "banned", buf, sizeof(buf)), "0");

	/* Board records made at startup. */
	ck_assert_str_eq(hget("kb:lb:gw_sum_cpu", "visibility", buf,
			      sizeof(buf)),
			 "public");
	ck_assert_str_eq(hget("kb:lb:gw_sum_cpu", "deadline", buf, sizeof(buf)),
			 "");
	ck_assert_str_ne(E.seeds[0], E.seeds[1]);
	for (const char *c = E.seeds[0]; *c; c++)
		ck_assert(*c >= '0' && *c <= '9');

	/* A restart keeps the seeds (HSETNX), and exits 0 again. */
	char before[32];
	snprintf(before, sizeof(before), "%s", E.seeds[0]);
	expect_clean_exit();
	gw_env_restart_gateway(&E, GW_ADMIN_TOKEN);
	ck_assert_str_eq(hget("kb:lb:gw_sum_cpu", "secret_seed", buf,
			      sizeof(buf)),
			 before);
	r = gw_req(&E, "GET", "/health", NULL, NULL, 0);
	ck_assert_int_eq(r.code, 200);
	gw_resp_free(&r);
	expect_clean_exit();
}
END_TEST

/* ---- submissions ---- */

static struct gw_resp submit_raw(const char *path, const char *cli,
				 const char *content_type, const void *body,
				 size_t len)
{
	char h1[128], h2[256];
	const char *h[3] = {NULL, NULL, NULL};
	int n = 0;

	if (cli) {
		snprintf(h1, sizeof(h1), "X-Popcorn-Cli-Id: %s", cli);
		h[n++] = h1;
	}
	if (content_type) {
		snprintf(h2, sizeof(h2), "Content-Type: %s", content_type);
		h[n++] = h2;
	}
	return gw_req(&E, "POST", path, h, body, len);
}

static struct gw_resp submit_file(const char *path, const char *cli,
				  const void *code, size_t len)
{
	size_t blen;
	char *body = gw_multipart(BND, "file", "sub.c", code, len, &blen);
	struct gw_resp r = submit_raw(
		path, cli, "multipart/form-data; boundary=" BND, body, blen);
	free(body);
	return r;
}

static long accepted_id(struct gw_resp r)
{
	ck_assert_msg(r.code == 202, "HTTP %ld: %s", r.code, r.body);
	json_t *j = gw_json(&r);
	json_t *details = json_object_get(j, "details");
	ck_assert_str_eq(json_string_value(json_object_get(j, "status")),
			 "accepted");
	ck_assert(json_is_integer(json_object_get(details, "id")));
	long id = (long)json_integer_value(json_object_get(details, "id"));
	ck_assert_int_eq(
		json_integer_value(json_object_get(details, "job_status_id")),
		id);
	ck_assert_int_gt(id, 0);
	json_decref(j);
	gw_resp_free(&r);
	return id;
}

static Kb__Submission *consume(long id, Kb__Submission **other, long other_id)
{
	const char *topics[] = {"kb.submissions.CPU"};
	char err[256], group[64];
	Kb__Submission *found = NULL;

	snprintf(group, sizeof(group), "gw-test-%d", getpid());
	kb_consumer *c = kb_consumer_new(E.brokers, group, topics, 1, NULL, err,
					 sizeof(err));
	ck_assert_msg(c != NULL, "consumer: %s", err);
	*other = NULL;
	for (double end = kb_mono_s() + 60;
	     kb_mono_s() < end && (!found || !*other);) {
		kb_message m;
		int rc = kb_consumer_poll(c, 200, &m);
		ck_assert_int_ge(rc, 0);
		if (rc == 0)
			continue;
		char key[32];
		snprintf(key, sizeof(key), "%.*s", (int)m.key_len,
			 (const char *)m.key);
		Kb__Submission *s =
			kb__submission__unpack(NULL, m.value_len, m.value);
		ck_assert_msg(s != NULL, "undecodable Submission, key %s", key);
		ck_assert_uint_eq(s->id, strtoull(key, NULL, 10));
		for (int i = 0; i < E.nseeds; i++)
			ck_assert_msg(
				!s->has_secret_seed ||
					s->mode == KB__MODE__MODE_LEADERBOARD,
				"seed in a non-ranked Submission");
		if ((long)s->id == id && !found)
			found = s;
		else if ((long)s->id == other_id && !*other)
			*other = s;
		else
			kb__submission__free_unpacked(s, NULL);
		kb_message_release(&m);
	}
	kb_consumer_destroy(c);
	ck_assert_msg(found && *other,
		      "Submissions %ld/%ld not on kb.submissions.CPU", id,
		      other_id);
	return found;
}

/* Gives s the task its task_ref names, read from Redis. */
static void attach_stored(Kb__Submission *s)
{
	char err[256];
	redisReply *r = redisCommand(E.rc, "GET kb:task:%s", s->task_ref);

	ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
	ck_assert_msg(kb_taskstore_attach(s, (const uint8_t *)r->str, r->len,
					  err, sizeof(err)) == 0,
		      "%s", err);
	freeReplyObject(r);
}

/* kb_gateway_submissions_total{result="refused",reason=...} in a
 * /metrics text; 0 when absent. */
static long refused(const char *text, const char *reason)
{
	char series[128];
	const char *p;

	snprintf(
		series, sizeof(series),
		"\nkb_gateway_submissions_total{result=\"refused\",reason=\"%s\"} ",
		reason);
	p = text ? strstr(text, series) : NULL;
	return p ? strtol(p + strlen(series), NULL, 10) : 0;
}

START_TEST(submissions)
{
	char alice[80], alice_id[40], bob[80], bob_id[40], buf[256];
	const char *code =
		"float custom_kernel(const float *d, unsigned long n) { return 0; }\n";
	const char *directive_code =
		"#!POPCORN leaderboard some_other_board\n"
		"//!POPCORN gpu H100\n"
		"float custom_kernel(const float *d, unsigned long n) { return 1; }\n";

	/* /metrics has a listener of its own (not the API port). */
	char env_mport[64];
	const int mport = kb_test_fixed_port();
	snprintf(env_mport, sizeof(env_mport), "KB_METRICS_PORT=%d", mport);
	const char *const menv[] = {env_mport, NULL};
	E.extra_env = menv;
	gw_env_up(&E, 1, GW_ADMIN_TOKEN);
	E.extra_env = NULL;
	struct gw_env metrics = E;
	snprintf(metrics.api, sizeof(metrics.api), "http://127.0.0.1:%d",
		 mport);
	gw_create_user(&E, "alice", alice, alice_id);
	gw_create_user(&E, "bob", bob, bob_id);

	/* Refusals decided by the headers. */
	gw_expect_error(submit_file(SUBMIT_CPU("test"), NULL, code,
				    strlen(code)),
			401, "no CLI id");
	gw_expect_error(submit_file(SUBMIT_CPU("test"), "not-a-user", code,
				    strlen(code)),
			401, "unknown CLI id");
	gw_expect_error(submit_file(SUBMIT_CPU("test"), "bad id with spaces",
				    code, strlen(code)),
			401, "malformed CLI id");
	gw_expect_error(submit_file("/submission/nope/CPU/test", alice, code,
				    strlen(code)),
			404, "unknown board");
	gw_expect_error(submit_file("/submission/gw_sum_cpu/H100/test", alice,
				    code, strlen(code)),
			404, "gpu not offered");
	gw_expect_error(submit_file("/submission/gw_gpu_only/CPU/test", alice,
				    code, strlen(code)),
			404, "gpu of another board");
	gw_expect_error(submit_file("/submission/gw_sum_cpu/MI300/test", alice,
				    code, strlen(code)),
			404, "unknown gpu");
	gw_expect_error(submit_file(SUBMIT_CPU("ranked"), alice, code,
				    strlen(code)),
			400, "unknown mode");
	gw_expect_error(submit_raw(SUBMIT_CPU("test"), alice, "text/plain",
				   code, strlen(code)),
			400, "not multipart");
	gw_expect_error(submit_raw(SUBMIT_CPU("test"), alice,
				   "multipart/form-data", code, strlen(code)),
			400, "no boundary");

	/* Refusals decided by the body. */
	gw_expect_error(submit_file(SUBMIT_CPU("test"), alice, "", 0), 400,
			"empty file");
	gw_expect_error(submit_file(SUBMIT_CPU("test"), alice, "\xff\xfe bad",
				    6),
			400, "not UTF-8");
	gw_expect_error(submit_file(SUBMIT_CPU("test"), alice, "a\0b", 3), 400,
			"NUL byte");
	size_t blen;
	char *body = gw_multipart(BND, "notfile", "sub.c", code, strlen(code),
				  &blen);
	gw_expect_error(submit_raw(SUBMIT_CPU("test"), alice,
				   "multipart/form-data; boundary=" BND, body,
				   blen),
			400, "missing file field");
	free(body);
	body = gw_multipart(BND, "file", "sub.c", code, strlen(code), &blen);
	gw_expect_error(submit_raw(SUBMIT_CPU("test"), alice,
				   "multipart/form-data; boundary=" BND, body,
				   blen - 8),
			400, "truncated multipart");
	gw_expect_error(
		submit_raw(SUBMIT_CPU("test"), alice,
			   "multipart/form-data; boundary=otherBoundary", body,
			   blen),
		400, "wrong boundary");
	free(body);

	/* Sizes: 1 MiB is accepted, one byte more is 413, whether the
	 * Content-Length says so up front or the parser finds out while
	 * streaming, with or without a Content-Length. */
	size_t cap = 1 << 20;
	char *big = malloc(8u << 20);
	memset(big, 'a', 8u << 20);
	big[0] = '/';
	big[1] = '/';
	gw_expect_error(submit_file(SUBMIT_CPU("test"), alice, big, 2u << 20),
			413, "2 MiB (Content-Length)");
	gw_expect_error(submit_file(SUBMIT_CPU("test"), alice, big, cap + 1),
			413, "1 MiB + 1 (streamed)");
	body = gw_multipart(BND, "file", "sub.c", big, cap + 300000, &blen);
	char hcli[128];
	snprintf(hcli, sizeof(hcli), "X-Popcorn-Cli-Id: %s", alice);
	const char *ch[] = {
		hcli, "Content-Type: multipart/form-data; boundary=" BND, NULL};
	gw_expect_error(gw_req_chunked(&E, SUBMIT_CPU("test"), ch, body, blen),
			413, "1.3 MiB chunked");
	free(body);
	/* Far past the cap with no Content-Length: answered 413 or cut off,
	 * never accepted. */
	body = gw_multipart(BND, "file", "sub.c", big, 8u << 20, &blen);
	struct gw_resp r =
		gw_req_chunked(&E, SUBMIT_CPU("test"), ch, body, blen);
	ck_assert_msg(r.code == 413 || r.code == 0, "8 MiB chunked: HTTP %ld",
		      r.code);
	gw_resp_free(&r);
	free(body);
	ck_assert_int_eq(gw_count_keys(&E, "kb:sub:*"), 0);
	ck_assert_int_eq(gw_count_keys(&E, "kb:code:*"), 0);

	/* Every refusal above is counted once, whichever check made it. */
	r = gw_req(&metrics, "GET", "/metrics", NULL, NULL, 0);
	ck_assert_int_eq(r.code, 200);
	ck_assert_int_eq(refused(r.body, "unauthenticated"), 3);
	ck_assert_int_eq(refused(r.body, "unknown_board"), 4);
	ck_assert_int_ge(refused(r.body, "too_large"), 3);
	ck_assert_int_ge(refused(r.body, "invalid"), 9);
	gw_resp_free(&r);

	long id_max = accepted_id(
		submit_file(SUBMIT_CPU("benchmark"), alice, big, cap));
	free(big);

	/* Accepted: a real client's form (libcurl's encoder), test mode. */
	long id_test =
		accepted_id(gw_req_form(&E, SUBMIT_CPU("test"), alice, "file",
					"dir/my sub.c", code, strlen(code)));
	/* Ranked, with popcorn directives: the URL wins, the code is untouched. */
	long id_lb = accepted_id(submit_file(SUBMIT_CPU("leaderboard"), alice,
					     directive_code,
					     strlen(directive_code)));
	ck_assert_int_eq(id_test, id_max + 1);
	ck_assert_int_eq(id_lb, id_test + 1);

	/* Redis records. */
	char key[64], sha[65];
	snprintf(key, sizeof(key), "kb:sub:%ld", id_test);
	ck_assert_str_eq(hget(key, "status", buf, sizeof(buf)), "queued");
	ck_assert_str_eq(hget(key, "stage", buf, sizeof(buf)), "queued");
	ck_assert_str_eq(hget(key, "user_id", buf, sizeof(buf)), alice_id);
	ck_assert_str_eq(hget(key, "user_name", buf, sizeof(buf)), "alice");
	ck_assert_str_eq(hget(key, "lb", buf, sizeof(buf)), "gw_sum_cpu");
	ck_assert_str_eq(hget(key, "gpu", buf, sizeof(buf)), "CPU");
	ck_assert_str_eq(hget(key, "mode", buf, sizeof(buf)), "test");
	ck_assert_str_eq(hget(key, "file_name", buf, sizeof(buf)), "my sub.c");
	kb_sha256_hex(code, strlen(code), sha);
	ck_assert_str_eq(hget(key, "code_sha", buf, sizeof(buf)), sha);
	ck_assert_ptr_nonnull(hget(key, "submitted_ms", buf, sizeof(buf)));
	redisReply *rr = redisCommand(E.rc, "GET kb:code:%s", sha);
	ck_assert_str_eq(rr->str, code);
	freeReplyObject(rr);
	rr = redisCommand(E.rc, "ZSCORE kb:subs:user:%s %ld", alice_id, id_lb);
	ck_assert_int_eq(rr->type, REDIS_REPLY_STRING);
	freeReplyObject(rr);
	snprintf(key, sizeof(key), "kb:sub:%ld", id_lb);
	ck_assert_str_eq(hget(key, "mode", buf, sizeof(buf)), "leaderboard");
	ck_assert_str_eq(hget(key, "file_name", buf, sizeof(buf)), "sub.c");
	ck_assert_int_eq(gw_count_keys(&E, "kb:sub:*"), 3);

	/* The Submissions on kb.submissions.CPU. */
	Kb__Submission *lb = NULL;
	Kb__Submission *t = consume(id_test, &lb, id_lb);
	ck_assert_str_eq(t->user_id, alice_id);
	ck_assert_str_eq(t->user_name, "alice");
	ck_assert_str_eq(t->leaderboard, "gw_sum_cpu");
	ck_assert_str_eq(t->gpu, "CPU");
	ck_assert_int_eq(t->mode, KB__MODE__MODE_TEST);
	ck_assert_str_eq(t->file_name, "my sub.c");
	ck_assert_uint_eq(t->code.len, strlen(code));
	ck_assert(memcmp(t->code.data, code, t->code.len) == 0);
	ck_assert_int_eq(t->has_secret_seed, 0);
	ck_assert_uint_eq(t->secret_seed, 0);
	ck_assert_int_gt(t->submitted_at_ms, 0);
	ck_assert_uint_eq(t->attempt, 0);
	/* The task by reference: the event is the code's size, and the
	 * gateway stored the task under the reference. */
	ck_assert_ptr_null(t->task);
	ck_assert(kb_taskstore_ref_ok(t->task_ref));
	ck_assert_uint_lt(kb__submission__get_packed_size(t),
			  strlen(code) + 512);
	attach_stored(t);
	attach_stored(lb);
	ck_assert_ptr_nonnull(t->task);
	ck_assert_str_eq(t->task->lang, "c");
	ck_assert_uint_eq(t->task->n_files, 2);
	ck_assert_str_eq(t->task->files[0]->name, "submission.c");
	ck_assert_uint_eq(t->task->files[0]->content.len, strlen(code));
	ck_assert_str_eq(t->task->files[1]->name, "eval.c");
	ck_assert_ptr_nonnull(memmem(t->task->files[1]->content.data,
				     t->task->files[1]->content.len, "int main",
				     8));
	ck_assert_uint_eq(t->task->n_tests, 2);
	ck_assert_uint_eq(t->task->n_benchmarks, 1);
	ck_assert_uint_eq(t->task->test_timeout, 60);
	ck_assert_uint_eq(t->task->ranked_timeout, 90);
	ck_assert_str_eq(t->task->ranking_by, "last");
	ck_assert_uint_eq(t->task->n_config, 1);
	ck_assert_str_eq(t->task->config[0]->key, "sources");

	ck_assert_int_eq(lb->mode, KB__MODE__MODE_LEADERBOARD);
	/* A seed of its own (test_security checks which), not the board's. */
	ck_assert_int_eq(lb->has_secret_seed, 1);
	char seed[32];
	snprintf(seed, sizeof(seed), "%" PRIu64, lb->secret_seed);
	ck_assert_str_ne(seed, E.seeds[0]);
	ck_assert_str_eq(lb->leaderboard, "gw_sum_cpu");
	ck_assert_str_eq(lb->gpu, "CPU");
	ck_assert_uint_eq(lb->code.len, strlen(directive_code));
	ck_assert(memcmp(lb->code.data, directive_code, lb->code.len) == 0);
	ck_assert(memcmp(lb->task->files[0]->content.data, directive_code,
			 lb->code.len) == 0);
	kb__submission__free_unpacked(t, NULL);
	kb__submission__free_unpacked(lb, NULL);

	/* The owner reads it back; others cannot. */
	char path[64], hb[128];
	snprintf(path, sizeof(path), "/user/submissions/%ld", id_test);
	snprintf(hb, sizeof(hb), "X-Popcorn-Cli-Id: %s", alice);
	const char *ah[] = {hb, NULL};
	r = gw_req(&E, "GET", path, ah, NULL, 0);
	ck_assert_int_eq(r.code, 200);
	json_t *j = gw_json(&r);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "id")), id_test);
	ck_assert_str_eq(json_string_value(json_object_get(j, "status")),
			 "queued");
	ck_assert_str_eq(
		json_string_value(json_object_get(j, "leaderboard_name")),
		"gw_sum_cpu");
	ck_assert_str_eq(json_string_value(json_object_get(j, "mode")), "test");
	ck_assert_str_eq(json_string_value(json_object_get(j, "code")), code);
	ck_assert(json_is_false(json_object_get(j, "done")));
	ck_assert(json_is_null(json_object_get(j, "report")));
	json_decref(j);
	gw_resp_free(&r);
	char hbob[128];
	snprintf(hbob, sizeof(hbob), "X-Popcorn-Cli-Id: %s", bob);
	const char *bh[] = {hbob, NULL};
	gw_expect_error(gw_req(&E, "GET", path, bh, NULL, 0), 403,
			"other user's submission");
	gw_expect_error(gw_req(&E, "GET", path, NULL, NULL, 0), 401,
			"no CLI id");
	gw_expect_error(gw_req(&E, "GET", "/user/submissions/99999", ah, NULL,
			       0),
			404, "unknown submission");
	gw_expect_error(gw_req(&E, "GET", "/user/submissions/abc", ah, NULL, 0),
			400, "bad submission id");

	expect_clean_exit();
}
END_TEST

/* ---- rankings and results ---- */

static void put_user(const char *uid, const char *name, const char *cli)
{
	redis_ok("HSET kb:user:%s name %s", uid, name);
	if (cli)
		redis_ok("SET kb:cli:%s %s", cli, uid);
}

static void put_ranked(const char *uid, const char *score, const char *info,
		       const char *sub, const char *file)
{
	char key[64];
	redis_ok("ZADD kb:rank:gw_sum_cpu:CPU %s %s", score, uid);
	redis_ok("HSET kb:rankinfo:gw_sum_cpu:CPU %s %s", uid, info);
	snprintf(key, sizeof(key), "kb:sub:%s", sub);
	redis_ok("HSET %s file_name %s", key, file);
}

static json_t *ranking(const char *query)
{
	char path[128];
	snprintf(path, sizeof(path), "/submissions/gw_sum_cpu/CPU%s", query);
	struct gw_resp r = gw_req(&E, "GET", path, NULL, NULL, 0);
	ck_assert_msg(r.code == 200, "ranking%s: HTTP %ld %s", query, r.code,
		      r.body);
	json_t *j = gw_json(&r);
	gw_resp_free(&r);
	ck_assert(json_is_array(j));
	return j;
}

static void expect_entry(json_t *list, size_t i, long rank, const char *name,
			 long sub)
{
	json_t *e = json_array_get(list, i);
	ck_assert_msg(e != NULL, "no entry %zu in %s", i, json_dumps(list, 0));
	ck_assert_int_eq(json_integer_value(json_object_get(e, "rank")), rank);
	ck_assert_str_eq(json_string_value(json_object_get(e, "user_name")),
			 name);
	ck_assert_int_eq(
		json_integer_value(json_object_get(e, "submission_id")), sub);
}

static char *packed_result(size_t *len)
{
	Kb__Result res = KB__RESULT__INIT;
	Kb__RunResult runs[3], *rp[3];
	Kb__KeyValue kv = KB__KEY_VALUE__INIT, *kvp[1] = {&kv};
	const char *keys[] = {"test", "leaderboard", "private"};

	for (int i = 0; i < 3; i++) {
		Kb__RunResult init = KB__RUN_RESULT__INIT;
		runs[i] = init;
		runs[i].key = (char *)keys[i];
		runs[i].success = 1;
		runs[i].passed = 1;
		runs[i].duration_s = 0.5;
		runs[i].stdout = "public output\n";
		rp[i] = &runs[i];
	}
	/* What a secret run reveals must never be shown. */
	kv.key = "benchmark.0.spec";
	kv.value = "size: 100000; seed: 987654321-PRIVATE-MARKER";
	runs[2].stdout = "PRIVATE-MARKER stdout\n";
	runs[2].n_result = 1;
	runs[2].result = kvp;
	res.submission_id = 500;
	res.leaderboard = "gw_sum_cpu";
	res.gpu = "CPU";
	res.mode = KB__MODE__MODE_LEADERBOARD;
	res.user_id = "ua";
	res.n_runs = 3;
	res.runs = rp;
	res.has_score = 1;
	res.score = 0.00123;
	res.verdict = KB__VERDICT__VERDICT_PASSED;
	res.started_at_ms = 1700000000000;
	res.finished_at_ms = 1700000005000;
	*len = kb__result__get_packed_size(&res);
	char *buf = malloc(*len);
	kb__result__pack(&res, (uint8_t *)buf);
	return buf;
}

START_TEST(rankings_and_results)
{
	gw_env_up(&E, 0, NULL);

	/* Three users tie at 1.0 s; Redis orders them by member name
	 * (u_a, u_b, u_c) but the ranking goes by time, then id:
	 * u_c (t=100, #30), u_b (t=100, #31), u_a (t=200, #20). */
	put_user("u_a", "anna", NULL);
	put_user("u_b", "bert", NULL);
	put_user("u_c", "carl", NULL);
	put_user("u_d", "dora", NULL);
	put_user("u_e", "emil", NULL);
	put_ranked("u_a", "1.0", "20:200", "20", "a.c");
	put_ranked("u_b", "1.0", "31:100", "31", "b.c");
	put_ranked("u_c", "1.0", "30:100", "30", "c.c");
	put_ranked("u_d", "0.5", "40:900", "40", "d.c");
	put_ranked("u_e", "2.5", "50:50", "50", "e.c");

	json_t *all = ranking("");
	ck_assert_uint_eq(json_array_size(all), 5);
	expect_entry(all, 0, 1, "dora", 40);
	expect_entry(all, 1, 2, "carl", 30);
	expect_entry(all, 2, 3, "bert", 31);
	expect_entry(all, 3, 4, "anna", 20);
	expect_entry(all, 4, 5, "emil", 50);
	json_t *e = json_array_get(all, 1);
	ck_assert(json_real_value(json_object_get(e, "score")) == 1.0);
	ck_assert_str_eq(
		json_string_value(json_object_get(e, "submission_name")),
		"c.c");
	ck_assert_str_eq(json_string_value(json_object_get(e, "user_id")),
			 "u_c");
	ck_assert_int_eq(json_integer_value(json_object_get(e, "submitted_ms")),
			 100);
	ck_assert_str_eq(json_string_value(json_object_get(e, "submitted_at")),
			 "1970-01-01T00:00:00.100Z");
	json_decref(all);

	/* Windows that start or end inside the tie group. */
	json_t *w = ranking("?limit=1&offset=1");
	ck_assert_uint_eq(json_array_size(w), 1);
	expect_entry(w, 0, 2, "carl", 30);
	json_decref(w);
	w = ranking("?limit=2&offset=2");
	ck_assert_uint_eq(json_array_size(w), 2);
	expect_entry(w, 0, 3, "bert", 31);
	expect_entry(w, 1, 4, "anna", 20);
	json_decref(w);
	w = ranking("?offset=4");
	ck_assert_uint_eq(json_array_size(w), 1);
	expect_entry(w, 0, 5, "emil", 50);
	json_decref(w);
	w = ranking("?offset=9");
	ck_assert_uint_eq(json_array_size(w), 0);
	json_decref(w);
	w = ranking("?limit=100000");
	ck_assert_uint_eq(json_array_size(w), 5);
	json_decref(w);

	/* A finished submission with its Result. */
	put_user("ua", "alice", "cli-alice");
	put_user("ub", "bob", "cli-bob");
	redisReply *rr = redisCommand(
		E.rc,
		"HSET kb:sub:500 user_id ua user_name alice lb gw_sum_cpu gpu CPU "
		"mode leaderboard file_name k.c code_sha none submitted_ms 1700000000000 "
		"status done stage done verdict passed score 0.00123");
	freeReplyObject(rr);
	size_t len;
	char *packed = packed_result(&len);
	rr = redisCommand(E.rc, "SET kb:res:500:CPU %b", packed, len);
	freeReplyObject(rr);
	free(packed);

	const char *ah[] = {"X-Popcorn-Cli-Id: cli-alice", NULL};
	struct gw_resp r =
		gw_req(&E, "GET", "/user/submissions/500", ah, NULL, 0);
	ck_assert_msg(r.code == 200, "HTTP %ld %s", r.code, r.body);
	ck_assert_msg(!strstr(r.body, "PRIVATE-MARKER"), "secret run shown: %s",
		      r.body);
	json_t *j = gw_json(&r);
	ck_assert_str_eq(json_string_value(json_object_get(j, "status")),
			 "done");
	ck_assert_str_eq(json_string_value(json_object_get(j, "verdict")),
			 "passed");
	ck_assert(json_is_true(json_object_get(j, "done")));
	ck_assert(json_real_value(json_object_get(j, "score")) == 0.00123);
	ck_assert(
		json_is_null(json_object_get(j, "code"))); /* no kb:code:none */
	json_t *runs = json_object_get(j, "runs");
	ck_assert_uint_eq(json_array_size(runs), 3);
	ck_assert(json_is_true(
		json_object_get(json_array_get(runs, 2), "secret")));
	ck_assert(json_real_value(json_object_get(json_array_get(runs, 1),
						  "score")) == 0.00123);
	ck_assert(json_is_null(
		json_object_get(json_array_get(runs, 0), "score")));
	const char *report = json_string_value(json_object_get(j, "report"));
	ck_assert_ptr_nonnull(report);
	ck_assert_ptr_nonnull(strstr(report, "Verdict: passed"));
	json_decref(j);
	gw_resp_free(&r);

	const char *bh[] = {"X-Popcorn-Cli-Id: cli-bob", NULL};
	gw_expect_error(gw_req(&E, "GET", "/user/submissions/500", bh, NULL, 0),
			403, "bob reads alice's");

	/* A Result that does not decode is no crash: the record still shows. */
	rr = redisCommand(E.rc, "SET kb:res:500:CPU garbage-bytes");
	freeReplyObject(rr);
	r = gw_req(&E, "GET", "/user/submissions/500", ah, NULL, 0);
	ck_assert_int_eq(r.code, 200);
	gw_resp_free(&r);

	/* A banned user is refused. */
	rr = redisCommand(E.rc, "HSET kb:user:ub banned 1");
	freeReplyObject(rr);
	gw_expect_error(gw_req(&E, "GET", "/user/submissions/500", bh, NULL, 0),
			403, "banned user");

	expect_clean_exit();
}
END_TEST

/* ---- degraded: Kafka down, admin API off ---- */

START_TEST(kafka_down_and_admin_off)
{
	const char *code =
		"float custom_kernel(const float *d, unsigned long n) { return 0; }\n";
	char buf[64];

	gw_env_up(&E, 0, NULL);

	const char *good[] = {"Authorization: Bearer " GW_ADMIN_TOKEN, NULL};
	gw_expect_error(gw_req(&E, "POST", "/admin/users", good,
			       "{\"name\":\"x\"}", 12),
			403, "admin API off");

	put_user("ua", "alice", "cli-alice");
	gw_expect_error(submit_file(SUBMIT_CPU("leaderboard"), "cli-alice",
				    code, strlen(code)),
			503, "Kafka down");
	/* The record says so: failed, never left "queued". */
	ck_assert_str_eq(hget("kb:sub:1", "status", buf, sizeof(buf)),
			 "failed");
	ck_assert_str_eq(hget("kb:sub:1", "verdict", buf, sizeof(buf)),
			 "infra_error");
	ck_assert_ptr_nonnull(hget("kb:sub:1", "done_ms", buf, sizeof(buf)));
	ck_assert_int_eq(gw_count_keys(&E, "kb:sub:*"), 1);

	/* Redis down: reads and submissions are 503, health stays up, and
	 * SIGTERM still drains cleanly. */
	kb_test_server_stop(&E.redis);
	gw_expect_error(gw_req(&E, "GET", "/submissions/gw_sum_cpu/CPU", NULL,
			       NULL, 0),
			503, "ranking without Redis");
	gw_expect_error(submit_file(SUBMIT_CPU("test"), "cli-alice", code,
				    strlen(code)),
			503, "submission without Redis");
	struct gw_resp r = gw_req(&E, "GET", "/health", NULL, NULL, 0);
	ck_assert_int_eq(r.code, 200);
	gw_resp_free(&r);

	expect_clean_exit();
}
END_TEST

static size_t discard(void *p, size_t size, size_t n, void *ud)
{
	(void)p;
	(void)ud;
	return size * n;
}

/* Requests without a body keep their connection open (an answer queued in
 * libmicrohttpd's first callback would close it after every request). */
START_TEST(keep_alive)
{
	const char *paths[] = {"/health", "/leaderboards",
			       "/submissions/gw_sum_cpu/CPU", "/no/such/path",
			       "/health"};
	char url[160];
	CURL *c;

	gw_env_up(&E, 0, NULL);
	c = curl_easy_init();
	ck_assert_ptr_nonnull(c);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		long connects = -1, code = 0;
		snprintf(url, sizeof(url), "%s%s", E.api, paths[i]);
		curl_easy_setopt(c, CURLOPT_URL, url);
		ck_assert_int_eq(curl_easy_perform(c), CURLE_OK);
		curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &connects);
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
		ck_assert_msg(
			connects == (i == 0 ? 1 : 0),
			"request %zu (%s, HTTP %ld) opened %ld new connections",
			i, paths[i], code, connects);
	}
	curl_easy_cleanup(c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gateway_http");
	TCase *tc = tcase_create("http");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, reads_routing_and_admin);
	tcase_add_test(tc, submissions);
	tcase_add_test(tc, rankings_and_results);
	tcase_add_test(tc, kafka_down_and_admin_off);
	tcase_add_test(tc, keep_alive);
	suite_add_tcase(s, tc);
	return kb_check_run(s);
}
