/* POST /discord/interactions on a real kb-gateway, against the fake
 * Discord: signatures, every command, and a ranked submission through the
 * whole pipeline whose progress edits and final message reach Discord in
 * order. */
#include <check.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <inttypes.h>

#include "dc_env.h"
#include "kb.pb-c.h"
#include "kb_redis.h"
#include "kb_testenv.h"
#include "kb_util.h"
#include "kb_check_main.h"

#define USER "2001"
#define OTHER "2002"

static long sub_id_in(const char *payload)
{
	const char *p = strstr(payload, "Submission #");

	return p ? strtol(p + strlen("Submission #"), NULL, 10) : -1;
}

/* ---- the endpoint ---- */

START_TEST(endpoint_off_without_key)
{
	struct dc_env e;

	dc_env_up(&e, 0, 0);
	struct dc_resp r = dc_post(&e, "{\"type\":1}", 0, DC_SIGN_OK);
	ck_assert_int_eq(r.code, 404);
	dc_resp_free(&r);
	dc_env_down(&e);
}
END_TEST

START_TEST(ping_and_signatures)
{
	struct dc_env e;
	const char *ping =
		"{\"type\":1,\"id\":\"1\",\"application_id\":\"" DC_APP_ID
		"\"}";

	dc_env_up(&e, 1, 0);
	struct dc_resp r = dc_post(&e, ping, 0, DC_SIGN_OK);
	ck_assert_int_eq(r.code, 200);
	ck_assert_int_eq(json_integer_value(json_object_get(r.json, "type")),
			 1);
	dc_resp_free(&r);

	/* Forged, unsigned, stale, from the future: 401, and nothing runs. */
	r = dc_post(&e, ping, 0, DC_SIGN_FORGED);
	ck_assert_int_eq(r.code, 401);
	dc_resp_free(&r);
	r = dc_post(&e, ping, 0, DC_SIGN_NONE);
	ck_assert_int_eq(r.code, 401);
	dc_resp_free(&r);
	r = dc_post(&e, ping, -400, DC_SIGN_OK);
	ck_assert_int_eq(r.code, 401);
	dc_resp_free(&r);
	r = dc_post(&e, ping, 120, DC_SIGN_OK);
	ck_assert_int_eq(r.code, 401);
	dc_resp_free(&r);
	/* A signed command with a forged signature does not submit. */
	char *body = dc_interaction(2, USER, "forged", "leaderboard list", NULL,
				    NULL);
	r = dc_post(&e, body, 0, DC_SIGN_FORGED);
	ck_assert_int_eq(r.code, 401);
	dc_resp_free(&r);
	free(body);
	/* Signed garbage is a 400, not a crash. */
	r = dc_post(&e, "{\"type\":", 0, DC_SIGN_OK);
	ck_assert_int_eq(r.code, 400);
	dc_resp_free(&r);
	ck_assert_uint_eq(fd_ncalls(e.fd), 0);
	dc_env_down(&e);
}
END_TEST

