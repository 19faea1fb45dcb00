/* The admin endpoints (/admin/...): every one needs the bearer token
 * (KB_ADMIN_TOKEN, compared in constant time; 403 when the admin API is
 * off, 401 when missing or wrong). Shapes follow upstream's admin API. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/events.h"
#include "core/problems.h"
#include "core/results.h"
#include "http/bodies.h"
#include "kb_log.h"
#include "kb_util.h"
#include "routes.h"

#define ADMIN_BODY_MAX (64u << 10)

/* begin() of every admin endpoint with a JSON body. */
static void admin_json_begin(struct kb_gw_req *r)
{
	if (kb_gw_require_admin(r) == 0)
		kb_gw_expect_json(r, ADMIN_BODY_MAX);
}

/* ---- POST /admin/users ---- */

static void users_finish(struct kb_gw_req *r)
{
	struct kb_gw_body_user b;
	char user_id[33], cli_id[65];
	const char *why = "";
	int st = kb_gw_body_user(r->json, r->json_len, &b, &why), rc;

	if (st) {
		kb_gw_reply_error(r, st, "%s", why);
		return;
	}
	rc = kb_gw_user_create(r->g, b.name, user_id, cli_id);
	if (rc < 0) {
		kb_gw_store_failed(r, rc);
		return;
	}
	kb_info("admin created user=%s", user_id); /* never the CLI id */
	kb_gw_reply_json(r, 200,
			 json_pack("{s:s,s:s,s:s}", "user_id", user_id,
				   "cli_id", cli_id, "name", b.name));
}

/* Answers a failed change of user uid (404 unknown, 503/500 store) and
 * returns 1; 0 when rc is 0. */
static int user_failed(struct kb_gw_req *r, const char *uid, int rc)
{
	if (rc == -ENOENT)
		kb_gw_reply_error(r, 404, "User %s not found", uid);
	else if (rc < 0)
		kb_gw_store_failed(r, rc);
	return rc < 0;
}

/* ---- DELETE /admin/users/{user_id}/cli-id ---- */

/* For a user who lost their CLI id: a login alone may not replace an
 * account's id (link.lua), so an admin takes the old one away and the
 * owner's next login links a new one. */
static void user_cli_begin(struct kb_gw_req *r)
{
	const char *uid = r->route.params[0];
	int rc;

	if (kb_gw_require_admin(r) < 0)
		return;
	rc = kb_rules_user_id_ok(uid) ? kb_gw_user_clear_cli(r->g, uid)
				      : -ENOENT;
	if (user_failed(r, uid, rc))
		return;
	kb_info("admin: user=%s CLI id cleared", uid);
	kb_gw_reply_json(
		r, 200, json_pack("{s:s,s:s}", "status", "ok", "user_id", uid));
}

/* ---- POST /admin/start, /admin/stop ---- */

static void accepting(struct kb_gw_req *r, int on)
{
	int rc;

	if (kb_gw_require_admin(r) < 0)
		return;
	rc = kb_gw_set_accepting(r->g, on);
	if (rc < 0) {
		kb_gw_store_failed(r, rc);
		return;
	}
	kb_info("admin: submissions %s", on ? "accepted" : "stopped");
	kb_gw_reply_json(r, 200,
			 json_pack("{s:s,s:b}", "status", "ok", "accepts_jobs",
				   on));
}

static void start_begin(struct kb_gw_req *r)
{
	accepting(r, 1);
}

static void stop_begin(struct kb_gw_req *r)
{
	accepting(r, 0);
}

/* ---- POST/DELETE /admin/ban/{user_id} ---- */

static void ban(struct kb_gw_req *r, int on)
{
	const char *uid = r->route.params[0];
	int rc;

	if (kb_gw_require_admin(r) < 0)
		return;
	rc = kb_rules_user_id_ok(uid) ? kb_gw_user_set_banned(r->g, uid, on)
				      : -ENOENT;
	if (user_failed(r, uid, rc))
		return;
	kb_info("admin: user=%s banned=%d", uid, on);
	kb_gw_reply_json(r, 200,
			 json_pack("{s:s,s:s,s:b}", "status", "ok", "user_id",
				   uid, "banned", on));
}

