/* kb-gateway over HTTP, the full API: user submissions (list, delete and
 * the ranking repair), counts, the runner queue, and every admin endpoint
 * with the policies they control (stop, bans, deadlines, closed boards
 * and invites, rate limits, boards made and deleted at run time). */
#include <check.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gw_env.h"
#include "kb_util.h"
#include "kb_check_main.h"

#define CODE                                                                   \
	"float custom_kernel(const float *d, unsigned long n) { return 0; }\n"

static struct gw_env E;
static const char *const policy_env[] = {
	"KB_PROBLEMS=" KB_GW_TEST_DIR "/data:" KB_GW_TEST_DIR "/policy.yaml",
	"KB_PROBLEMS_DEV=" KB_GW_TEST_DIR "/data",
	"KB_RANKING_CACHE_MS=60000", /* deletions must invalidate, not expire */
	/* The tests here leave many jobs of one user unfinished; the cap on
	 * them is test_security's. */
	"KB_MAX_QUEUED_PER_GPU=0",
	NULL,
};

static void up(int broker)
{
	E.extra_env = policy_env;
	gw_env_up(&E, broker, GW_ADMIN_TOKEN);
}

static void down(void)
{
	int status = gw_env_stop_gateway(&E);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "kb-gateway did not exit 0 (status 0x%x); log %s", status,
		      E.log);
	gw_assert_log_clean(&E);
}

/* What the ranker would write for a scored Result. */
static void fake_scored(uint64_t id, const char *uid, const char *score)
{
	gw_redis_do(
		&E,
		"HSET kb:sub:%llu status done stage done verdict passed score %s "
		"done_ms 1",
		(unsigned long long)id, score);
	(void)uid;
}

static json_t *ranking(void)
{
	return gw_expect_json(gw_req(&E, "GET", "/submissions/gw_sum_cpu/CPU",
				     NULL, NULL, 0),
			      200, "ranking");
}

static long count(const char *query)
{
	char path[160];
	snprintf(path, sizeof(path), "/submission_count/gw_sum_cpu/CPU%s",
		 query);
	json_t *j = gw_expect_json(gw_req(&E, "GET", path, NULL, NULL, 0), 200,
				   path);
	long n = (long)json_integer_value(json_object_get(j, "count"));
	json_decref(j);
	return n;
}