START_TEST(read_commands)
{
	struct dc_env e;
	char *s;

	dc_env_up(&e, 1, 0);
	s = dc_cmd(&e, USER, "t-unknown", "leaderboard frobnicate", NULL, NULL,
		   4);
	ck_assert_ptr_nonnull(
		strstr(s, "Unknown command `/leaderboard frobnicate`"));
	free(s);

	s = dc_cmd(&e, USER, "t-list", "leaderboard list", NULL, NULL, 4);
	ck_assert_ptr_nonnull(strstr(s, "vectorsum_cpu"));
	ck_assert_ptr_nonnull(strstr(s, "matmul_cpu"));
	ck_assert_ptr_nonnull(strstr(s, "CPU"));
	free(s);

	s = dc_cmd(&e, USER, "t-show", "leaderboard show",
		   json_pack("[o]", dc_opt_str("leaderboard", "vectorsum_cpu")),
		   NULL, 4);
	ck_assert_ptr_nonnull(strstr(s, "no ranked submissions yet"));
	free(s);
	s = dc_cmd(&e, USER, "t-show2", "leaderboard show",
		   json_pack("[o]", dc_opt_str("leaderboard", "nope")), NULL,
		   4);
	ck_assert_ptr_nonnull(strstr(s, "There is no leaderboard `nope`"));
	free(s);
	s = dc_cmd(&e, USER, "t-show3", "leaderboard show",
		   json_pack("[o,o]",
			     dc_opt_str("leaderboard", "vectorsum_cpu"),
			     dc_opt_str("gpu", "H100")),
		   NULL, 4);
	ck_assert_ptr_nonnull(strstr(s, "does not run on `H100`"));
	free(s);

	/* task and template answer "deferred", then edit with files. */
	s = dc_cmd(&e, USER, "t-task", "leaderboard task",
		   json_pack("[o]", dc_opt_str("leaderboard", "vectorsum_cpu")),
		   NULL, 5);
	free(s);
	struct fd_call c =
		dc_wait_edit(&e, "t-task", "Task `vectorsum_cpu`", 10000);
	ck_assert_uint_ge(c.nfiles, 2);
	int has_problem = 0;
	for (size_t i = 0; i < c.nfiles; i++)
		has_problem |= strcmp(c.file_name[i], "problem.c") == 0;
	ck_assert(has_problem);
	ck_assert_ptr_nonnull(strstr(c.payload, "Sum a vector"));
	fd_call_free(&c);

	s = dc_cmd(&e, USER, "t-tpl", "leaderboard template",
		   json_pack("[o]", dc_opt_str("leaderboard", "vectorsum_cpu")),
		   NULL, 5);
	free(s);
	c = dc_wait_edit(&e, "t-tpl", "Starter code", 10000);
	ck_assert_uint_eq(c.nfiles, 1);
	ck_assert_str_eq(c.file_name[0], "vectorsum_cpu.c");
	ck_assert_ptr_nonnull(
		strstr(c.file[0], "//!POPCORN leaderboard vectorsum_cpu"));
	ck_assert_ptr_nonnull(strstr(c.file[0], "custom_kernel"));
	fd_call_free(&c);
	s = dc_cmd(&e, USER, "t-tpl2", "leaderboard template",
		   json_pack("[o,o]",
			     dc_opt_str("leaderboard", "vectorsum_cpu"),
			     dc_opt_str("lang", "Rust")),
		   NULL, 4);
	ck_assert_ptr_nonnull(strstr(s, "no template for `Rust`"));
	free(s);

	/* Autocomplete: boards, their gpus, their template languages. */
	char *body = dc_interaction(4, USER, "t-ac", "leaderboard show",
				    json_pack("[{s:s,s:i,s:s,s:b}]", "name",
					      "leaderboard", "type", 3, "value",
					      "VEC", "focused", 1),
				    NULL);
	struct dc_resp r = dc_post(&e, body, 0, DC_SIGN_OK);
	free(body);
	ck_assert_int_eq(r.code, 200);
	ck_assert_int_eq(json_integer_value(json_object_get(r.json, "type")),
			 8);
	json_t *ch =
		json_object_get(json_object_get(r.json, "data"), "choices");
	ck_assert_uint_eq(json_array_size(ch), 1);
	ck_assert_str_eq(json_string_value(json_object_get(
				 json_array_get(ch, 0), "value")),
			 "vectorsum_cpu");
	dc_resp_free(&r);
	body = dc_interaction(4, USER, "t-ac2", "leaderboard submit test",
			      json_pack("[o,{s:s,s:i,s:s,s:b}]",
					dc_opt_str("leaderboard", "matmul_cpu"),
					"name", "gpu", "type", 3, "value", "",
					"focused", 1),
			      NULL);
	r = dc_post(&e, body, 0, DC_SIGN_OK);
	free(body);
	ch = json_object_get(json_object_get(r.json, "data"), "choices");
	ck_assert_uint_eq(json_array_size(ch), 1);
	ck_assert_str_eq(json_string_value(json_object_get(
				 json_array_get(ch, 0), "name")),
			 "CPU");
	dc_resp_free(&r);
	dc_env_down(&e);
}
END_TEST