static void ban_begin(struct kb_gw_req *r)
{
	ban(r, 1);
}

static void unban_begin(struct kb_gw_req *r)
{
	ban(r, 0);
}

/* ---- leaderboards ---- */

static void lb_create_finish(struct kb_gw_req *r)
{
	struct kb_gw_body_lb_create b;
	char name[80], err[512];
	const char *why = "";
	int st = kb_gw_body_lb_create(r->json, r->json_len, &b, &why), rc;

	if (st) {
		kb_gw_reply_error(r, st, "%s", why);
		return;
	}
	/* As upstream: the board is "<directory>-dev", replacing one of that
	 * name. */
	snprintf(name, sizeof(name), "%s-dev", b.directory);
	const struct kb_gw_lb *old = kb_gw_lb_find(r->g, name);
	if (old &&
	    (rc = kb_gw_lb_delete(r->g, (struct kb_gw_lb *)old, 1)) < 0) {
		kb_gw_store_failed(r, rc);
		return;
	}
	struct kb_gw_lb *lb = kb_gw_lb_add_dynamic(r->g, b.directory, name, 0,
						   &st, err, sizeof(err));
	if (!lb) {
		kb_gw_reply_error(r, st, "%s", err);
		return;
	}
	rc = kb_gw_store_init_board(r->g, lb, b.closed ? "closed" : "public",
				    err, sizeof(err));
	if (rc == 0)
		rc = kb_gw_board_record(r->g, name, b.directory);
	if (rc < 0) {
		atomic_store(&lb->deleted, 1);
		kb_gw_store_failed(r, rc);
		return;
	}
	atomic_fetch_add(&r->g->boards_gen, 1);
	kb_info("admin created board %s from %s", name, b.directory);
	kb_gw_reply_json(r, 200,
			 json_pack("{s:s,s:s,s:s}", "status", "ok",
				   "leaderboard", name, "visibility",
				   b.closed ? "closed" : "public"));
}

static void lb_delete_begin(struct kb_gw_req *r)
{
	int force, has = 0, rc;

	if (kb_gw_require_admin(r) < 0)
		return;
	force = kb_rules_bool(kb_gw_query(r, "force"), 0);
	if (force < 0) {
		kb_gw_reply_error(r, 400, "force must be true or false");
		return;
	}
	if (kb_gw_board_and_gpu(r, r->route.params[0], NULL) < 0)
		return;
	rc = kb_gw_board_has_submissions(r->g, r->lb->task->name, &has);
	if (rc < 0) {
		kb_gw_store_failed(r, rc);
		return;
	}
	if (has && !force) {
		kb_gw_reply_error(r, 400,
				  "leaderboard '%s' has submissions; delete "
				  "it with force=true",
				  r->lb->task->name);
		return;
	}
	rc = kb_gw_lb_delete(r->g, (struct kb_gw_lb *)r->lb, force);
	if (rc < 0) {
		kb_gw_store_failed(r, rc);
		return;
	}
	kb_info("admin deleted board %s force=%d", r->lb->task->name, force);
	kb_gw_reply_json(r, 200,
			 json_pack("{s:s,s:s,s:b}", "status", "ok",
				   "leaderboard", r->lb->task->name, "force",
				   force));
}

static void lb_board_json_begin(struct kb_gw_req *r)
{
	if (kb_gw_require_admin(r) < 0 ||
	    kb_gw_board_and_gpu(r, r->route.params[0], NULL) < 0)
		return;
	kb_gw_expect_json(r, ADMIN_BODY_MAX);
}

