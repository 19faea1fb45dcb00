/* The /admin operations commands on a real kb-gateway, against the fake
 * Discord: ping, show-stats, get-submission, export, verify-task and
 * delete-leaderboard. Each is refused to users who are not admins, says
 * so for an unknown board or submission, and does its work for an admin.
 * No worker runs: submissions stay queued, which is all these need. */
#include <check.h>
#include <hiredis/hiredis.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dc_env.h"
#include "kb_check_main.h"
#include "kb_redis.h"
#include "kb_util.h"

#define USER "2001"

/* A test submission of vectorsum_cpu's good example by user, through
 * /leaderboard submit; returns its id. */
static long submit_one(struct dc_env *e, const char *user, const char *token,
		       const char *attachment_id)
{
	json_t *opt, *res;
	char *code, *s;
	size_t len;

	ck_assert_int_eq(kb_read_file(KB_SOURCE_DIR
				      "/problems/vectorsum_cpu/submission_ok.c",
				      1 << 20, &code, &len),
			 0);
	dc_attach(e, attachment_id, "mine.c", code, len, (long long)len, &opt,
		  &res);
	free(code);
	s = dc_cmd(e, user, token, "leaderboard submit test",
		   json_pack("[o,o]", opt,
			     dc_opt_str("leaderboard", "vectorsum_cpu")),
		   res, 5);
	free(s);
	struct fd_call c = dc_wait_edit(e, token, "Queued", 15000);
	const char *p = strstr(c.payload, "Submission #");
	long id = p ? strtol(p + strlen("Submission #"), NULL, 10) : -1;
	fd_call_free(&c);
	ck_assert_int_gt(id, 0);
	return id;
}

/* Asserts that an immediate answer (type 4) contains want. */
static void expect_now(struct dc_env *e, const char *user, const char *token,
		       const char *path, json_t *opts, const char *want)
{
	char *s = dc_cmd(e, user, token, path, opts, NULL, 4);

	ck_assert_msg(strstr(s, want), "/%s: \"%s\" is not in: %s", path, want,
		      s);
	free(s);
}

/* Runs a deferred command and returns the edit that contains want. */
static struct fd_call expect_later(struct dc_env *e, const char *token,
				   const char *path, json_t *opts,
				   const char *want)
{
	char *s = dc_cmd(e, DC_ADMIN, token, path, opts, NULL, 5);

	free(s);
	return dc_wait_edit(e, token, want, 15000);
}

static long long redis_int(struct dc_env *e, const char *cmd)
{
	char err[128];
	redisContext *rc =
		kb_redis_connect(e->redis.url, 2000, err, sizeof(err));

	ck_assert_msg(rc != NULL, "%s", err);
	redisReply *r = redisCommand(rc, cmd);
	ck_assert_ptr_nonnull(r);
	ck_assert_msg(r->type == REDIS_REPLY_INTEGER, "%s: reply type %d", cmd,
		      r->type);
	long long v = r->integer;
	freeReplyObject(r);
	redisFree(rc);
	return v;
}

/* Users who are not admins are refused every operations command, and
 * nothing happens; unknown boards and submissions are named. */