START_TEST(submissions_and_admin)
{
	struct dc_env e;
	json_t *opt, *res;
	char *s, *code;
	size_t len;

	dc_env_up(&e, 1, 0);
	ck_assert_int_eq(kb_read_file(KB_SOURCE_DIR
				      "/problems/vectorsum_cpu/submission_ok.c",
				      1 << 20, &code, &len),
			 0);

	/* Declared too large: refused at once. */
	dc_attach(&e, "701", "big.c", "x", 1, 2 << 20, &opt, &res);
	s = dc_cmd(&e, USER, "t-big", "leaderboard submit test",
		   json_pack("[o,o]", opt,
			     dc_opt_str("leaderboard", "vectorsum_cpu")),
		   res, 4);
	ck_assert_ptr_nonnull(strstr(s, "the limit is 1048576 bytes"));
	free(s);
	/* Declared small, served large: the download stops at the limit. */
	char *big = malloc((1 << 20) + 10);
	memset(big, 'a', (1 << 20) + 10);
	dc_attach(&e, "702", "liar.c", big, (1 << 20) + 10, 100, &opt, &res);
	free(big);
	s = dc_cmd(&e, USER, "t-liar", "leaderboard submit test",
		   json_pack("[o,o]", opt,
			     dc_opt_str("leaderboard", "vectorsum_cpu")),
		   res, 5);
	free(s);
	struct fd_call c =
		dc_wait_edit(&e, "t-liar", "larger than the limit", 10000);
	fd_call_free(&c);
	/* Not UTF-8. */
	dc_attach(&e, "703", "bin.c", "\xff\xfe\x00", 3, 3, &opt, &res);
	s = dc_cmd(&e, USER, "t-bin", "leaderboard submit test",
		   json_pack("[o,o]", opt,
			     dc_opt_str("leaderboard", "vectorsum_cpu")),
		   res, 5);
	free(s);
	c = dc_wait_edit(&e, "t-bin", "UTF-8", 10000);
	fd_call_free(&c);
	/* No leaderboard anywhere. */
	dc_attach(&e, "704", "anon.c", code, len, (long long)len, &opt, &res);
	s = dc_cmd(&e, USER, "t-anon", "leaderboard submit test",
		   json_pack("[o]", opt), res, 5);
	free(s);
	c = dc_wait_edit(&e, "t-anon", "#!POPCORN leaderboard", 10000);
	fd_call_free(&c);

	/* A good one: queued (no worker runs here), the board from the
	 * file's #!POPCORN line, the gpu the board's first. */
	struct kb_buf withdir = {0};
	kb_buf_printf(&withdir, "//!POPCORN leaderboard vectorsum_cpu\n%s",
		      code);
	dc_attach(&e, "705", "mine.c", withdir.data, withdir.len,
		  (long long)withdir.len, &opt, &res);
	s = dc_cmd(&e, USER, "t-ok", "leaderboard submit test",
		   json_pack("[o]", opt), res, 5);
	free(s);
	c = dc_wait_edit(&e, "t-ok", "Queued", 15000);
	long id = sub_id_in(c.payload);
	ck_assert_int_gt(id, 0);
	ck_assert_ptr_nonnull(strstr(
		c.payload, "`vectorsum_cpu` on **CPU** · test · `mine.c`"));
	fd_call_free(&c);

	/* benchmark and profile go the same way. */
	const char *modes[][2] = {{"benchmark", "t-bench"},
				  {"profile", "t-prof"}};
	for (int i = 0; i < 2; i++) {
		char path[64], attid[8], label[64];
		snprintf(path, sizeof(path), "leaderboard submit %s",
			 modes[i][0]);
		snprintf(attid, sizeof(attid), "72%d", i);
		snprintf(label, sizeof(label), "on **CPU** · %s · `mine.c`",
			 modes[i][0]);
		dc_attach(&e, attid, "mine.c", withdir.data, withdir.len,
			  (long long)withdir.len, &opt, &res);
		s = dc_cmd(&e, USER, modes[i][1], path, json_pack("[o]", opt),
			   res, 5);
		free(s);
		c = dc_wait_edit(&e, modes[i][1], label, 15000);
		fd_call_free(&c);
	}

	/* get-submission: the owner gets the code back; others do not. */
	s = dc_cmd(&e, USER, "t-get", "leaderboard get-submission",
		   json_pack("[o]", dc_opt_int("submission_id", id)), NULL, 5);
	free(s);
	c = dc_wait_edit(&e, "t-get", "Submission #", 10000);
	ck_assert_uint_ge(c.nfiles, 1);
	ck_assert_str_eq(c.file_name[0], "mine.c");
	ck_assert_str_eq(c.file[0], withdir.data);
	ck_assert_ptr_nonnull(strstr(c.payload, "still running"));
	fd_call_free(&c);
	s = dc_cmd(&e, OTHER, "t-get2", "leaderboard get-submission",
		   json_pack("[o]", dc_opt_int("submission_id", id)), NULL, 5);
	free(s);
	c = dc_wait_edit(&e, "t-get2", "not one of your submissions", 10000);
	ck_assert_uint_eq(c.nfiles, 0);
	fd_call_free(&c);
	s = dc_cmd(&e, USER, "t-pers", "leaderboard show-personal",
		   json_pack("[o]", dc_opt_str("leaderboard", "vectorsum_cpu")),
		   NULL, 4);
	char idtxt[32];
	snprintf(idtxt, sizeof(idtxt), "#%ld", id);
	ck_assert_msg(strstr(s, idtxt) && strstr(s, "Not ranked on CPU"), "%s",
		      s);
	free(s);

	/* Admin: only for admins. */
	s = dc_cmd(&e, USER, "t-adm0", "admin stop", NULL, NULL, 4);
	ck_assert_ptr_nonnull(strstr(s, "Only KernelBot admins"));
	free(s);
	s = dc_cmd(&e, DC_ADMIN, "t-adm1", "admin stop", NULL, NULL, 4);
	ck_assert_ptr_nonnull(strstr(s, "stopped accepting"));
	free(s);
	dc_attach(&e, "706", "mine2.c", withdir.data, withdir.len,
		  (long long)withdir.len, &opt, &res);
	s = dc_cmd(&e, USER, "t-stopped", "leaderboard submit test",
		   json_pack("[o]", opt), res, 5);
	free(s);
	c = dc_wait_edit(&e, "t-stopped", "Submission refused", 10000);
	fd_call_free(&c);
	s = dc_cmd(&e, DC_ADMIN, "t-adm2", "admin start", NULL, NULL, 4);
	ck_assert_ptr_nonnull(strstr(s, "accepts submissions again"));
	free(s);

	json_t *user_opt = json_pack("[{s:s,s:i,s:s}]", "name", "user", "type",
				     6, "value", OTHER);
	json_t *users = json_pack("{s:{s:{s:s,s:s}}}", "users", OTHER, "id",
				  OTHER, "username", "other");
	s = dc_cmd(&e, DC_ADMIN, "t-ban", "admin ban", user_opt, users, 4);
	ck_assert_ptr_nonnull(strstr(s, "<@" OTHER "> is banned"));
	free(s);
	dc_attach(&e, "707", "mine3.c", withdir.data, withdir.len,
		  (long long)withdir.len, &opt, &res);
	s = dc_cmd(&e, OTHER, "t-banned", "leaderboard submit test",
		   json_pack("[o]", opt), res, 5);
	free(s);
	c = dc_wait_edit(&e, "t-banned", "banned", 10000);
	fd_call_free(&c);
	user_opt = json_pack("[{s:s,s:i,s:s}]", "name", "user", "type", 6,
			     "value", OTHER);
	s = dc_cmd(&e, DC_ADMIN, "t-unban", "admin unban", user_opt, NULL, 4);
	ck_assert_ptr_nonnull(strstr(s, "may submit again"));
	free(s);

	s = dc_cmd(&e, DC_ADMIN, "t-del", "admin delete-submission",
		   json_pack("[o]", dc_opt_int("submission_id", id)), NULL, 4);
	ck_assert_msg(strstr(s, "is deleted"), "%s", s);
	free(s);
	s = dc_cmd(&e, USER, "t-get3", "leaderboard get-submission",
		   json_pack("[o]", dc_opt_int("submission_id", id)), NULL, 5);
	free(s);
	c = dc_wait_edit(&e, "t-get3", "not one of your submissions", 10000);
	fd_call_free(&c);

	s = dc_cmd(&e, DC_ADMIN, "t-reload", "admin reload-problems", NULL,
		   NULL, 5);
	free(s);
	c = dc_wait_edit(&e, "t-reload", "nothing to reload", 10000);
	fd_call_free(&c);
	/* A changed file on disk is reported, with how to apply it. */
	char path[512];
	snprintf(path, sizeof(path), "%s/problems/vectorsum_cpu/problem.c",
		 e.dir);
	FILE *f = fopen(path, "a");
	ck_assert_ptr_nonnull(f);
	fputs("/* changed */\n", f);
	fclose(f);
	s = dc_cmd(&e, DC_ADMIN, "t-reload2", "admin reload-problems", NULL,
		   NULL, 5);
	free(s);
	c = dc_wait_edit(&e, "t-reload2", "Changed on disk: `vectorsum_cpu`",
			 10000);
	ck_assert_ptr_nonnull(strstr(c.payload, "rolling restart"));
	ck_assert_ptr_null(strstr(c.payload, "matmul_cpu"));
	fd_call_free(&c);

	kb_buf_free(&withdir);
	free(code);
	dc_env_down(&e);
}
END_TEST