static void visibility_finish(struct kb_gw_req *r)
{
	const char *why = "";
	int closed = 0, rc,
	    st = kb_gw_body_visibility(r->json, r->json_len, &closed, &why);

	if (st) {
		kb_gw_reply_error(r, st, "%s", why);
		return;
	}
	rc = kb_gw_set_visibility(r->g, r->lb->task->name,
				  closed ? "closed" : "public");
	if (rc < 0) {
		kb_gw_store_failed(r, rc);
		return;
	}
	atomic_store(&((struct kb_gw_lb *)r->lb)->closed, closed);
	atomic_fetch_add(&r->g->boards_gen, 1);
	kb_info("admin: board %s visibility=%s", r->lb->task->name,
		closed ? "closed" : "public");
	kb_gw_reply_json(r, 200,
			 json_pack("{s:s,s:s,s:s}", "status", "ok",
				   "leaderboard", r->lb->task->name,
				   "visibility", closed ? "closed" : "public"));
}

static int admin_board(struct kb_gw_req *r)
{
	if (kb_gw_require_admin(r) < 0 ||
	    kb_gw_board_and_gpu(r, r->route.params[0], NULL) < 0)
		return -1;
	return 0;
}

static void lb_submissions_begin(struct kb_gw_req *r)
{
	struct kb_gw_sub_list l;
	const char *why = "";
	long limit, offset;
	int rc;

	if (admin_board(r) < 0)
		return;
	rc = kb_rules_page(kb_gw_query(r, "limit"), kb_gw_query(r, "offset"),
			   100, 1000, &limit, &offset, &why);
	if (rc) {
		kb_gw_reply_error(r, rc, "%s", why);
		return;
	}
	rc = kb_gw_sub_list_board(r->g, r->lb->task->name, offset, limit, &l);
	if (rc < 0) {
		kb_gw_store_failed(r, rc);
		return;
	}
	json_t *ids = json_array(), *subs = json_array();
	for (size_t i = 0; i < l.n; i++) {
		json_array_append_new(ids, json_integer((json_int_t)l.ids[i]));
		const redisReply *row = l.rows[i];
		json_array_append_new(
			subs,
			json_pack(
				"{s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "id",
				(json_int_t)l.ids[i], "user_id",
				kb_gw_jstr(kb_gw_list_value(row, "user_id")),
				"user_name",
				kb_gw_jstr(kb_gw_list_value(row, "user_name")),
				"gpu", kb_gw_jstr(kb_gw_list_value(row, "gpu")),
				"mode",
				kb_gw_jstr(kb_gw_list_value(row, "mode")),
				"status",
				kb_gw_jstr(kb_gw_list_value(row, "status")),
				"verdict",
				kb_gw_jstr(kb_gw_list_value(row, "verdict")),
				"score",
				kb_gw_jnum(kb_gw_list_value(row, "score"))));
	}
	kb_gw_sub_list_free(&l);
	kb_gw_reply_json(r, 200,
			 json_pack("{s:s,s:s,s:I,s:I,s:o,s:o}", "status", "ok",
				   "leaderboard", r->lb->task->name, "limit",
				   (json_int_t)limit, "offset",
				   (json_int_t)offset, "submission_ids", ids,
				   "submissions", subs));
}

static void lb_invites_begin(struct kb_gw_req *r)
{
	struct kb_gw_invite *iv = NULL;
	size_t n = 0;
	int rc;

	if (admin_board(r) < 0)
		return;
	rc = kb_gw_invites_list(r->g, r->lb->task->name, &iv, &n);
	if (rc < 0) {
		kb_gw_store_failed(r, rc);
		return;
	}
	json_t *list = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(
			list,
			json_pack("{s:s,s:o,s:o,s:o,s:o}", "code", iv[i].code,
				  "user_id",
				  iv[i].user_id[0] ? kb_gw_jstr(iv[i].user_id)
						   : json_null(),
				  "user_name",
				  iv[i].user_name[0]
					  ? kb_gw_jstr(iv[i].user_name)
					  : json_null(),
				  "claimed_at", kb_gw_jiso(iv[i].claimed_ms),
				  "created_at", kb_gw_jiso(iv[i].created_ms)));
	free(iv);
	kb_gw_reply_json(r, 200,
			 json_pack("{s:s,s:s,s:o}", "status", "ok",
				   "leaderboard", r->lb->task->name, "invites",
				   list));
}