START_TEST(user_submissions_and_delete)
{
	char alice[80], alice_id[40], bob[80], bob_id[40], path[128];

	up(1);
	gw_create_user(&E, "alice", alice, alice_id);
	gw_create_user(&E, "bob", bob, bob_id);
	uint64_t t1 = gw_accepted(
		gw_submit(&E, "/submission/gw_sum_cpu/CPU/test", alice, CODE));
	uint64_t l1 = gw_accepted(gw_submit(
		&E, "/submission/gw_sum_cpu/CPU/leaderboard", alice, CODE));
	uint64_t l2 = gw_accepted(gw_submit(
		&E, "/submission/gw_sum_cpu/CPU/leaderboard", alice, CODE));
	uint64_t b1 = gw_accepted(gw_submit(
		&E, "/submission/gw_sum_cpu/CPU/leaderboard", bob, CODE));
	gw_expect_error(gw_submit(&E, "/submission/gw_past/CPU/test", alice,
				  CODE),
			403, "past the deadline");

	/* Lists: newest first, the upstream fields, the filters. */
	json_t *j = gw_expect_json(gw_req_cli(&E, "GET", "/user/submissions",
					      alice, NULL),
				   200, "list");
	ck_assert_uint_eq(json_array_size(j), 3);
	json_t *first = json_array_get(j, 0);
	ck_assert_int_eq(json_integer_value(json_object_get(first, "id")),
			 (json_int_t)l2);
	ck_assert_str_eq(
		json_string_value(json_object_get(first, "leaderboard_name")),
		"gw_sum_cpu");
	ck_assert_str_eq(json_string_value(json_object_get(first, "file_name")),
			 "submission.c");
	ck_assert(json_is_false(json_object_get(first, "done")));
	ck_assert_str_eq(json_string_value(json_object_get(first, "gpu_type")),
			 "CPU");
	ck_assert_str_eq(json_string_value(json_object_get(first, "status")),
			 "queued");
	ck_assert_ptr_nonnull(strstr(
		json_string_value(json_object_get(first, "submission_time")),
		"T"));
	ck_assert(json_is_array(json_object_get(first, "runs")));
	ck_assert_int_eq(
		json_integer_value(json_object_get(json_array_get(j, 2), "id")),
		(json_int_t)t1);
	json_decref(j);
	j = gw_expect_json(gw_req_cli(&E, "GET",
				      "/user/submissions?leaderboard=gw_sum_cpu"
				      "&limit=2&offset=1",
				      alice, NULL),
			   200, "page");
	ck_assert_uint_eq(json_array_size(j), 2);
	ck_assert_int_eq(
		json_integer_value(json_object_get(json_array_get(j, 0), "id")),
		(json_int_t)l1);
	json_decref(j);
	j = gw_expect_json(
		gw_req_cli(&E, "GET",
			   "/user/submissions?leaderboard=gw_gpu_only", alice,
			   NULL),
		200, "other board");
	ck_assert_uint_eq(json_array_size(j), 0);
	json_decref(j);
	gw_expect_error(gw_req_cli(&E, "GET", "/user/submissions?limit=0",
				   alice, NULL),
			400, "limit 0");
	gw_expect_error(gw_req_cli(&E, "GET", "/user/submissions?limit=101",
				   alice, NULL),
			400, "limit 101");
	gw_expect_error(gw_req_cli(&E, "GET", "/user/submissions?offset=-1",
				   alice, NULL),
			400, "offset -1");
	gw_expect_error(gw_req_cli(&E, "GET", "/user/submissions?lb=x", alice,
				   NULL),
			400, "unknown parameter");
	gw_expect_error(gw_req_cli(&E, "GET", "/user/submissions", NULL, NULL),
			401, "no CLI id");

	/* The ranker's view: l1 scored 2.0, l2 1.0 (alice's best), bob 1.5. */
	fake_scored(l1, alice_id, "2");
	fake_scored(l2, alice_id, "1");
	fake_scored(b1, bob_id, "1.5");
	gw_redis_do(&E, "ZADD kb:rank:gw_sum_cpu:CPU 1 %s 1.5 %s", alice_id,
		    bob_id);
	gw_redis_do(&E,
		    "HSET kb:rankinfo:gw_sum_cpu:CPU %s %llu:100 %s %llu:100",
		    alice_id, (unsigned long long)l2, bob_id,
		    (unsigned long long)b1);
	j = ranking();
	ck_assert_uint_eq(json_array_size(j), 2);
	ck_assert_int_eq(json_integer_value(json_object_get(
				 json_array_get(j, 0), "submission_id")),
			 (json_int_t)l2);
	json_decref(j);
	ck_assert_int_eq(count(""), 2);
	ck_assert_int_eq(count("?user_id=nobody"), 0);
	{
		char q[64];
		snprintf(q, sizeof(q), "?user_id=%s", alice_id);
		ck_assert_int_eq(count(q), 1);
	}
	gw_expect_error(gw_req(&E, "GET", "/submission_count/gw_sum_cpu/H100",
			       NULL, NULL, 0),
			404, "count of gpu not offered");

	/* Deleting: only the owner; the best is recomputed; the cached
	 * ranking is dropped at once. */
	snprintf(path, sizeof(path), "/user/submissions/%llu",
		 (unsigned long long)l2);
	gw_expect_error(gw_req_cli(&E, "DELETE", path, bob, NULL), 403,
			"bob deletes alice's");
	gw_expect_error(gw_req_cli(&E, "DELETE", path, NULL, NULL), 401,
			"no CLI id");
	j = gw_expect_json(gw_req_cli(&E, "DELETE", path, alice, NULL), 200,
			   "delete");
	ck_assert_str_eq(json_string_value(json_object_get(j, "status")), "ok");
	ck_assert_int_eq(
		json_integer_value(json_object_get(j, "submission_id")),
		(json_int_t)l2);
	json_decref(j);
	gw_expect_error(gw_req_cli(&E, "DELETE", path, alice, NULL), 404,
			"deleted twice");
	gw_expect_error(gw_req_cli(&E, "GET", path, alice, NULL), 404,
			"read deleted");
	j = ranking();
	ck_assert_uint_eq(json_array_size(j), 2);
	json_t *e0 = json_array_get(j, 0), *e1 = json_array_get(j, 1);
	ck_assert_str_eq(json_string_value(json_object_get(e0, "user_name")),
			 "bob");
	ck_assert_str_eq(json_string_value(json_object_get(e1, "user_name")),
			 "alice");
	ck_assert_int_eq(
		json_integer_value(json_object_get(e1, "submission_id")),
		(json_int_t)l1);
	ck_assert(json_real_value(json_object_get(e1, "score")) == 2.0);
	json_decref(j);
	redisReply *rr = redisCommand(E.rc,
				      "HMGET kb:sub:%llu status deleted_ms",
				      (unsigned long long)l2);
	ck_assert_str_eq(rr->element[0]->str, "deleted");
	ck_assert_int_eq(rr->element[1]->type, REDIS_REPLY_STRING);
	freeReplyObject(rr);

	snprintf(path, sizeof(path), "/user/submissions/%llu",
		 (unsigned long long)l1);
	j = gw_expect_json(gw_req_cli(&E, "DELETE", path, alice, NULL), 200,
			   "delete l1");
	json_decref(j);
	j = ranking();
	ck_assert_uint_eq(json_array_size(j), 1);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(j, 0),
							   "user_name")),
			 "bob");
	json_decref(j);
	ck_assert_int_eq(count(""), 1);
	j = gw_expect_json(gw_req_cli(&E, "GET", "/user/submissions", alice,
				      NULL),
			   200, "list after");
	ck_assert_uint_eq(json_array_size(j), 1);
	json_decref(j);
	gw_expect_error(gw_req_cli(&E, "DELETE", "/user/submissions/abc", alice,
				   NULL),
			400, "bad id");
	down();
}
END_TEST