START_TEST(refusals_and_bad_input)
{
	static const char *const cmds[] = {
		"admin ping",
		"admin show-stats",
		"admin delete-leaderboard",
		"admin get-submission",
		"admin export",
		"admin verify-task",
	};
	struct dc_env e;
	char token[32];

	dc_env_up(&e, 1, 0);
	long id = submit_one(&e, USER, "t-sub", "601");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		snprintf(token, sizeof(token), "t-no%zu", i);
		json_t *opts = json_pack(
			"[o,o,o,o]", dc_opt_str("leaderboard", "matmul_cpu"),
			dc_opt_str("confirm", "matmul_cpu"),
			dc_opt_bool("force", 1),
			dc_opt_int("submission_id", id));
		expect_now(&e, USER, token, cmds[i], opts,
			   "Only KernelBot admins");
	}
	/* The refused delete deleted nothing. */
	expect_now(&e, USER, "t-list", "leaderboard list", NULL, "matmul_cpu");
	ck_assert_int_eq(redis_int(&e, "SISMEMBER kb:lbdeleted matmul_cpu"), 0);

	/* Unknown boards: answered at once, nothing deferred. */
	const char *board_cmds[] = {"admin show-stats",
				    "admin delete-leaderboard", "admin export",
				    "admin verify-task"};
	for (size_t i = 0; i < sizeof(board_cmds) / sizeof(board_cmds[0]);
	     i++) {
		snprintf(token, sizeof(token), "t-nob%zu", i);
		expect_now(&e, DC_ADMIN, token, board_cmds[i],
			   json_pack("[o,o]", dc_opt_str("leaderboard", "nope"),
				     dc_opt_str("confirm", "nope")),
			   "There is no leaderboard `nope`");
	}
	/* An unknown submission, and one that is not a number. */
	struct fd_call c = expect_later(
		&e, "t-nosub", "admin get-submission",
		json_pack("[o]", dc_opt_int("submission_id", 987654)),
		"There is no submission #987654");
	ck_assert_uint_eq(c.nfiles, 0);
	fd_call_free(&c);
	expect_now(&e, DC_ADMIN, "t-badsub", "admin get-submission",
		   json_pack("[o]", dc_opt_int("submission_id", -3)),
		   "positive number");
	dc_env_down(&e);
}
END_TEST

START_TEST(ping_stats_get_export)
{
	struct dc_env e;

	dc_env_up(&e, 1, 0);
	expect_now(&e, DC_ADMIN, "t-ping", "admin ping", NULL, "Pong. Store:");
	expect_now(&e, DC_ADMIN, "t-ping2", "admin ping", NULL,
		   "Submissions: accepted");
	/* No worker runs here, and ping says so. */
	expect_now(&e, DC_ADMIN, "t-ping3", "admin ping", NULL,
		   "- CPU: **none**");
	expect_now(&e, DC_ADMIN, "t-stop", "admin stop", NULL,
		   "stopped accepting");
	expect_now(&e, DC_ADMIN, "t-ping4", "admin ping", NULL,
		   "Submissions: **stopped**");
	expect_now(&e, DC_ADMIN, "t-start", "admin start", NULL,
		   "accepts submissions");

	long id = submit_one(&e, USER, "t-sub", "602");
	submit_one(&e, USER, "t-sub2", "603");

	struct fd_call c = expect_later(&e, "t-stats", "admin show-stats", NULL,
					"num_submissions = 2");
	ck_assert_ptr_nonnull(strstr(c.payload, "all leaderboards"));
	ck_assert_ptr_nonnull(strstr(c.payload, "num_users = 1"));
	ck_assert_ptr_nonnull(strstr(c.payload, "queued = 2"));
	fd_call_free(&c);
	c = expect_later(&e, "t-stats2", "admin show-stats",
			 json_pack("[o,o]",
				   dc_opt_str("leaderboard", "matmul_cpu"),
				   dc_opt_bool("last_day_only", 1)),
			 "num_submissions = 0");
	ck_assert_ptr_nonnull(
		strstr(c.payload, "`matmul_cpu` · last 24 hours"));
	fd_call_free(&c);

	/* Anyone's submission, for an admin: the code, and whose it is. */
	char want[64];
	snprintf(want, sizeof(want), "Submission #%ld", id);
	c = expect_later(&e, "t-get", "admin get-submission",
			 json_pack("[o]", dc_opt_int("submission_id", id)),
			 want);
	ck_assert_ptr_nonnull(strstr(c.payload, "(`discord-" USER "`)"));
	ck_assert_uint_ge(c.nfiles, 1);
	ck_assert_str_eq(c.file_name[0], "mine.c");
	ck_assert_ptr_nonnull(strstr(c.file[0], "custom_kernel"));
	fd_call_free(&c);

	/* export: the submissions as JSON Lines, the rankings as CSV. */
	c = expect_later(&e, "t-export", "admin export",
			 json_pack("[o]",
				   dc_opt_str("leaderboard", "vectorsum_cpu")),
			 "Export of `vectorsum_cpu`: 2 submissions");
	ck_assert_uint_eq(c.nfiles, 2);
	ck_assert_str_eq(c.file_name[0], "vectorsum_cpu-submissions.jsonl");
	ck_assert_str_eq(c.file_name[1], "vectorsum_cpu-rankings.csv");
	snprintf(want, sizeof(want), "\"submission_id\":%ld,", id);
	ck_assert_msg(strstr(c.file[0], want), "%s", c.file[0]);
	ck_assert_ptr_nonnull(
		strstr(c.file[0], "\"user_id\":\"discord-" USER "\""));
	ck_assert_ptr_nonnull(strstr(c.file[0], "\"status\":\"queued\""));
	ck_assert_ptr_null(strstr(c.file[0], "custom_kernel")); /* no code */
	ck_assert_ptr_nonnull(
		strstr(c.file[1], "gpu,rank,user_id,user_name,score_seconds"));
	fd_call_free(&c);
	c = expect_later(&e, "t-export2", "admin export",
			 json_pack("[o]",
				   dc_opt_str("leaderboard", "matmul_cpu")),
			 "Export of `matmul_cpu`: 0 submissions");
	ck_assert_uint_eq(c.nfiles, 1);
	ck_assert_str_eq(c.file_name[0], "matmul_cpu-rankings.csv");
	fd_call_free(&c);
	dc_env_down(&e);
}
END_TEST