/* ---- rate limits ---- */

static json_t *rate_json(const char *lb, const char *cat, long max)
{
	return json_pack("{s:s,s:s,s:I}", "leaderboard_name", lb,
			 "mode_category", cat, "max_submissions_per_hour",
			 (json_int_t)max);
}

static void rate_set_finish(struct kb_gw_req *r)
{
	struct kb_gw_body_rate b;
	const char *why = "";
	int st = kb_gw_body_rate(r->json, r->json_len, &b, &why), rc;

	if (st) {
		kb_gw_reply_error(r, st, "%s", why);
		return;
	}
	rc = kb_gw_rate_set(r->g, r->lb->task->name, b.category, b.max);
	if (rc < 0) {
		kb_gw_store_failed(r, rc);
		return;
	}
	kb_info("admin: board %s rate limit %s=%ld/h", r->lb->task->name,
		b.category, b.max);
	kb_gw_reply_json(
		r, 200,
		json_pack("{s:s,s:o}", "status", "ok", "rate_limit",
			  rate_json(r->lb->task->name, b.category, b.max)));
}

static void rate_get_begin(struct kb_gw_req *r)
{
	static const char *const cats[2] = {"test", "leaderboard"};
	long max[2], def[2];
	int rc;

	if (admin_board(r) < 0)
		return;
	rc = kb_gw_rate_get(r->g, r->lb->task->name, max);
	if (rc < 0) {
		kb_gw_store_failed(r, rc);
		return;
	}
	def[0] = r->g->cfg.rate_test;
	def[1] = r->g->cfg.rate_leaderboard;
	json_t *list = json_array();
	for (int i = 0; i < 2; i++) {
		if (!max[i] && !def[i])
			continue;
		json_t *o = rate_json(r->lb->task->name, cats[i],
				      max[i] ? max[i] : def[i]);
		json_object_set_new(o, "source",
				    json_string(max[i] ? "leaderboard"
						       : "default"));
		json_array_append_new(list, o);
	}
	kb_gw_reply_json(r, 200,
			 json_pack("{s:s,s:s,s:o}", "status", "ok",
				   "leaderboard", r->lb->task->name,
				   "rate_limits", list));
}

static void rate_delete_begin(struct kb_gw_req *r)
{
	const char *cat = r->route.params[1];
	int rc;

	if (admin_board(r) < 0)
		return;
	if (!kb_rules_category_ok(cat)) {
		kb_gw_reply_error(
			r, 400,
			"mode_category must be 'test' or 'leaderboard'");
		return;
	}
	rc = kb_gw_rate_set(r->g, r->lb->task->name, cat, 0);
	if (rc < 0) {
		kb_gw_store_failed(r, rc);
		return;
	}
	kb_gw_reply_json(r, 200,
			 json_pack("{s:s,s:s,s:s}", "status", "ok",
				   "leaderboard", r->lb->task->name,
				   "mode_category", cat));
}

/* ---- invites ---- */

static void invites_finish(struct kb_gw_req *r)
{
	struct kb_gw_body_invites b;
	const char *why = "", *names[KB_GW_INVITE_LBS_MAX];
	int st = kb_gw_body_invites(r->json, r->json_len, &b, &why), rc;

	if (st) {
		kb_gw_reply_error(r, st, "%s", why);
		return;
	}
	for (size_t i = 0; i < b.n; i++) {
		if (!kb_gw_lb_find(r->g, b.lbs[i])) {
			kb_gw_reply_error(r, 404, "unknown leaderboard '%s'",
					  b.lbs[i]);
			return;
		}
		names[i] = b.lbs[i];
	}
	char(*codes)[33] = calloc((size_t)b.count, sizeof(*codes));
	if (!codes) {
		kb_gw_reply_error(r, 500, "out of memory");
		return;
	}
	rc = kb_gw_invites_create(r->g, names, b.n, b.count, codes);
	if (rc < 0) {
		free(codes);
		kb_gw_store_failed(r, rc);
		return;
	}
	json_t *lbs = json_array(), *list = json_array();
	for (size_t i = 0; i < b.n; i++)
		json_array_append_new(lbs, json_string(b.lbs[i]));
	for (long k = 0; k < b.count; k++)
		json_array_append_new(list, json_string(codes[k]));
	free(codes);
	kb_info("admin made %ld invite code(s) for %zu board(s)", b.count, b.n);
	kb_gw_reply_json(r, 200,
			 json_pack("{s:s,s:o,s:o}", "status", "ok",
				   "leaderboards", lbs, "codes", list));
}