START_TEST(admin_policies)
{
	char alice[80], alice_id[40], bob[80], bob_id[40];
	json_t *j;

	up(1);
	gw_create_user(&E, "alice", alice, alice_id);
	gw_create_user(&E, "bob", bob, bob_id);

	/* Maintenance stop: refused with 503, admins still submit. */
	j = gw_expect_json(gw_req_admin(&E, "POST", "/admin/stop", NULL), 200,
			   "stop");
	ck_assert(json_is_false(json_object_get(j, "accepts_jobs")));
	json_decref(j);
	gw_expect_error(gw_submit(&E, "/submission/gw_sum_cpu/CPU/test", alice,
				  CODE),
			503, "stopped");
	struct gw_resp r = gw_req(&E, "POST", "/admin/start", NULL, NULL, 0);
	ck_assert_ptr_nonnull(strstr(r.headers, "WWW-Authenticate: Bearer"));
	gw_expect_error(r, 401, "start without token");
	j = gw_expect_json(gw_req_admin(&E, "POST", "/admin/start", NULL), 200,
			   "start");
	ck_assert(json_is_true(json_object_get(j, "accepts_jobs")));
	json_decref(j);
	gw_accepted(
		gw_submit(&E, "/submission/gw_sum_cpu/CPU/test", alice, CODE));

	/* Bans. */
	char path[160];
	snprintf(path, sizeof(path), "/admin/ban/%s", bob_id);
	j = gw_expect_json(gw_req_admin(&E, "POST", path, NULL), 200, "ban");
	ck_assert(json_is_true(json_object_get(j, "banned")));
	json_decref(j);
	gw_expect_error(gw_submit(&E, "/submission/gw_sum_cpu/CPU/test", bob,
				  CODE),
			403, "banned");
	gw_expect_error(gw_req_admin(&E, "POST", "/admin/ban/nobody", NULL),
			404, "ban unknown");
	j = gw_expect_json(gw_req_admin(&E, "DELETE", path, NULL), 200,
			   "unban");
	json_decref(j);
	gw_accepted(
		gw_submit(&E, "/submission/gw_sum_cpu/CPU/test", bob, CODE));

	/* Deadlines: refused, admins exempt (on behalf of the CLI user). */
	gw_expect_error(gw_submit(&E, "/submission/gw_past/CPU/leaderboard",
				  alice, CODE),
			403, "deadline");
	gw_expect_error(gw_req_form(&E, "/admin/submission/gw_past/CPU/test",
				    alice, "file", "s.c", CODE, strlen(CODE)),
			401, "admin submit without token");
	{
		char hcli[128];
		size_t blen;
		snprintf(hcli, sizeof(hcli), "X-Popcorn-Cli-Id: %s", alice);
		char *mp = gw_multipart("B0und", "file", "s.c", CODE,
					strlen(CODE), &blen);
		const char *h[] = {
			"Authorization: Bearer " GW_ADMIN_TOKEN, hcli,
			"Content-Type: multipart/form-data; boundary=B0und",
			NULL};
		gw_accepted(gw_req(&E, "POST",
				   "/admin/submission/gw_past/CPU/test", h, mp,
				   blen));
		free(mp);
	}

	/* Rate limits: a sliding hour per (board, user, category). */
	j = gw_expect_json(
		gw_req_admin(
			&E, "PUT", "/admin/leaderboards/gw_sum_cpu/rate-limits",
			"{\"mode_category\":\"test\",\"max_submissions_per_hour\":2}"),
		200, "rate set");
	ck_assert_int_eq(json_integer_value(json_object_get(
				 json_object_get(j, "rate_limit"),
				 "max_submissions_per_hour")),
			 2);
	json_decref(j);
	gw_expect_error(
		gw_req_admin(
			&E, "PUT", "/admin/leaderboards/gw_sum_cpu/rate-limits",
			"{\"mode_category\":\"ranked\",\"max_submissions_per_hour\":2}"),
		400, "bad category");
	gw_expect_error(
		gw_req_admin(
			&E, "PUT", "/admin/leaderboards/gw_sum_cpu/rate-limits",
			"{\"mode_category\":\"test\",\"max_submissions_per_hour\":-1}"),
		400, "bad count");
	/* alice has one test submission this hour (made before the limit:
	 * not counted); two more fit, the next is refused, until the first
	 * of the two leaves the hour: at most an hour, and no less than an
	 * hour minus the time the test took since (a second for rounding). */
	double t_first = kb_mono_s();
	gw_accepted(gw_submit(&E, "/submission/gw_sum_cpu/CPU/benchmark", alice,
			      CODE));
	gw_accepted(
		gw_submit(&E, "/submission/gw_sum_cpu/CPU/test", alice, CODE));
	r = gw_submit(&E, "/submission/gw_sum_cpu/CPU/test", alice, CODE);
	long since = (long)(kb_mono_s() - t_first) + 1;
	ck_assert_ptr_nonnull(strstr(r.headers, "Retry-After: "));
	long retry = strtol(strstr(r.headers, "Retry-After: ") + 13, NULL, 10);
	ck_assert_msg(retry >= 3600 - since && retry <= 3600,
		      "Retry-After %ld, %ld s after the first", retry, since);
	gw_expect_error(r, 429, "rate limited");
	/* Other category, other user: unaffected. */
	gw_accepted(gw_submit(&E, "/submission/gw_sum_cpu/CPU/leaderboard",
			      alice, CODE));
	gw_accepted(
		gw_submit(&E, "/submission/gw_sum_cpu/CPU/test", bob, CODE));
	j = gw_expect_json(
		gw_req_admin(&E, "GET",
			     "/admin/leaderboards/gw_sum_cpu/rate-limits",
			     NULL),
		200, "rate get");
	ck_assert_uint_eq(json_array_size(json_object_get(j, "rate_limits")),
			  1);
	json_decref(j);
	j = gw_expect_json(
		gw_req_admin(&E, "DELETE",
			     "/admin/leaderboards/gw_sum_cpu/rate-limits/test",
			     NULL),
		200, "rate delete");
	json_decref(j);
	gw_expect_error(
		gw_req_admin(&E, "DELETE",
			     "/admin/leaderboards/gw_sum_cpu/rate-limits/other",
			     NULL),
		400, "rate delete bad category");
	gw_accepted(
		gw_submit(&E, "/submission/gw_sum_cpu/CPU/test", alice, CODE));

	/* Closed boards: reads need a user with access, submissions too. */
	j = gw_expect_json(
		gw_req_admin(&E, "POST",
			     "/admin/leaderboards/gw_sum_cpu/visibility",
			     "{\"visibility\":\"closed\"}"),
		200, "close");
	json_decref(j);
	gw_expect_error(
		gw_req_admin(&E, "POST",
			     "/admin/leaderboards/gw_sum_cpu/visibility",
			     "{\"visibility\":\"private\"}"),
		400, "bad visibility");
	gw_expect_error(gw_req(&E, "GET", "/submissions/gw_sum_cpu/CPU", NULL,
			       NULL, 0),
			401, "closed ranking anonymous");
	gw_expect_error(gw_req_cli(&E, "GET", "/submissions/gw_sum_cpu/CPU",
				   alice, NULL),
			403, "closed ranking without access");
	gw_expect_error(gw_req_cli(&E, "GET", "/gpus/gw_sum_cpu", alice, NULL),
			403, "closed gpus without access");
	gw_expect_error(gw_submit(&E, "/submission/gw_sum_cpu/CPU/test", alice,
				  CODE),
			403, "closed submit");
	j = gw_expect_json(gw_req_admin(&E, "GET",
					"/submissions/gw_sum_cpu/CPU", NULL),
			   200, "admin reads closed");
	json_decref(j);
	/* Listed as closed to signed-in users; anonymous readers do not see
	 * it (issue 30: no anonymous surface names a closed board). */
	j = gw_expect_json(gw_req_cli(&E, "GET", "/leaderboards", alice, NULL),
			   200, "list");
	int seen_closed = 0;
	size_t i;
	json_t *lb;
	json_array_foreach(
		j, i,
		lb) if (strcmp(json_string_value(json_object_get(lb, "name")),
			       "gw_sum_cpu") == 0) seen_closed =
		strcmp(json_string_value(json_object_get(lb, "visibility")),
		       "closed") == 0;
	ck_assert(seen_closed);
	json_decref(j);
	j = gw_expect_json(gw_req(&E, "GET", "/leaderboards", NULL, NULL, 0),
			   200, "list");
	json_array_foreach(j, i, lb) ck_assert_str_ne(
		json_string_value(json_object_get(lb, "name")), "gw_sum_cpu");
	json_decref(j);

	/* Invites. */
	gw_expect_error(gw_req_admin(&E, "POST", "/admin/invites",
				     "{\"count\":0,"
				     "\"leaderboard\":\"gw_sum_cpu\"}"),
			400, "count 0");
	gw_expect_error(gw_req_admin(&E, "POST", "/admin/invites",
				     "{\"count\":2}"),
			400, "no boards");
	gw_expect_error(gw_req_admin(&E, "POST", "/admin/invites",
				     "{\"count\":2,"
				     "\"leaderboards\":[\"nope\"]}"),
			404, "unknown board");
	j = gw_expect_json(
		gw_req_admin(
			&E, "POST", "/admin/invites",
			"{\"leaderboards\":[\"gw_sum_cpu\",\"gw_gpu_only\"],"
			"\"count\":3}"),
		200, "invites");
	json_t *codes = json_object_get(j, "codes");
	ck_assert_uint_eq(json_array_size(codes), 3);
	char code0[80], code1[80], body[160];
	snprintf(code0, sizeof(code0), "%s",
		 json_string_value(json_array_get(codes, 0)));
	snprintf(code1, sizeof(code1), "%s",
		 json_string_value(json_array_get(codes, 1)));
	json_decref(j);
	gw_expect_error(gw_req_cli(&E, "POST", "/user/join", alice, "{}"), 400,
			"no code");
	gw_expect_error(gw_req_cli(&E, "POST", "/user/join", alice,
				   "{\"code\":\"nope\"}"),
			400, "bad code");
	gw_expect_error(gw_req_cli(&E, "POST", "/user/join", NULL,
				   "{\"code\":\"x\"}"),
			401, "join without CLI id");
	snprintf(body, sizeof(body), "{\"code\":\"%s\"}", code0);
	j = gw_expect_json(gw_req_cli(&E, "POST", "/user/join", alice, body),
			   200, "join");
	ck_assert_uint_eq(json_array_size(json_object_get(j, "leaderboards")),
			  2);
	ck_assert_str_eq(json_string_value(json_array_get(
				 json_object_get(j, "leaderboards"), 0)),
			 "gw_sum_cpu");
	json_decref(j);
	j = gw_expect_json(gw_req_cli(&E, "POST", "/user/join", alice, body),
			   200, "join again");
	json_decref(j);
	gw_expect_error(gw_req_cli(&E, "POST", "/user/join", bob, body), 400,
			"claimed code");
	j = gw_expect_json(gw_req_cli(&E, "GET", "/submissions/gw_sum_cpu/CPU",
				      alice, NULL),
			   200, "closed ranking with access");
	json_decref(j);
	gw_accepted(
		gw_submit(&E, "/submission/gw_sum_cpu/CPU/test", alice, CODE));
	j = gw_expect_json(
		gw_req_admin(&E, "GET",
			     "/admin/leaderboards/gw_sum_cpu/invites", NULL),
		200, "invite list");
	ck_assert_uint_eq(json_array_size(json_object_get(j, "invites")), 3);
	json_decref(j);
	snprintf(path, sizeof(path), "/admin/invites/%s", code1);
	j = gw_expect_json(gw_req_admin(&E, "DELETE", path, NULL), 200,
			   "revoke");
	ck_assert(json_is_false(json_object_get(j, "was_claimed")));
	json_decref(j);
	gw_expect_error(gw_req_admin(&E, "DELETE", path, NULL), 404,
			"revoke twice");
	snprintf(body, sizeof(body), "{\"code\":\"%s\"}", code1);
	gw_expect_error(gw_req_cli(&E, "POST", "/user/join", bob, body), 400,
			"revoked code");
	j = gw_expect_json(
		gw_req_admin(&E, "POST",
			     "/admin/leaderboards/gw_sum_cpu/visibility",
			     "{\"visibility\":\"public\"}"),
		200, "reopen");
	json_decref(j);

	/* Stats, admin reads and deletes of submissions. */
	j = gw_expect_json(gw_req_admin(&E, "GET", "/admin/stats", NULL), 200,
			   "stats");
	json_t *st = json_object_get(j, "stats");
	ck_assert_int_ge(
		json_integer_value(json_object_get(st, "num_submissions")), 7);
	ck_assert_int_eq(json_integer_value(json_object_get(st, "num_users")),
			 2);
	/* Upstream's keys: every submission here is still waiting (no
	 * worker), and the codes are counted once each. */
	ck_assert_int_eq(
		json_integer_value(json_object_get(st, "sub_waiting")),
		json_integer_value(json_object_get(st, "queued")) +
			json_integer_value(json_object_get(st, "running")));
	ck_assert_int_ge(json_integer_value(json_object_get(st, "sub_waiting")),
			 1);
	ck_assert_int_ge(
		json_integer_value(json_object_get(st, "num_unique_codes")), 1);
	ck_assert_int_le(
		json_integer_value(json_object_get(st, "num_unique_codes")),
		json_integer_value(json_object_get(st, "num_submissions")));
	ck_assert_ptr_null(json_object_get(st, "num_run.CPU"));
	json_decref(j);
	/* One made to look ended, as the ranker would leave it: counted per
	 * runner (its GPU type). */
	{
		redisReply *rr =
			redisCommand(E.rc, "ZREVRANGE kb:subs:all 0 0");
		ck_assert(rr && rr->type == REDIS_REPLY_ARRAY &&
			  rr->elements == 1);
		redisReply *g = redisCommand(E.rc, "HGET kb:sub:%s gpu",
					     rr->element[0]->str);
		ck_assert(g && g->type == REDIS_REPLY_STRING);
		char key[96];
		freeReplyObject(
			redisCommand(E.rc,
				     "HSET kb:sub:%s status done verdict "
				     "passed score 0.5 mode leaderboard",
				     rr->element[0]->str));
		j = gw_expect_json(gw_req_admin(&E, "GET", "/admin/stats",
						NULL),
				   200, "stats after one ended");
		st = json_object_get(j, "stats");
		snprintf(key, sizeof(key), "num_run.%s", g->str);
		ck_assert_int_eq(json_integer_value(json_object_get(st, key)),
				 1);
		snprintf(key, sizeof(key), "runs_passed.%s", g->str);
		ck_assert_int_eq(json_integer_value(json_object_get(st, key)),
				 1);
		snprintf(key, sizeof(key), "runs_scored.%s", g->str);
		ck_assert_int_eq(json_integer_value(json_object_get(st, key)),
				 1);
		snprintf(key, sizeof(key), "runs_secret.%s", g->str);
		ck_assert_int_eq(json_integer_value(json_object_get(st, key)),
				 1);
		long failed =
			(long)json_integer_value(json_object_get(st, "failed"));
		json_decref(j);
		/* One that ran and failed (a compile error) counts as failed. */
		freeReplyObject(
			redisCommand(E.rc,
				     "HSET kb:sub:%s status done verdict "
				     "compile_error",
				     rr->element[0]->str));
		j = gw_expect_json(gw_req_admin(&E, "GET", "/admin/stats",
						NULL),
				   200, "stats after one failed");
		st = json_object_get(j, "stats");
		ck_assert_int_eq(
			json_integer_value(json_object_get(st, "failed")),
			failed + 1);
		json_decref(j);
		freeReplyObject(g);
		freeReplyObject(rr);
	}
	j = gw_expect_json(gw_req_admin(&E, "GET",
					"/admin/stats?last_day_only=true&"
					"leaderboard_name=gw_sum_cpu",
					NULL),
			   200, "stats filtered");
	json_decref(j);
	gw_expect_error(gw_req_admin(&E, "GET",
				     "/admin/stats?last_day_only=maybe", NULL),
			400, "stats bad bool");
	j = gw_expect_json(
		gw_req_admin(&E, "GET",
			     "/admin/leaderboards/gw_sum_cpu/submissions"
			     "?limit=2",
			     NULL),
		200, "board submissions");
	ck_assert_uint_eq(json_array_size(json_object_get(j, "submission_ids")),
			  2);
	json_int_t some = json_integer_value(
		json_array_get(json_object_get(j, "submission_ids"), 0));
	json_decref(j);
	snprintf(path, sizeof(path), "/admin/submissions/%lld",
		 (long long)some);
	j = gw_expect_json(gw_req_admin(&E, "GET", path, NULL), 200,
			   "admin get");
	ck_assert_int_eq(json_integer_value(json_object_get(
				 json_object_get(j, "submission"), "id")),
			 some);
	ck_assert_int_eq(
		json_integer_value(json_object_get(
			json_object_get(j, "submission"), "submission_id")),
		some);
	ck_assert_str_eq(json_string_value(json_object_get(
				 json_object_get(j, "submission"), "code")),
			 CODE);
	json_decref(j);
	j = gw_expect_json(gw_req_admin(&E, "DELETE", path, NULL), 200,
			   "admin delete");
	json_decref(j);
	gw_expect_error(gw_req_admin(&E, "GET", path, NULL), 404,
			"admin get deleted");
	gw_expect_error(gw_req_admin(&E, "GET", "/admin/submissions/0", NULL),
			400, "admin bad id");

	/* Boards made and deleted at run time (from KB_PROBLEMS_DEV). */
	gw_expect_error(gw_req_admin(&E, "POST", "/admin/leaderboards", "{}"),
			400, "create without directory");
	gw_expect_error(gw_req_admin(&E, "POST", "/admin/leaderboards",
				     "{\"directory\":\"../etc\"}"),
			400, "create traversal");
	gw_expect_error(gw_req_admin(&E, "POST", "/admin/leaderboards",
				     "{\"directory\":\"nope\"}"),
			400, "create missing");
	j = gw_expect_json(gw_req_admin(&E, "POST", "/admin/leaderboards",
					"{\"directory\":\"gw_sum_cpu\"}"),
			   200, "create");
	ck_assert_str_eq(json_string_value(json_object_get(j, "leaderboard")),
			 "gw_sum_cpu-dev");
	json_decref(j);
	r = gw_req(&E, "GET", "/gpus/gw_sum_cpu-dev", NULL, NULL, 0);
	ck_assert_int_eq(r.code, 200);
	ck_assert_str_eq(r.body, "[\"CPU\"]");
	gw_resp_free(&r);
	ck_assert_int_eq(gw_count_keys(&E, "kb:lb:gw_sum_cpu-dev"), 1);
	j = gw_expect_json(gw_req(&E, "GET", "/leaderboards", NULL, NULL, 0),
			   200, "list");
	ck_assert_uint_eq(json_array_size(j), 4);
	json_decref(j);
	gw_accepted(gw_submit(&E, "/submission/gw_sum_cpu-dev/CPU/test", alice,
			      CODE));
	gw_expect_error(gw_req_admin(&E, "DELETE",
				     "/admin/leaderboards/gw_sum_cpu-dev",
				     NULL),
			400, "delete with submissions");
	gw_expect_error(
		gw_req_admin(&E, "DELETE",
			     "/admin/leaderboards/gw_sum_cpu-dev?force=x",
			     NULL),
		400, "delete bad force");
	j = gw_expect_json(
		gw_req_admin(&E, "DELETE",
			     "/admin/leaderboards/gw_sum_cpu-dev?force=true",
			     NULL),
		200, "delete");
	ck_assert(json_is_true(json_object_get(j, "force")));
	json_decref(j);
	gw_expect_error(gw_req(&E, "GET", "/gpus/gw_sum_cpu-dev", NULL, NULL,
			       0),
			404, "deleted board");
	gw_expect_error(gw_submit(&E, "/submission/gw_sum_cpu-dev/CPU/test",
				  alice, CODE),
			404, "submit to deleted board");
	j = gw_expect_json(gw_req(&E, "GET", "/leaderboards", NULL, NULL, 0),
			   200, "list");
	ck_assert_uint_eq(json_array_size(j), 3);
	json_decref(j);

	/* A deleted board stays deleted across a restart. */
	int status = gw_env_stop_gateway(&E);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	gw_env_restart_gateway(&E, GW_ADMIN_TOKEN);
	gw_expect_error(gw_req(&E, "GET", "/gpus/gw_sum_cpu-dev", NULL, NULL,
			       0),
			404, "deleted board after restart");
	down();
}
END_TEST