/* A signed interaction replayed within the signature's window runs once. */
START_TEST(replayed_interaction)
{
	struct dc_env e;

	dc_env_up(&e, 1, 0);
	char *body = dc_interaction(2, USER, "t-replay", "leaderboard list",
				    NULL, NULL);
	struct dc_resp r = dc_post(&e, body, 0, DC_SIGN_OK);
	ck_assert_int_eq(r.code, 200);
	dc_resp_free(&r);
	r = dc_post(&e, body, 0, DC_SIGN_OK);
	ck_assert_msg(r.code == 401, "a replayed interaction: HTTP %ld %s",
		      r.code, r.body);
	dc_resp_free(&r);
	free(body);
	/* Another interaction (another id) goes through. */
	char *s = dc_cmd(&e, USER, "t-replay2", "leaderboard list", NULL, NULL,
			 4);
	free(s);
	dc_env_down(&e);
}
END_TEST

static void redis_cmd(redisContext *rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	redisReply *r = redisvCommand(rc, fmt, ap);
	va_end(ap);
	ck_assert_ptr_nonnull(r);
	ck_assert_msg(r->type != REDIS_REPLY_ERROR, "redis: %s", r->str);
	freeReplyObject(r);
}

/* What the worker and the ranker leave in Redis for a ranked submission
 * that scored (the gateway's fallback poll finds it there). */