static void invite_revoke_begin(struct kb_gw_req *r)
{
	const char *code = r->route.params[0];
	int claimed = 0, rc;

	if (kb_gw_require_admin(r) < 0)
		return;
	if (!kb_rules_name_ok(code, 64)) {
		kb_gw_reply_error(r, 404, "Invalid invite code");
		return;
	}
	rc = kb_gw_invite_revoke(r->g, code, &claimed);
	if (rc == -ENOENT) {
		kb_gw_reply_error(r, 404, "Invalid invite code");
		return;
	}
	if (rc < 0) {
		kb_gw_store_failed(r, rc);
		return;
	}
	kb_gw_reply_json(r, 200,
			 json_pack("{s:s,s:s,s:b}", "status", "ok", "code",
				   code, "was_claimed", claimed));
}

/* ---- GET /admin/stats ---- */

static void stats_begin(struct kb_gw_req *r)
{
	struct kb_gw_stats st;
	const char *lb = kb_gw_query(r, "leaderboard_name");
	int last_day, rc;

	if (kb_gw_require_admin(r) < 0)
		return;
	last_day = kb_rules_bool(kb_gw_query(r, "last_day_only"), 0);
	if (last_day < 0) {
		kb_gw_reply_error(r, 400,
				  "last_day_only must be true or false");
		return;
	}
	if (lb && kb_gw_board_and_gpu(r, lb, NULL) < 0)
		return;
	rc = kb_gw_stats(r->g, lb, last_day ? kb_now_ms() - 86400000 : 0, &st);
	if (rc < 0) {
		kb_gw_store_failed(r, rc);
		return;
	}
	json_t *s = json_pack(
		"{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:o,s:b}", "num_submissions",
		(json_int_t)st.submissions, "num_users", (json_int_t)st.users,
		"num_ranked_entries", (json_int_t)st.ranked_entries, "queued",
		(json_int_t)st.by_status[0], "running",
		(json_int_t)st.by_status[1], "done",
		(json_int_t)st.by_status[2], "failed",
		(json_int_t)st.not_passed, "leaderboard",
		lb ? json_string(lb) : json_null(), "last_day_only", last_day);
	/* Upstream's keys (its generate_stats): waiting submissions, and per
	 * runner (GPU type) "num_run.<gpu>" and friends; num_unique_codes
	 * all-time only, as there. */
	json_object_set_new(
		s, "sub_waiting",
		json_integer((json_int_t)(st.by_status[0] + st.by_status[1])));
	if (!last_day)
		json_object_set_new(s, "num_unique_codes",
				    json_integer((json_int_t)st.unique_codes));
	for (size_t i = 0; i < st.nrunners; i++) {
		const struct kb_gw_runner_stats *rs = &st.runners[i];
		const struct {
			const char *key;
			long v;
		} kv[] = {{"num_run", rs->runs},
			  {"runs_passed", rs->passed},
			  {"runs_scored", rs->scored},
			  {"runs_secret", rs->secret}};
		for (size_t k = 0; k < sizeof(kv) / sizeof(kv[0]); k++) {
			char key[96];
			snprintf(key, sizeof(key), "%s.%s", kv[k].key, rs->gpu);
			json_object_set_new(s, key,
					    json_integer((json_int_t)kv[k].v));
		}
	}
	kb_gw_reply_json(r, 200,
			 json_pack("{s:s,s:o}", "status", "ok", "stats", s));
}

