/* The streaming endpoint POST /{lb}/{gpu}/{mode}: server-sent events for
 * every stage the worker reports, keep-alives, the final result in
 * upstream's shape (with the secret run redacted), the fallback to Redis
 * when no event comes, and error events (deleted, shutting down). */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gw_env.h"
#include "kb_check_main.h"

#define CODE                                                                   \
	"float custom_kernel(const float *d, unsigned long n) { return 0; }\n"
#define STREAM "/gw_sum_cpu/CPU/leaderboard"

static struct gw_env E;
static const char *const fast_env[] = {
	"KB_SSE_KEEPALIVE_S=1",
	"KB_SSE_POLL_S=1",
	NULL,
};

/* A ranked Result whose secret run carries markers that must never be
 * shown, and the seed too for good measure. */
static uint8_t *make_result(uint64_t id, size_t *len)
{
	Kb__Result res = KB__RESULT__INIT;
	Kb__CompileResult comp = KB__COMPILE_RESULT__INIT;
	Kb__RunResult runs[3], *rp[3];
	Kb__KeyValue kv = KB__KEY_VALUE__INIT, *kvp[1] = {&kv};
	Kb__KeyValue pkv = KB__KEY_VALUE__INIT, *pkvp[1] = {&pkv};
	const char *keys[] = {"test", "leaderboard", "private"};
	char secret_spec[128];

	for (int i = 0; i < 3; i++) {
		Kb__RunResult init = KB__RUN_RESULT__INIT;
		runs[i] = init;
		runs[i].key = (char *)keys[i];
		runs[i].success = 1;
		runs[i].passed = 1;
		runs[i].duration_s = 0.25;
		runs[i].stdout = "public output\n";
		rp[i] = &runs[i];
	}
	pkv.key = "benchmark.0.mean";
	pkv.value = "1230.5";
	runs[1].n_result = 1;
	runs[1].result = pkvp;
	snprintf(secret_spec, sizeof(secret_spec), "seed: %s; PRIVATE-MARKER",
		 E.seeds[0]);
	kv.key = "benchmark.0.spec";
	kv.value = secret_spec;
	runs[2].stdout = "PRIVATE-MARKER stdout\n";
	runs[2].stderr = "PRIVATE-MARKER stderr\n";
	runs[2].n_result = 1;
	runs[2].result = kvp;
	comp.success = 1;
	comp.command = "cc -O3 eval.c submission.c";
	res.compile = &comp;
	res.submission_id = id;
	res.leaderboard = "gw_sum_cpu";
	res.gpu = "CPU";
	res.mode = KB__MODE__MODE_LEADERBOARD;
	res.user_id = "u";
	res.n_runs = 3;
	res.runs = rp;
	res.has_score = 1;
	res.score = 0.00125;
	res.verdict = KB__VERDICT__VERDICT_PASSED;
	res.worker = "worker-1";
	res.started_at_ms = 1700000000000;
	res.finished_at_ms = 1700000001000;
	*len = kb__result__get_packed_size(&res);
	uint8_t *buf = malloc(*len);
	kb__result__pack(&res, buf);
	return buf;
}

static void produce_result(uint64_t id)
{
	size_t len;
	uint8_t *buf = make_result(id, &len);
	Kb__Result *r = kb__result__unpack(NULL, len, buf);

	gw_produce_result(&E, id, "CPU", r);
	kb__result__free_unpacked(r, NULL);
	free(buf);
}

/* The data of the first event named name in an SSE body, parsed. */
static json_t *event_data(const char *body, const char *name)
{
	char needle[64];
	snprintf(needle, sizeof(needle), "event: %s\ndata: ", name);
	const char *p = strstr(body, needle);
	ck_assert_msg(p != NULL, "no %s event in: %s", name, body);
	p += strlen(needle);
	const char *end = strstr(p, "\n\n");
	ck_assert_ptr_nonnull(end);
	json_error_t err;
	json_t *j = json_loadb(p, (size_t)(end - p), 0, &err);
	ck_assert_msg(j != NULL, "%s data is not JSON: %s", name, err.text);
	return j;
}