START_TEST(runner_queue)
{
	char alice[80], alice_id[40];
	json_t *j;

	up(1);
	gw_wait_consumer(&E);
	gw_create_user(&E, "alice", alice, alice_id);
	gw_expect_error(gw_req(&E, "GET", "/runner_queue/B200", NULL, NULL, 0),
			404, "unknown gpu");
	j = gw_expect_json(gw_req(&E, "GET", "/runner_queue/CPU", NULL, NULL,
				  0),
			   200, "empty");
	ck_assert_int_eq(json_integer_value(json_object_get(j, "queued_jobs")),
			 0);
	ck_assert_int_eq(json_integer_value(json_object_get(j, "running_jobs")),
			 0);
	ck_assert_int_eq(
		json_integer_value(json_object_get(j, "available_runners")), 0);
	/* No worker heard of yet, within a stale time of the start: a
	 * heartbeat may still be on its way. */
	ck_assert_str_eq(json_string_value(json_object_get(j, "status")),
			 "starting");
	ck_assert_str_eq(json_string_value(json_object_get(j, "gpu")), "CPU");
	ck_assert(json_is_null(json_object_get(j, "error")));
	json_decref(j);

	uint64_t a = gw_accepted(
		gw_submit(&E, "/submission/gw_sum_cpu/CPU/test", alice, CODE));
	gw_accepted(
		gw_submit(&E, "/submission/gw_sum_cpu/CPU/test", alice, CODE));
	gw_produce_progress(&E, a, "CPU", KB__STAGE__STAGE_COMPILING,
			    "worker-1");
	gw_produce_progress(&E, 0, "CPU", KB__STAGE__STAGE_UNSPECIFIED,
			    "worker-2");
	/* The cached backlog (KB_QUEUE_CACHE_MS) and the events: poll. */
	int ok = 0;
	char last[2048] = "";
	for (int t = 0; t < 300 && !ok; t++) {
		j = gw_expect_json(gw_req(&E, "GET", "/runner_queue/CPU", NULL,
					  NULL, 0),
				   200, "queue");
		ok = json_integer_value(json_object_get(j, "queued_jobs")) ==
			     1 &&
		     json_integer_value(json_object_get(j, "running_jobs")) ==
			     1 &&
		     json_integer_value(
			     json_object_get(j, "available_runners")) == 2;
		if (ok) {
			ck_assert_int_eq(json_integer_value(json_object_get(
						 j, "idle_runners")),
					 1);
			ck_assert_str_eq(
				json_string_value(json_object_get(j, "status")),
				"available");
			ck_assert_uint_eq(
				json_array_size(json_object_get(j, "workers")),
				2);
		}
		char *d = json_dumps(j, JSON_COMPACT);
		snprintf(last, sizeof(last), "%s", d ? d : "");
		free(d);
		json_decref(j);
		if (!ok)
			usleep(200000);
	}
	ck_assert_msg(
		ok,
		"runner queue never showed 1 queued, 1 running, 2 workers: %s",
		last);

	/* The same progress is on the submission itself, and the 202 of
	 * the next submission names the backlog. */
	char path[64];
	snprintf(path, sizeof(path), "/user/submissions/%llu",
		 (unsigned long long)a);
	for (int t = 0; t < 50; t++) {
		redisReply *rr = redisCommand(E.rc, "HGET kb:sub:%llu status",
					      (unsigned long long)a);
		int running = rr->type == REDIS_REPLY_STRING &&
			      strcmp(rr->str, "queued") != 0;
		freeReplyObject(rr);
		if (running)
			break;
		/* No ranker here: write what its progress.lua would. */
		gw_redis_do(&E,
			    "HSET kb:sub:%llu status running stage compiling",
			    (unsigned long long)a);
	}
	j = gw_expect_json(gw_req_cli(&E, "GET", path, alice, NULL), 200,
			   "progress");
	ck_assert_str_eq(json_string_value(json_object_get(j, "stage")),
			 "compiling");
	ck_assert_str_eq(json_string_value(json_object_get(
				 json_object_get(j, "job"), "status")),
			 "running");
	ck_assert(json_is_integer(json_object_get(j, "elapsed_ms")));
	json_decref(j);
	j = gw_expect_json(gw_submit(&E, "/submission/gw_sum_cpu/CPU/test",
				     alice, CODE),
			   202, "with queue");
	json_t *rq = json_object_get(j, "runner_queue");
	ck_assert_msg(json_is_object(rq), "no runner_queue in the 202");
	ck_assert_str_eq(json_string_value(json_object_get(rq, "gpu")), "CPU");
	ck_assert(json_is_integer(json_object_get(rq, "queued_jobs")));
	json_decref(j);
	down();
}
END_TEST