START_TEST(verify_task)
{
	struct dc_env e;
	char path[512];

	dc_env_up(&e, 1, 0);
	struct fd_call c = expect_later(
		&e, "t-ok", "admin verify-task",
		json_pack("[o]", dc_opt_str("leaderboard", "vectorsum_cpu")),
		"is consistent");
	ck_assert_msg(strstr(c.payload, "`submission_ok.c` (should pass)") &&
			      strstr(c.payload,
				     "`submission_wrong.c` (should fail)") &&
			      strstr(c.payload, "12 tests and 3 benchmarks") &&
			      strstr(c.payload,
				     "match what this gateway serves"),
		      "%s", c.payload);
	fd_call_free(&c);

	/* An example for another board, and one in another language. */
	snprintf(path, sizeof(path),
		 "%s/problems/vectorsum_cpu/submission_other.c", e.dir);
	ck_assert_int_eq(kb_write_file(path,
				       "//!POPCORN leaderboard matmul_cpu\n",
				       34, 0644),
			 0);
	snprintf(path, sizeof(path),
		 "%s/problems/vectorsum_cpu/submission_fast.py", e.dir);
	ck_assert_int_eq(kb_write_file(path, "#!POPCORN gpu H100\n", 19, 0644),
			 0);
	c = expect_later(&e, "t-bad", "admin verify-task",
			 json_pack("[o]",
				   dc_opt_str("leaderboard", "vectorsum_cpu")),
			 "problems");
	ck_assert_msg(
		strstr(c.payload, "❌ **`vectorsum_cpu`**: 3 problems") &&
			strstr(c.payload,
			       "`submission_other.c` names leaderboard `matmul_cpu`") &&
			strstr(c.payload,
			       "`submission_fast.py` is not a `c` file") &&
			strstr(c.payload, "names GPU `H100`"),
		"%s", c.payload);
	fd_call_free(&c);

	/* A task file gone from disk: task.yml no longer loads. */
	snprintf(path, sizeof(path), "%s/problems/matmul_cpu/problem.c", e.dir);
	ck_assert_int_eq(unlink(path), 0);
	c = expect_later(&e, "t-gone", "admin verify-task",
			 json_pack("[o]",
				   dc_opt_str("leaderboard", "matmul_cpu")),
			 "cannot be read from disk");
	ck_assert_msg(strstr(c.payload, "problem.c"), "%s", c.payload);
	fd_call_free(&c);
	dc_env_down(&e);
}
END_TEST

