/* POST /admin/export against a real kb-gateway: the rows and columns of
 * the dataset, the best run per (board, user, code, gpu), the board
 * filter, a row whose code blob is gone, the 409 for active boards and
 * its private override, auth and bad bodies. Ranked results are written
 * as the ranker writes them for a scored Result (as test_api does). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "gw_env.h"
#include "kb_check_main.h"

#define CODE_A                                                                 \
	"float custom_kernel(const float *d, unsigned long n) { return 0; }\n"
#define CODE_B                                                                 \
	"float custom_kernel(const float *d, unsigned long n) { return 1; }\n"

static struct gw_env E;
static const char *const export_env[] = {
	"KB_PROBLEMS=" KB_GW_TEST_DIR "/data:" KB_GW_TEST_DIR "/export.yaml",
	"KB_MAX_QUEUED_PER_GPU=0",
	NULL,
};

static const char *const columns[] = {
	"submission_id", "leaderboard_id", "problem_name", "user_id",
	"user_name",     "code_id",        "file_name",    "submission_time",
	"status",        "score",          "passed",       "mode",
	"runner",        "code",           NULL,
};

static void down(void)
{
	int status = gw_env_stop_gateway(&E);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "kb-gateway did not exit 0 (status 0x%x); log %s", status,
		      E.log);
	gw_assert_log_clean(&E);
}

/* What the ranker writes for a Result: scored (score not NULL) or not. */
static void result(uint64_t id, const char *verdict, const char *score)
{
	if (score)
		gw_redis_do(
			&E,
			"HSET kb:sub:%llu status done stage done verdict %s "
			"score %s done_ms 1",
			(unsigned long long)id, verdict, score);
	else
		gw_redis_do(
			&E,
			"HSET kb:sub:%llu status done stage done verdict %s "
			"done_ms 1",
			(unsigned long long)id, verdict);
}

static uint64_t admin_submit(const char *path, const char *cli,
			     const char *code)
{
	char hcli[128];
	size_t blen;
	snprintf(hcli, sizeof(hcli), "X-Popcorn-Cli-Id: %s", cli);
	char *mp =
		gw_multipart("B0und", "file", "k.c", code, strlen(code), &blen);
	const char *h[] = {"Authorization: Bearer " GW_ADMIN_TOKEN, hcli,
			   "Content-Type: multipart/form-data; boundary=B0und",
			   NULL};
	uint64_t id = gw_accepted(gw_req(&E, "POST", path, h, mp, blen));
	free(mp);
	return id;
}

/* The export's rows (a JSON array) for body; asserts a 200 in JSON
 * Lines, every row an object with at least the dataset's columns. */