/* Heartbeats only (KB_WORKER_STALE_S=2): a worker heard of is available
 * until two seconds after its last one. */
static const char *const outlook_env[] = {
	"KB_WORKER_STALE_S=2",
	"KB_MAX_QUEUED_PER_GPU=0",
	NULL,
};

/* A heartbeat of worker on gpu, busy with busy_with (0: idle). */
static void heartbeat(const char *gpu, const char *worker, uint64_t busy_with)
{
	Kb__Progress p = KB__PROGRESS__INIT;
	Kb__ResultEvent ev = KB__RESULT_EVENT__INIT;

	p.worker = (char *)worker;
	p.busy_with = busy_with;
	ev.gpu = (char *)gpu;
	ev.event_case = KB__RESULT_EVENT__EVENT_PROGRESS;
	ev.progress = &p;
	gw_produce_event(&E, &ev);
}

/* GET /runner_queue/gpu until field says want (a string or an integer
 * as text), for up to 10 s; returns the last answer. With hb_worker, a
 * heartbeat of it (busy with hb_busy) every half second meanwhile, as a
 * live worker sends them: on a loaded host one may arrive later than the
 * stale time. */
static json_t *queue_until_hb(const char *gpu, const char *field,
			      const char *want, const char *hb_worker,
			      uint64_t hb_busy)
{
	char path[64], got[64] = "";
	json_t *j = NULL;

	snprintf(path, sizeof(path), "/runner_queue/%s", gpu);
	for (int t = 0; t < 100; t++) {
		if (hb_worker && t % 5 == 0)
			heartbeat(gpu, hb_worker, hb_busy);
		json_decref(j);
		j = gw_expect_json(gw_req(&E, "GET", path, NULL, NULL, 0), 200,
				   "queue");
		const json_t *v = json_object_get(j, field);
		if (json_is_string(v))
			snprintf(got, sizeof(got), "%s", json_string_value(v));
		else
			snprintf(got, sizeof(got), "%lld",
				 (long long)json_integer_value(v));
		if (strcmp(got, want) == 0)
			return j;
		usleep(100000);
	}
	ck_assert_msg(0, "%s %s never said %s (last %s)", path, field, want,
		      got);
	return j;
}