static void fake_ranked_result(redisContext *rc, long id, const char *uid)
{
	Kb__Result res = KB__RESULT__INIT;
	Kb__RunResult runs[2], *rp[2] = {&runs[0], &runs[1]};
	Kb__RunResult init = KB__RUN_RESULT__INIT;

	runs[0] = runs[1] = init;
	runs[0].key = "leaderboard";
	runs[1].key = "private";
	runs[0].success = runs[0].passed = runs[1].success = runs[1].passed = 1;
	res.submission_id = (uint64_t)id;
	res.leaderboard = "vectorsum_cpu";
	res.gpu = "CPU";
	res.mode = KB__MODE__MODE_LEADERBOARD;
	res.user_id = (char *)uid;
	res.n_runs = 2;
	res.runs = rp;
	res.has_score = 1;
	res.score = 0.000125;
	res.verdict = KB__VERDICT__VERDICT_PASSED;
	size_t len = kb__result__get_packed_size(&res);
	uint8_t *buf = malloc(len);
	kb__result__pack(&res, buf);
	redis_cmd(rc, "ZADD kb:rank:vectorsum_cpu:CPU 0.000125 %s", uid);
	redis_cmd(rc, "HSET kb:rankinfo:vectorsum_cpu:CPU %s %ld:1", uid, id);
	redis_cmd(rc, "SET kb:res:%ld:CPU %b", id, buf, len);
	redis_cmd(
		rc,
		"HSET kb:sub:%ld status done verdict passed score 0.000125 done_ms 2",
		id);
	free(buf);
}

/* Who is on top of a closed (invite-only) board is not for the public
 * announce channel. */