static json_t *export_rows(const char *body)
{
	struct gw_resp r = gw_req_admin(&E, "POST", "/admin/export", body);
	ck_assert_msg(r.code == 200, "export %s: %ld %s",
		      body ? body : "(none)", r.code, r.body ? r.body : "");
	ck_assert_ptr_nonnull(
		strcasestr(r.headers, "Content-Type: application/x-ndjson"));
	json_t *rows = json_array();
	char *save = NULL;
	for (char *line = strtok_r(r.body, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		json_error_t err;
		json_t *o = json_loads(line, 0, &err);
		ck_assert_msg(json_is_object(o), "row is not an object: %s",
			      line);
		for (int i = 0; columns[i]; i++)
			ck_assert_msg(json_object_get(o, columns[i]),
				      "row lacks %s: %s", columns[i], line);
		json_array_append_new(rows, o);
	}
	ck_assert_msg(r.len > 0 ? r.body[0] != 0 : 1, "empty");
	gw_resp_free(&r);
	return rows;
}

static long long row_id(json_t *rows, size_t i)
{
	return (long long)json_integer_value(
		json_object_get(json_array_get(rows, i), "submission_id"));
}

static const char *row_str(json_t *rows, size_t i, const char *k)
{
	return json_string_value(json_object_get(json_array_get(rows, i), k));
}

START_TEST(export_rows_and_rules)
{
	char alice[80], alice_id[40], bob[80], bob_id[40];

	E.extra_env = export_env;
	gw_env_up(&E, 1, GW_ADMIN_TOKEN);
	gw_create_user(&E, "alice", alice, alice_id);
	gw_create_user(&E, "bob", bob, bob_id);
	const char *lbp = "/submission/gw_sum_cpu/CPU/leaderboard";
	/* alice: code A twice (2 s, then 1 s: the best of the group), code B
	 * (3 s), a test run and a ranked run that failed (neither exported). */
	uint64_t a1 = gw_accepted(gw_submit(&E, lbp, alice, CODE_A));
	uint64_t a2 = gw_accepted(gw_submit(&E, lbp, alice, CODE_A));
	uint64_t a3 = gw_accepted(gw_submit(&E, lbp, alice, CODE_B));
	uint64_t at = gw_accepted(gw_submit(
		&E, "/submission/gw_sum_cpu/CPU/test", alice, CODE_B));
	uint64_t af = gw_accepted(gw_submit(&E, lbp, alice, CODE_B));
	/* bob: code A too (a group of his own), and 1.5 s twice with the
	 * earlier one kept. */
	uint64_t b1 = gw_accepted(gw_submit(&E, lbp, bob, CODE_A));
	uint64_t b2 = gw_accepted(gw_submit(&E, lbp, bob, CODE_A));
	/* The other boards: past (admins submit there) and live. */
	uint64_t p1 = admin_submit("/admin/submission/gw_past/CPU/leaderboard",
				   bob, CODE_B);
	uint64_t v1 = gw_accepted(gw_submit(
		&E, "/submission/gw_live/CPU/leaderboard", alice, CODE_A));
	result(a1, "passed", "2");
	result(a2, "passed", "1");
	result(a3, "passed", "3");
	result(at, "passed", NULL);
	result(af, "failed", NULL);
	result(b1, "passed", "1.5");
	result(b2, "passed", "1.5");
	result(p1, "passed", "0.5");
	result(v1, "passed", "4");

	/* One board: its rows in ranking order, every column right. */
	json_t *rows = export_rows("{\"leaderboards\": [\"GW_SUM_CPU\"]}");
	ck_assert_uint_eq(json_array_size(rows), 3);
	ck_assert_int_eq(row_id(rows, 0), (long long)a2);
	ck_assert_int_eq(row_id(rows, 1), (long long)b1);
	ck_assert_int_eq(row_id(rows, 2), (long long)a3);
	json_t *o = json_array_get(rows, 0);
	ck_assert_str_eq(row_str(rows, 0, "problem_name"), "gw_sum_cpu");
	ck_assert(json_integer_value(json_object_get(o, "leaderboard_id")) >=
		  1);
	ck_assert_str_eq(row_str(rows, 0, "user_id"), alice_id);
	ck_assert_str_eq(row_str(rows, 0, "user_name"), "alice");
	ck_assert_uint_eq(strlen(row_str(rows, 0, "code_id")), 64);
	ck_assert_str_eq(row_str(rows, 0, "code_id"),
			 row_str(rows, 1, "code_id"));
	ck_assert_str_ne(row_str(rows, 0, "code_id"),
			 row_str(rows, 2, "code_id"));
	ck_assert_str_eq(row_str(rows, 0, "file_name"), "submission.c");
	ck_assert_ptr_nonnull(strchr(row_str(rows, 0, "submission_time"), 'T'));
	ck_assert_str_eq(row_str(rows, 0, "status"), "succeeded");
	ck_assert(json_real_value(json_object_get(o, "score")) == 1.0);
	ck_assert(json_is_true(json_object_get(o, "passed")));
	ck_assert_str_eq(row_str(rows, 0, "mode"), "leaderboard");
	ck_assert_str_eq(row_str(rows, 0, "runner"), "CPU");
	ck_assert_str_eq(row_str(rows, 0, "code"), CODE_A);
	ck_assert_str_eq(row_str(rows, 2, "code"), CODE_B);
	ck_assert_ptr_null(json_object_get(o, "code_missing"));
	ck_assert_str_eq(row_str(rows, 1, "user_name"), "bob");
	json_decref(rows);

	/* A code blob gone: the row stays and says so. */
	redisReply *sha = redisCommand(E.rc, "HGET kb:sub:%llu code_sha",
				       (unsigned long long)a3);
	ck_assert(sha && sha->type == REDIS_REPLY_STRING);
	gw_redis_do(&E, "RENAME kb:code:%s kb:code:gone", sha->str);
	freeReplyObject(sha);
	rows = export_rows("{\"leaderboards\": [\"gw_sum_cpu\"]}");
	ck_assert_uint_eq(json_array_size(rows), 3);
	ck_assert(
		json_is_null(json_object_get(json_array_get(rows, 2), "code")));
	ck_assert(json_is_true(
		json_object_get(json_array_get(rows, 2), "code_missing")));
	json_decref(rows);

	/* The filter: another board alone. */
	rows = export_rows("{\"leaderboards\": [\"gw_past\"]}");
	ck_assert_uint_eq(json_array_size(rows), 1);
	ck_assert_int_eq(row_id(rows, 0), (long long)p1);
	ck_assert_str_eq(row_str(rows, 0, "problem_name"), "gw_past");
	json_decref(rows);

	/* Active boards: a public export is refused, naming them; a
	 * private one includes them. All boards come in name order. */
	struct gw_resp r = gw_req_admin(&E, "POST", "/admin/export", "{}");
	ck_assert_int_eq(r.code, 409);
	ck_assert_ptr_nonnull(strstr(r.body, "gw_live"));
	ck_assert_ptr_null(strstr(r.body, "gw_past"));
	gw_resp_free(&r);
	gw_expect_error(gw_req_admin(&E, "POST", "/admin/export", NULL), 409,
			"no body: every board, public");
	gw_expect_error(
		gw_req_admin(&E, "POST", "/admin/export",
			     "{\"leaderboards\": [\"gw_past\", \"gw_live\"],"
			     " \"private\": false}"),
		409, "live named");
	rows = export_rows("{\"private\": true}");
	ck_assert_uint_eq(json_array_size(rows), 5);
	ck_assert_str_eq(row_str(rows, 0, "problem_name"), "gw_live");
	ck_assert_int_eq(row_id(rows, 0), (long long)v1);
	ck_assert_str_eq(row_str(rows, 1, "problem_name"), "gw_past");
	ck_assert_str_eq(row_str(rows, 2, "problem_name"), "gw_sum_cpu");
	json_decref(rows);

	/* Auth. */
	gw_expect_error(gw_req(&E, "POST", "/admin/export", NULL, "{}", 2), 401,
			"no token");
	{
		const char *h[] = {"Authorization: Bearer wrong", NULL};
		gw_expect_error(gw_req(&E, "POST", "/admin/export", h, "{}", 2),
				401, "wrong token");
	}
	gw_expect_error(gw_req_admin(&E, "GET", "/admin/export", NULL), 405,
			"GET");

	/* Bad bodies. */
	static const char *const bad[] = {
		"[]",
		"{",
		"\"x\"",
		"{\"leaderboards\": \"gw_sum_cpu\"}",
		"{\"leaderboards\": []}",
		"{\"leaderboards\": [1]}",
		"{\"leaderboards\": [\"gw_past\", \"GW_PAST\"]}",
		"{\"leaderboards\": [\"a:b\"]}",
		"{\"private\": \"yes\"}",
		"{\"private\": 1, \"private\": 0}",
		NULL,
	};
	for (int i = 0; bad[i]; i++)
		gw_expect_error(gw_req_admin(&E, "POST", "/admin/export",
					     bad[i]),
				400, bad[i]);
	gw_expect_error(gw_req_admin(&E, "POST", "/admin/export",
				     "{\"leaderboards\": [\"nope\"]}"),
			404, "unknown board");
	down();
}
END_TEST

/* With the admin API off the route answers 403, as every /admin route. */
START_TEST(export_admin_off)
{
	E.extra_env = export_env;
	gw_env_up(&E, 0, NULL);
	gw_expect_error(gw_req(&E, "POST", "/admin/export", NULL, "{}", 2), 403,
			"admin API off");
	down();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gateway_export");
	TCase *tc = tcase_create("export");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, export_rows_and_rules);
	tcase_add_test(tc, export_admin_off);
	suite_add_tcase(s, tc);
	return kb_check_run(s);
}