static json_t *queue_until(const char *gpu, const char *field, const char *want)
{
	return queue_until_hb(gpu, field, want, NULL, 0);
}

START_TEST(worker_outlook)
{
	char alice[80], alice_id[40], path[64];
	json_t *j, *st;

	E.extra_env = outlook_env;
	gw_env_up(&E, 1, GW_ADMIN_TOKEN);
	gw_wait_consumer(&E);
	gw_create_user(&E, "alice", alice, alice_id);

	/* A gpu no worker serves: said at once in the 202, and by the queue. */
	j = queue_until("H100", "status", "unavailable");
	json_decref(j);
	j = gw_expect_json(gw_submit(&E, "/submission/gw_gpu_only/H100/test",
				     alice, CODE),
			   202, "no worker");
	uint64_t h = json_integer_value(
		json_object_get(json_object_get(j, "details"), "id"));
	const char *warning = json_string_value(json_object_get(j, "warning"));
	ck_assert_msg(warning && strstr(warning, "no worker online for H100"),
		      "%s", warning ? warning : "(no warning)");
	ck_assert_int_eq(
		json_integer_value(json_object_get(
			json_object_get(j, "runner_queue"), "workers_online")),
		0);
	json_decref(j);
	j = queue_until("H100", "queued_jobs", "1");
	json_decref(j);
	/* Deleted while queued: its message stays in the topic, but it waits
	 * no more; /runner_queue and /admin/stats agree. */
	snprintf(path, sizeof(path), "/user/submissions/%llu",
		 (unsigned long long)h);
	json_decref(gw_expect_json(gw_req_cli(&E, "DELETE", path, alice, NULL),
				   200, "delete"));
	j = queue_until("H100", "queued_jobs", "0");
	json_decref(j);
	j = gw_expect_json(gw_req_admin(&E, "GET", "/admin/stats", NULL), 200,
			   "stats");
	st = json_object_get(j, "stats");
	ck_assert_int_eq(json_integer_value(json_object_get(st, "queued")), 0);
	json_decref(j);

	/* A worker's heartbeat makes it available while idle; without one
	 * for the stale time it is gone. */
	heartbeat("CPU", "w-cpu", 0);
	j = queue_until("CPU", "status", "available");
	json_decref(j);
	j = queue_until("CPU", "status", "unavailable");
	json_decref(j);

	/* The estimate: a job of 4 s seen, the one worker busy: the next
	 * submission expects to wait one job (4 s), in the 202 and in the
	 * stream's queued status. */
	Kb__Result r = KB__RESULT__INIT;
	r.worker = "w-cpu";
	r.leaderboard = "gw_sum_cpu";
	r.gpu = "CPU";
	r.started_at_ms = 1000000;
	r.finished_at_ms = 1004000;
	r.verdict = KB__VERDICT__VERDICT_PASSED;
	gw_produce_result(&E, 999999, "CPU", &r);
	j = queue_until_hb("CPU", "status", "busy", "w-cpu", 999998);
	json_decref(j);
	heartbeat("CPU", "w-cpu", 999998);
	j = gw_expect_json(gw_submit(&E, "/submission/gw_sum_cpu/CPU/test",
				     alice, CODE),
			   202, "estimate");
	ck_assert_ptr_null(json_object_get(j, "warning"));
	ck_assert_int_eq(json_integer_value(json_object_get(
				 json_object_get(j, "runner_queue"),
				 "estimated_wait_s")),
			 4);
	json_decref(j);
	heartbeat("CPU", "w-cpu", 999998);
	struct gw_sse *s =
		gw_sse_start(&E, "/gw_sum_cpu/CPU/test", alice, CODE);
	ck_assert_msg(gw_sse_wait(s, "expected to start in about 8 s", 10000) ==
			      0,
		      "no estimate in the stream");
	ck_assert_int_eq(gw_sse_wait(s, "\"estimated_wait_s\":8", 1000), 0);
	ck_assert_int_eq(gw_sse_wait(s, "\"position\":2", 1000), 0);
	gw_produce_result(&E, gw_sse_id(s), "CPU", &r);
	char *body = NULL;
	gw_sse_finish(s, &body, NULL);
	free(body);
	down();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gateway_api");
	TCase *tc = tcase_create("api");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, user_submissions_and_delete);
	tcase_add_test(tc, admin_policies);
	tcase_add_test(tc, runner_queue);
	tcase_add_test(tc, worker_outlook);
	suite_add_tcase(s, tc);
	return kb_check_run(s);
}