START_TEST(closed_board_not_announced)
{
	struct dc_env e;
	json_t *opt, *res;
	char *code, *s, err[128];
	size_t len;

	dc_env_up(&e, 1, 0);
	redisContext *rc =
		kb_redis_connect(e.redis.url, 2000, err, sizeof(err));
	ck_assert_msg(rc != NULL, "%s", err);
	redis_cmd(rc, "HSET kb:lb:vectorsum_cpu visibility closed");
	redis_cmd(rc, "SADD kb:lbaccess:vectorsum_cpu discord-" USER);
	/* The gateway syncs visibility every 2 s; the show command sees it. */
	for (int waited = 0;; waited += 250) {
		s = dc_cmd(&e, OTHER, "t-closed-list", "leaderboard list", NULL,
			   NULL, 4);
		int gone = !strstr(s, "vectorsum_cpu");
		free(s);
		if (gone)
			break;
		ck_assert_msg(waited < 60000, "the board never closed");
		struct timespec ts = {0, 250000000L};
		nanosleep(&ts, NULL);
	}
	ck_assert_int_eq(kb_read_file(KB_SOURCE_DIR
				      "/problems/vectorsum_cpu/submission_ok.c",
				      1 << 20, &code, &len),
			 0);
	dc_attach(&e, "901", "fast.c", code, len, (long long)len, &opt, &res);
	s = dc_cmd(&e, USER, "t-closed", "leaderboard submit ranked",
		   json_pack("[o,o]", opt,
			     dc_opt_str("leaderboard", "vectorsum_cpu")),
		   res, 5);
	free(s);
	struct fd_call c = dc_wait_edit(&e, "t-closed", "Queued", 15000);
	long id = sub_id_in(c.payload);
	ck_assert_int_gt(id, 0);
	fd_call_free(&c);
	fake_ranked_result(rc, id, "discord-" USER);
	c = dc_wait_edit(&e, "t-closed", "The full report is attached", 30000);
	ck_assert_msg(strstr(c.payload, "First place"), "%s", c.payload);
	fd_call_free(&c);
	ck_assert_msg(fd_wait(e.fd, "POST",
			      "/channels/" DC_ANNOUNCE "/messages", NULL, 1,
			      3000) == 0,
		      "a closed board's top 3 was announced");
	/* Nor is the placement said in public (the result message above is
	 * the submitter's own, ephemeral). */
	ck_assert_msg(fd_wait(e.fd, "POST", "/webhooks/" DC_APP_ID "/t-closed",
			      NULL, 1, 0) == 0,
		      "a public follow-up for a closed board");
	redisFree(rc);
	free(code);
	dc_env_down(&e);
}
END_TEST

/* ---- a ranked submission, end to end ---- */

/* Checks the edits of token's original message, in arrival order: the
 * 429 first (when rate_limited), every later one at least retry_after
 * after it, progress edits (⏳) at least a second apart, the final one
 * (holding final_text) last. */
static void check_edit_order(struct dc_env *e, const char *token,
			     int rate_limited, const char *final_text)
{
	char needle[160];
	size_t n = fd_ncalls(e->fd), edits = 0, progress = 0;
	double first_at = 0, last_progress = -1;
	int seen_final = 0;

	snprintf(needle, sizeof(needle), "/webhooks/%s/%s/messages/@original",
		 DC_APP_ID, token);
	for (size_t i = 0; i < n; i++) {
		struct fd_call c;
		ck_assert_int_eq(fd_get(e->fd, i, &c), 0);
		if (strcmp(c.method, "PATCH") != 0 ||
		    strcmp(c.path, needle) != 0) {
			fd_call_free(&c);
			continue;
		}
		if (edits++ == 0 && rate_limited) {
			ck_assert_int_eq(c.status, 429);
			first_at = c.at;
		} else {
			ck_assert_int_eq(c.status, 200);
			ck_assert_msg(!rate_limited || c.at - first_at >= 0.69,
				      "retried after %.3f s", c.at - first_at);
			ck_assert_msg(!seen_final,
				      "an edit after the final one: %s",
				      c.payload);
			if (strstr(c.payload, final_text)) {
				seen_final = 1;
			} else {
				ck_assert_msg(strstr(c.payload, "⏳"), "%s",
					      c.payload);
				if (last_progress >= 0)
					ck_assert_msg(
						c.at - last_progress >= 0.9,
						"progress edits %.3f s apart",
						c.at - last_progress);
				last_progress = c.at;
				progress++;
			}
		}
		fd_call_free(&c);
	}
	ck_assert_int_eq(seen_final, 1);
	ck_assert_uint_ge(progress, 1);
}