START_TEST(progress_then_result)
{
	char alice[80], alice_id[40];
	char *body = NULL, *headers = NULL;

	gw_env_up(&E, 1, GW_ADMIN_TOKEN);
	gw_wait_consumer(&E);
	gw_create_user(&E, "alice", alice, alice_id);

	struct gw_sse *s = gw_sse_start(&E, STREAM, alice, CODE);
	ck_assert_msg(gw_sse_wait(s, "\"stage\":\"queued\"", 15000) == 0,
		      "no queued status");
	uint64_t id = gw_sse_id(s);
	ck_assert_uint_gt(id, 0);
	ck_assert_msg(gw_sse_wait(s, "queued (position 1)", 30000) == 0,
		      "no position");
	gw_produce_progress(&E, id, "CPU", KB__STAGE__STAGE_QUEUED, "worker-1");
	gw_produce_progress(&E, id, "CPU", KB__STAGE__STAGE_COMPILING,
			    "worker-1");
	ck_assert_msg(gw_sse_wait(s, "\"stage\":\"compiling\"", 15000) == 0,
		      "no compiling");
	gw_produce_progress(&E, id, "CPU", KB__STAGE__STAGE_RANKED_RUN,
			    "worker-1");
	ck_assert_msg(gw_sse_wait(s, "\"stage\":\"ranked_run\"", 15000) == 0,
		      "no ranked run");
	produce_result(id);
	long code = gw_sse_finish(s, &body, &headers);
	ck_assert_int_eq(code, 200);
	ck_assert_ptr_nonnull(strstr(headers, "text/event-stream"));
	ck_assert_msg(!strstr(body, "PRIVATE-MARKER"), "secret run shown: %s",
		      body);
	ck_assert_msg(strstr(body, "picked up by worker-1") != NULL, "%s",
		      body);

	/* Order: the statuses, then exactly one result, last. */
	const char *res = strstr(body, "event: result");
	ck_assert_ptr_nonnull(res);
	ck_assert(strstr(body, "\"stage\":\"compiling\"") < res);
	ck_assert_ptr_null(strstr(res + 1, "event: "));
	ck_assert_ptr_null(strstr(body, "event: error"));

	json_t *st = event_data(body, "status");
	ck_assert_str_eq(json_string_value(json_object_get(st, "status")),
			 "queued");
	ck_assert(json_is_string(json_object_get(st, "message")));
	ck_assert(json_is_number(json_object_get(st, "elapsed_time")));
	ck_assert_int_eq(
		json_integer_value(json_object_get(st, "submission_id")),
		(json_int_t)id);
	json_decref(st);

	/* upstream's result: {status, results: [FullResult], reports}. */
	json_t *r = event_data(body, "result");
	ck_assert_str_eq(json_string_value(json_object_get(r, "status")),
			 "success");
	json_t *full = json_array_get(json_object_get(r, "results"), 0);
	ck_assert(json_is_true(json_object_get(full, "success")));
	json_t *runs = json_object_get(full, "runs");
	json_t *lb =
		json_object_get(json_object_get(runs, "leaderboard"), "run");
	ck_assert_str_eq(json_string_value(json_object_get(lb, "stdout")),
			 "public output\n");
	ck_assert_str_eq(
		json_string_value(json_object_get(json_object_get(lb, "result"),
						  "benchmark.0.mean")),
		"1230.5");
	ck_assert(json_is_true(json_object_get(lb, "passed")));
	json_t *comp = json_object_get(json_object_get(runs, "leaderboard"),
				       "compilation");
	ck_assert(json_is_true(json_object_get(comp, "success")));
	json_t *priv = json_object_get(json_object_get(runs, "private"), "run");
	ck_assert(json_is_true(json_object_get(priv, "passed")));
	ck_assert_str_eq(json_string_value(json_object_get(priv, "stdout")),
			 "");
	ck_assert_uint_eq(json_object_size(json_object_get(priv, "result")), 0);
	const char *report = json_string_value(
		json_array_get(json_object_get(r, "reports"), 0));
	ck_assert_ptr_nonnull(report);
	ck_assert_ptr_nonnull(strstr(report, "Verdict: passed"));
	ck_assert(json_real_value(json_object_get(r, "score")) == 0.00125);
	json_decref(r);
	free(body);
	free(headers);
	gw_stop_clean(&E);
}
END_TEST