/* ---- /admin/submissions/{id} ---- */

static int admin_id(struct kb_gw_req *r, uint64_t *id)
{
	if (kb_gw_require_admin(r) < 0)
		return -1;
	if (kb_parse_u64(r->route.params[0], id) != 0 || *id == 0) {
		kb_gw_reply_error(r, 400, "invalid submission id");
		return -1;
	}
	return 0;
}

static void submission_begin(struct kb_gw_req *r)
{
	struct kb_gw_sub_rec rec;
	uint64_t id;
	int rc;

	if (admin_id(r, &id) < 0)
		return;
	rc = kb_gw_sub_fetch(r->g, id, 1, &rec);
	if (rc == -ENOENT) {
		kb_gw_reply_error(r, 404, "Submission not found");
		return;
	}
	if (rc < 0) {
		kb_gw_store_failed(r, rc);
		return;
	}
	const struct kb_gw_lb *lb =
		kb_gw_lb_find(r->g, kb_gw_sub_field(&rec, "lb"));
	json_t *o = kb_gw_submission_json(id, &rec, lb ? lb->index + 1 : 0,
					  kb_now_ms(), 1);
	kb_gw_sub_rec_free(&rec);
	/* Upstream's admin view names the id so (its SubmissionItem). */
	json_object_set_new(o, "submission_id", json_integer((json_int_t)id));
	kb_gw_reply_json(r, 200,
			 json_pack("{s:s,s:o}", "status", "ok", "submission",
				   o));
}

static void submission_delete_begin(struct kb_gw_req *r)
{
	char lb[160], gpu[160];
	uint64_t id;
	int changed = 0, rc;

	if (admin_id(r, &id) < 0)
		return;
	rc = kb_gw_sub_delete(r->g, id, NULL, lb, sizeof(lb), gpu, sizeof(gpu),
			      &changed);
	kb_gw_sub_deleted(r, id, rc, "Submission not found", lb, gpu, changed,
			  "an admin");
}

const struct kb_gw_handler kb_gw_admin_handlers[KB_ROUTE_COUNT] = {
	[KB_ROUTE_ADMIN_USERS] = {admin_json_begin, users_finish},
	[KB_ROUTE_ADMIN_USER_CLI] = {user_cli_begin, NULL},
	[KB_ROUTE_ADMIN_START] = {start_begin, NULL},
	[KB_ROUTE_ADMIN_STOP] = {stop_begin, NULL},
	[KB_ROUTE_ADMIN_BAN] = {ban_begin, NULL},
	[KB_ROUTE_ADMIN_UNBAN] = {unban_begin, NULL},
	[KB_ROUTE_ADMIN_LB_CREATE] = {admin_json_begin, lb_create_finish},
	[KB_ROUTE_ADMIN_LB_DELETE] = {lb_delete_begin, NULL},
	[KB_ROUTE_ADMIN_LB_VISIBILITY] = {lb_board_json_begin,
					  visibility_finish},
	[KB_ROUTE_ADMIN_LB_SUBMISSIONS] = {lb_submissions_begin, NULL},
	[KB_ROUTE_ADMIN_LB_INVITES] = {lb_invites_begin, NULL},
	[KB_ROUTE_ADMIN_RATE_SET] = {lb_board_json_begin, rate_set_finish},
	[KB_ROUTE_ADMIN_RATE_GET] = {rate_get_begin, NULL},
	[KB_ROUTE_ADMIN_RATE_DELETE] = {rate_delete_begin, NULL},
	[KB_ROUTE_ADMIN_INVITES] = {admin_json_begin, invites_finish},
	[KB_ROUTE_ADMIN_INVITE_REVOKE] = {invite_revoke_begin, NULL},
	[KB_ROUTE_ADMIN_STATS] = {stats_begin, NULL},
	[KB_ROUTE_ADMIN_SUBMISSION] = {submission_begin, NULL},
	[KB_ROUTE_ADMIN_SUBMISSION_DELETE] = {submission_delete_begin, NULL},
};