START_TEST(ranked_flow)
{
	struct dc_env e;
	json_t *opt, *res;
	char *code, *s, needle[160], token[16] = "", attid[8];
	size_t len;
	struct fd_call fin = {0};

	dc_env_up(&e, 1, 1);
	ck_assert_int_eq(kb_read_file(KB_SOURCE_DIR
				      "/problems/vectorsum_cpu/submission_ok.c",
				      1 << 20, &code, &len),
			 0);
	/* A loaded machine can make the worker distrust its timings (verdict
	 * "suspect", not ranked): then the flow is checked again with a new
	 * submission. */
	for (int attempt = 1; attempt <= 3; attempt++) {
		snprintf(token, sizeof(token), "rtok%d", attempt);
		snprintf(attid, sizeof(attid), "80%d", attempt);
		snprintf(needle, sizeof(needle),
			 "/webhooks/%s/%s/messages/@original", DC_APP_ID,
			 token);
		/* Discord is busy once: the first edit gets a 429. */
		fd_rule(e.fd, "PATCH", needle, 429,
			"{\"message\":\"You are being rate limited.\",\"retry_after\":0.7,"
			"\"global\":false}",
			NULL, 1);
		dc_attach(&e, attid, "fast.c", code, len, (long long)len, &opt,
			  &res);
		s = dc_cmd(
			&e, USER, token, "leaderboard submit ranked",
			json_pack("[o,o]", opt,
				  dc_opt_str("leaderboard", "vectorsum_cpu")),
			res, 5);
		free(s);
		fin = dc_wait_edit(&e, token, "The full report is attached",
				   180000);
		check_edit_order(&e, token, 1, "The full report is attached");
		if (strstr(fin.payload, "Passed"))
			break;
		ck_assert_msg(strstr(fin.payload, "Suspect timing") &&
				      attempt < 3,
			      "attempt %d: %s", attempt, fin.payload);
		fprintf(stderr,
			"ranked_flow: attempt %d was not ranked (suspect timing)\n",
			attempt);
		fd_call_free(&fin);
	}
	long id = sub_id_in(fin.payload);
	ck_assert_int_gt(id, 0);
	ck_assert_msg(strstr(fin.payload, "score") &&
			      strstr(fin.payload, "First place on CPU") &&
			      strstr(fin.payload,
				     "first successful submission"),
		      "%s", fin.payload);
	char report[64];
	snprintf(report, sizeof(report), "submission-%ld-report.txt", id);
	ck_assert_uint_eq(fin.nfiles, 1);
	ck_assert_str_eq(fin.file_name[0], report);
	ck_assert_uint_gt(fin.file_len[0], 100);

	/* The public follow-up with the placement, and the announcement. */
	snprintf(needle, sizeof(needle), "/webhooks/%s/%s", DC_APP_ID, token);
	ck_assert_uint_eq(fd_wait(e.fd, "POST", needle, "First place on CPU", 1,
				  10000),
			  1);
	ck_assert_uint_eq(fd_wait(e.fd, "POST",
				  "/channels/" DC_ANNOUNCE "/messages",
				  "takes #1", 1, 10000),
			  1);
	for (size_t i = 0; i < fd_ncalls(e.fd); i++) {
		struct fd_call c;
		fd_get(e.fd, i, &c);
		if (strstr(c.path, "/channels/")) {
			ck_assert_str_eq(c.auth, "Bot test-bot-token");
			ck_assert_ptr_nonnull(strstr(c.payload, "<@" USER ">"));
		}
		fd_call_free(&c);
	}
	/* show now ranks the user. */
	s = dc_cmd(&e, OTHER, "t-show-after", "leaderboard show",
		   json_pack("[o]", dc_opt_str("leaderboard", "vectorsum_cpu")),
		   NULL, 4);
	ck_assert_msg(strstr(s, "#1") && strstr(s, "Tester") &&
			      strstr(s, "fast.c"),
		      "%s", s);
	free(s);
	if (getenv("DC_DUMP")) /* to see what Discord would show */
		fd_dump(e.fd);
	fd_call_free(&fin);
	free(code);
	dc_env_down(&e);
}
END_TEST