START_TEST(keepalive_and_fallback)
{
	char alice[80], alice_id[40], key[64];
	char *body = NULL;

	E.extra_env = fast_env;
	gw_env_up(&E, 1, GW_ADMIN_TOKEN);
	gw_create_user(&E, "alice", alice, alice_id);
	struct gw_sse *s = gw_sse_start(&E, STREAM, alice, CODE);
	ck_assert(gw_sse_wait(s, "\"stage\":\"queued\"", 15000) == 0);
	uint64_t id = gw_sse_id(s);
	ck_assert_msg(gw_sse_wait(s, ": keep-alive\n\n", 30000) == 0,
		      "no keep-alive");

	/* The ranker's records, and no Kafka event at all: the stream must
	 * find the result in Redis. */
	size_t len;
	uint8_t *buf = make_result(id, &len);
	snprintf(key, sizeof(key), "kb:res:%llu:CPU", (unsigned long long)id);
	redisReply *rr = redisCommand(E.rc, "SET %s %b", key, buf, len);
	freeReplyObject(rr);
	free(buf);
	rr = redisCommand(E.rc, "HSET kb:sub:%llu status running stage testing",
			  (unsigned long long)id);
	freeReplyObject(rr);
	ck_assert_msg(gw_sse_wait(s, "\"stage\":\"testing\"", 10000) == 0,
		      "no fallback stage");
	rr = redisCommand(
		E.rc,
		"HSET kb:sub:%llu status done verdict passed score 0.00125",
		(unsigned long long)id);
	freeReplyObject(rr);
	ck_assert_int_eq(gw_sse_finish(s, &body, NULL), 200);
	ck_assert_msg(strstr(body, "event: result") != NULL, "no result: %s",
		      body);
	ck_assert(!strstr(body, "PRIVATE-MARKER"));
	free(body);

	/* A stream whose submission is deleted meanwhile ends with 410. */
	s = gw_sse_start(&E, STREAM, alice, CODE);
	ck_assert(gw_sse_wait(s, "\"stage\":\"queued\"", 15000) == 0);
	id = gw_sse_id(s);
	char path[64];
	snprintf(path, sizeof(path), "/user/submissions/%llu",
		 (unsigned long long)id);
	json_decref(gw_expect_json(gw_req_cli(&E, "DELETE", path, alice, NULL),
				   200, "delete"));
	ck_assert_int_eq(gw_sse_finish(s, &body, NULL), 200);
	json_t *err = event_data(body, "error");
	ck_assert_int_eq(
		json_integer_value(json_object_get(err, "status_code")), 410);
	ck_assert_str_eq(json_string_value(json_object_get(err, "status")),
			 "error");
	json_decref(err);
	free(body);

	/* Shutting down ends open streams with an error, and exits 0. */
	s = gw_sse_start(&E, STREAM, alice, CODE);
	ck_assert(gw_sse_wait(s, "\"stage\":\"queued\"", 15000) == 0);
	gw_stop_clean(&E);
	ck_assert_int_eq(gw_sse_finish(s, &body, NULL), 200);
	err = event_data(body, "error");
	ck_assert_int_eq(
		json_integer_value(json_object_get(err, "status_code")), 503);
	ck_assert_ptr_nonnull(
		strstr(json_string_value(json_object_get(err, "detail")),
		       "shutting down"));
	json_decref(err);
	free(body);
}
END_TEST

START_TEST(refused_before_streaming)
{
	char alice[80], alice_id[40];

	gw_env_up(&E, 0, GW_ADMIN_TOKEN); /* Kafka down */
	gw_create_user(&E, "alice", alice, alice_id);
	gw_expect_error(gw_submit(&E, "/nope/CPU/test", alice, CODE), 404,
			"unknown board");
	gw_expect_error(gw_submit(&E, "/gw_sum_cpu/H100/test", alice, CODE),
			404, "gpu");
	gw_expect_error(gw_submit(&E, "/gw_sum_cpu/CPU/ranked", alice, CODE),
			400, "mode");
	gw_expect_error(gw_submit(&E, STREAM, NULL, CODE), 401, "no CLI id");
	gw_expect_error(gw_submit(&E, STREAM, alice, ""), 400, "empty file");
	gw_expect_error(gw_req(&E, "GET", STREAM, NULL, NULL, 0), 405, "GET");
	/* The broker is down: a plain 503, and the record says failed. */
	struct gw_resp r = gw_submit(&E, STREAM, alice, CODE);
	ck_assert_ptr_null(strstr(r.headers, "text/event-stream"));
	gw_expect_error(r, 503, "Kafka down");
	gw_stop_clean(&E);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gateway_stream");
	TCase *tc = tcase_create("stream");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, progress_then_result);
	tcase_add_test(tc, keepalive_and_fallback);
	tcase_add_test(tc, refused_before_streaming);
	suite_add_tcase(s, tc);
	return kb_check_run(s);
}