START_TEST(delete_leaderboard)
{
	struct dc_env e;

	dc_env_up(&e, 1, 0);
	/* Without confirm: what would go, and how to confirm; nothing goes. */
	expect_now(&e, DC_ADMIN, "t-del0", "admin delete-leaderboard",
		   json_pack("[o]", dc_opt_str("leaderboard", "matmul_cpu")),
		   "run the command again with `confirm: matmul_cpu`");
	expect_now(&e, DC_ADMIN, "t-del1", "admin delete-leaderboard",
		   json_pack("[o,o]", dc_opt_str("leaderboard", "matmul_cpu"),
			     dc_opt_str("confirm", "matmul")),
		   "`confirm: matmul_cpu`");
	ck_assert_int_eq(redis_int(&e, "SISMEMBER kb:lbdeleted matmul_cpu"), 0);
	expect_now(&e, DC_ADMIN, "t-del2", "admin delete-leaderboard",
		   json_pack("[o,o]", dc_opt_str("leaderboard", "matmul_cpu"),
			     dc_opt_str("confirm", "matmul_cpu")),
		   "Leaderboard `matmul_cpu` is deleted.");
	ck_assert_int_eq(redis_int(&e, "SISMEMBER kb:lbdeleted matmul_cpu"), 1);
	ck_assert_int_eq(redis_int(&e, "EXISTS kb:lb:matmul_cpu"), 0);
	char *s = dc_cmd(&e, USER, "t-list", "leaderboard list", NULL, NULL, 4);
	ck_assert_msg(!strstr(s, "matmul_cpu") && strstr(s, "vectorsum_cpu"),
		      "%s", s);
	free(s);
	expect_now(&e, DC_ADMIN, "t-del3", "admin delete-leaderboard",
		   json_pack("[o,o]", dc_opt_str("leaderboard", "matmul_cpu"),
			     dc_opt_str("confirm", "matmul_cpu")),
		   "There is no leaderboard `matmul_cpu`");

	/* A board with submissions needs force, and loses its index. */
	submit_one(&e, USER, "t-sub", "604");
	ck_assert_int_eq(redis_int(&e, "EXISTS kb:subs:lb:vectorsum_cpu"), 1);
	expect_now(&e, DC_ADMIN, "t-del4", "admin delete-leaderboard",
		   json_pack("[o,o]",
			     dc_opt_str("leaderboard", "vectorsum_cpu"),
			     dc_opt_str("confirm", "vectorsum_cpu")),
		   "has submissions");
	ck_assert_int_eq(redis_int(&e, "SISMEMBER kb:lbdeleted vectorsum_cpu"),
			 0);
	expect_now(&e, DC_ADMIN, "t-del5", "admin delete-leaderboard",
		   json_pack("[o,o,o]",
			     dc_opt_str("leaderboard", "vectorsum_cpu"),
			     dc_opt_str("confirm", "vectorsum_cpu"),
			     dc_opt_bool("force", 1)),
		   "`vectorsum_cpu` is deleted with its rankings");
	ck_assert_int_eq(redis_int(&e, "SISMEMBER kb:lbdeleted vectorsum_cpu"),
			 1);
	ck_assert_int_eq(redis_int(&e, "EXISTS kb:subs:lb:vectorsum_cpu"), 0);
	dc_env_down(&e);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("discord_admin");
	TCase *tc = tcase_create("admin");

	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, refusals_and_bad_input);
	tcase_add_test(tc, ping_stats_get_export);
	tcase_add_test(tc, verify_task);
	tcase_add_test(tc, delete_leaderboard);
	suite_add_tcase(s, tc);
	return kb_check_run(s);
}