/* ---- sealed and not sealed (issue 32) ---- */

#define NOT_SEALED_ST_OPEN                                                     \
	"**Not sealed**: eval.py is not a standard upstream version; timing "  \
	"is measured by the submission's own process"

/* A copy of the line of text that names board (the first), or NULL. */
static char *line_naming(const char *text, const char *board)
{
	const char *p = strstr(text, board), *a, *z;

	if (!p)
		return NULL;
	for (a = p; a > text && a[-1] != '\n'; a--)
		;
	z = p + strcspn(p, "\n");
	return strndup(a, (size_t)(z - a));
}

/* An upstream board that is not sealed says so in /leaderboard list,
 * show and task, with the reason; a sealed one says nothing of sealing. */
START_TEST(not_sealed_boards)
{
	struct dc_env e;
	char *s, *line;

	dc_env_up_with(&e, 1, 0, 1);
	s = dc_cmd(&e, USER, "t-seal-list", "leaderboard list", NULL, NULL, 4);
	line = line_naming(s, "st_open");
	ck_assert_msg(line && strstr(line, "(not sealed)"), "%s", s);
	free(line);
	line = line_naming(s, "st_sealed");
	ck_assert_msg(line && !strstr(line, "sealed)"), "%s", s);
	free(line);
	line = line_naming(s, "vectorsum_cpu");
	ck_assert_msg(line && !strstr(line, "sealed"), "%s", s);
	free(line);
	free(s);

	s = dc_cmd(&e, USER, "t-seal-show", "leaderboard show",
		   json_pack("[o]", dc_opt_str("leaderboard", "st_open")), NULL,
		   4);
	ck_assert_msg(strstr(s, NOT_SEALED_ST_OPEN) &&
			      strstr(s, "Ranking of `st_open`"),
		      "%s", s);
	free(s);
	s = dc_cmd(&e, USER, "t-seal-show2", "leaderboard show",
		   json_pack("[o]", dc_opt_str("leaderboard", "st_sealed")),
		   NULL, 4);
	ck_assert_msg(!strstr(s, "sealed**") &&
			      strstr(s, "Ranking of `st_sealed`"),
		      "%s", s);
	free(s);

	s = dc_cmd(&e, USER, "t-seal-task", "leaderboard task",
		   json_pack("[o]", dc_opt_str("leaderboard", "st_open")), NULL,
		   5);
	free(s);
	struct fd_call c =
		dc_wait_edit(&e, "t-seal-task", "Task `st_open`", 10000);
	ck_assert_msg(strstr(c.payload, NOT_SEALED_ST_OPEN), "%s", c.payload);
	fd_call_free(&c);
	s = dc_cmd(&e, USER, "t-seal-task2", "leaderboard task",
		   json_pack("[o]", dc_opt_str("leaderboard", "st_sealed")),
		   NULL, 5);
	free(s);
	c = dc_wait_edit(&e, "t-seal-task2", "Task `st_sealed`", 10000);
	ck_assert_msg(!strstr(c.payload, "Not sealed"), "%s", c.payload);
	fd_call_free(&c);
	dc_env_down(&e);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("discord_gateway");
	TCase *tc = tcase_create("gateway");

	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, endpoint_off_without_key);
	tcase_add_test(tc, ping_and_signatures);
	tcase_add_test(tc, read_commands);
	tcase_add_test(tc, submissions_and_admin);
	tcase_add_test(tc, replayed_interaction);
	tcase_add_test(tc, closed_board_not_announced);
	suite_add_tcase(s, tc);
	/* CK_RUN_CASE=seal runs only this one. */
	TCase *seal = tcase_create("seal");
	tcase_set_timeout(seal, 120);
	tcase_add_test(seal, not_sealed_boards);
	suite_add_tcase(s, seal);
	/* CK_RUN_CASE=pipeline runs only this one. */
	TCase *pipe = tcase_create("pipeline");
	tcase_set_timeout(pipe, 540);
	tcase_add_test(pipe, ranked_flow);
	suite_add_tcase(s, pipe);
	return kb_check_run(s);
}
