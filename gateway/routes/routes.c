/* The public and user endpoints and the helpers every endpoint file
 * shares (routes.h). Each endpoint is a begin() on the headers and, for
 * those with a body, a finish() on it (see http.h).
 *
 * Order of checks on POST /submission/{lb}/{gpu}/{mode}, all decided from
 * the headers before a byte of the body is read: CLI id (401, or 403 for a
 * banned user), leaderboard and gpu (404), mode (400), Content-Length
 * (413), Content-Type (400). Then the body: the multipart framing (400),
 * the file field (400 when missing), its size (413), its text (400); then
 * the policy (kb_gw_submit: 403 deadline/closed, 429 rate limit, 503
 * stopped).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cache.h"
#include "base/queue.h"
#include "core/events.h"
#include "core/problems.h"
#include "core/results.h"
#include "core/submit.h"
#include "http/bodies.h"
#include "kb_log.h"
#include "kb_time.h"
#include "kb_util.h"
#include "routes.h"

#define JOIN_BODY_MAX (4u << 10)
#define RANKING_DEFAULT_LIMIT 100
#define RANKING_MAX_LIMIT 1000
#define USER_LIST_DEFAULT 50
#define USER_LIST_MAX 100

/* ---- shared helpers (routes.h) ---- */

void kb_gw_reply_submit_error(struct kb_gw_req *r,
			      const struct kb_gw_submit_res *res)
{
	r->sub_counted = 1; /* kb_gw_submit counted its own refusal */
	if (res->status == 429)
		kb_gw_reply_error_retry(
			r, 429, res->retry_after_s > 0 ? res->retry_after_s : 1,
			"%s (retry in %ld s)", res->detail, res->retry_after_s);
	else
		kb_gw_reply_error(r, res->status ? res->status : 500, "%s",
				  res->status ? res->detail : "internal error");
}

/* ---- GET /health, /leaderboards, /gpus/{lb} ---- */

static void health_begin(struct kb_gw_req *r)
{
	kb_gw_reply_health(r);
}

static char *render_all_boards(void *g)
{
	return kb_gw_render_leaderboards(g, 1);
}

static char *render_public_boards(void *g)
{
	return kb_gw_render_leaderboards(g, 0);
}

/* Re-rendered when the board table or a visibility changed (boards_gen);
 * one body with closed boards, one without (shared slots 0 and 1). */
static void leaderboards_begin(struct kb_gw_req *r)
{
	unsigned gen = atomic_load(&r->g->boards_gen);
	int anon;

	/* A closed board is listed to admins and signed-in users only: no
	 * anonymous surface names it. */
	if (kb_gw_is_admin(r))
		anon = 0;
	else if (kb_gw_authenticate_optional(r) < 0)
		return;
	else
		anon = !r->has_user;
	kb_gw_reply_shared(r, (unsigned)anon, gen,
			   anon ? render_public_boards : render_all_boards,
			   r->g);
}

static void gpus_begin(struct kb_gw_req *r)
{
	if (kb_gw_board_and_gpu(r, r->route.params[0], NULL) < 0 ||
	    kb_gw_board_access(r) < 0)
		return;
	struct MHD_Response *resp =
		kb_gw_json_response(r->lb->gpus_json, strlen(r->lb->gpus_json),
				    MHD_RESPMEM_PERSISTENT);
	kb_gw_reply_response(r, 200, resp);
	if (resp)
		MHD_destroy_response(resp);
	else
		kb_gw_reply_error(r, 500, "internal error");
}

/* ---- POST /submission/{lb}/{gpu}/{mode} ---- */

int kb_gw_submission_headers(struct kb_gw_req *r, const char *lb,
			     const char *gpu, const char *mode)
{
	if (kb_gw_board_and_gpu(r, lb, gpu) < 0)
		return -1;
	r->mode = kb_mode_parse(mode);
	if (r->mode == KB_MODE_INVALID) {
		kb_gw_reply_error(
			r, 400,
			"unknown submission mode '%s' (expected test, "
			"benchmark, profile or leaderboard)",
			mode);
		return -1;
	}
	return kb_gw_expect_file(r);
}

static void submit_begin(struct kb_gw_req *r)
{
	r->submission = 1;
	if (kb_gw_authenticate(r) < 0)
		return;
	kb_gw_submission_headers(r, r->route.params[0], r->route.params[1],
				 r->route.params[2]);
}

/* The runner_queue of a submission queued at position (< 1: unknown) on
 * gpu, with queued jobs there; note gets what its wait is (events.h). */
static json_t *runner_queue_json(struct kb_gw *g, const char *gpu, long queued,
				 long position, char *note, size_t note_size)
{
	struct kb_gw_outlook o;

	kb_gw_queue_note(g, gpu, position, &o, note, note_size);
	if (queued < 0)
		return json_null();
	return json_pack("{s:s,s:s,s:I,s:o,s:o}", "runner", "kb-worker", "gpu",
			 gpu, "queued_jobs", (json_int_t)queued,
			 "workers_online",
			 o.workers >= 0 ? json_integer(o.workers) : json_null(),
			 "estimated_wait_s",
			 o.wait_s >= 0
				 ? json_integer((json_int_t)(o.wait_s + 0.5))
				 : json_null());
}

/* A background submission between its halves (submit.h). */
struct deferred_submit {
	struct kb_gw_pending p;
	struct kb_gw_submit_res res;
};

static void publish_work(struct kb_gw_req *r)
{
	struct deferred_submit *d = r->pending;

	kb_gw_submit_publish(r->g, &d->p, &d->res);
}

static void publish_done(struct kb_gw_req *r)
{
	struct deferred_submit *d = r->pending;

	if (d->res.status) {
		kb_gw_reply_submit_error(r, &d->res);
	} else {
		char note[160];
		long position = 0;
		if (kb_gw_queue_position(r->g, d->p.s.gpu, d->res.id,
					 &position) < 0)
			position = 0;
		json_t *rq = runner_queue_json(r->g, d->p.s.gpu,
					       d->res.queued_jobs, position,
					       note, sizeof(note));
		json_t *o = json_pack("{s:{s:I,s:I},s:s,s:o}", "details", "id",
				      (json_int_t)d->res.id, "job_status_id",
				      (json_int_t)d->res.id, "status",
				      "accepted", "runner_queue", rq);
		/* A gpu no worker serves is said at once, not left to a
		 * silent wait. */
		if (strncmp(note, "no worker", 9) == 0)
			json_object_set_new(o, "warning", kb_gw_jstr(note));
		kb_gw_reply_json(r, 202, o);
	}
	free(d);
	r->pending = NULL;
}

/* Shared by POST /submission and POST /admin/submission: records the
 * file for r->user here, then publishes it on the pool and answers 202
 * (or the error). */
static void submit_and_reply(struct kb_gw_req *r, int admin)
{
	struct deferred_submit *d;
	const char *fn = NULL;
	size_t len = 0;
	const char *code = kb_gw_take_file(r, &len, &fn);

	if (!code)
		return;
	d = calloc(1, sizeof(*d));
	if (!d) {
		kb_gw_reply_error(r, 500, "out of memory");
		return;
	}
	struct kb_gw_submit_req req = {
		.user_id = r->user.id,
		.lb = r->lb->task->name,
		.gpu = r->route.params[r->route.nparams - 2],
		.mode = kb_mode_name(r->mode),
		.file_name = fn,
		.code = code,
		.code_len = len,
		.admin = admin,
	};
	if (kb_gw_submit_record(r->g, &req, &d->res, &d->p) < 0) {
		kb_gw_reply_submit_error(r, &d->res);
		free(d);
		return;
	}
	r->sub_id = d->res.id;
	r->pending = d;
	r->pending_free = free;
	kb_gw_defer(r, publish_work, publish_done);
}

static void submit_finish(struct kb_gw_req *r)
{
	submit_and_reply(r, 0);
}

/* POST /admin/submission/{lb}/{gpu}/{mode}: an admin submits on behalf of
 * the user named by X-Popcorn-Cli-Id, past the deadline if need be. */
static void admin_submit_begin(struct kb_gw_req *r)
{
	r->submission = 1;
	if (kb_gw_require_admin(r) < 0 || kb_gw_authenticate(r) < 0)
		return;
	kb_gw_submission_headers(r, r->route.params[0], r->route.params[1],
				 r->route.params[2]);
}

static void admin_submit_finish(struct kb_gw_req *r)
{
	submit_and_reply(r, 1);
}

/* ---- /user/submissions ---- */

static int parse_id(struct kb_gw_req *r, const char *s, uint64_t *id)
{
	if (kb_parse_u64(s, id) != 0 || *id == 0) {
		kb_gw_reply_error(r, 400, "invalid submission id");
		return -1;
	}
	return 0;
}

static long board_id_of(const struct kb_gw *g, const char *name)
{
	const struct kb_gw_lb *lb = name ? kb_gw_lb_find(g, name) : NULL;

	return lb ? lb->index + 1 : 0;
}

/* The runner_queue of an unfinished submission (cached values only). */
static json_t *sub_runner_queue(struct kb_gw_req *r, uint64_t id,
				const struct kb_gw_sub_rec *rec)
{
	const char *status = kb_gw_sub_field(rec, "status");
	const char *gpu = kb_gw_sub_field(rec, "gpu");

	char note[160];
	long position = 0;

	if (!gpu || !status || strcmp(status, "queued") != 0)
		return json_null();
	if (kb_gw_queue_position(r->g, gpu, id, &position) < 0)
		position = 0;
	long queued = -1;
	if (kb_gw_queued_count(r->g, gpu, &queued) < 0)
		queued = -1;
	json_t *rq = runner_queue_json(r->g, gpu, queued, position, note,
				       sizeof(note));
	if (json_is_object(rq))
		json_object_set_new(rq, "note",
				    note[0] ? kb_gw_jstr(note) : json_null());
	return rq;
}

static void user_submission_begin(struct kb_gw_req *r)
{
	struct kb_gw_sub_rec rec;
	uint64_t id;
	int rc;

	if (kb_gw_authenticate(r) < 0 ||
	    parse_id(r, r->route.params[0], &id) < 0)
		return;
	rc = kb_gw_sub_fetch(r->g, id, 1, &rec);
	if (rc == -ENOENT) {
		kb_gw_reply_error(r, 404, "submission not found");
		return;
	}
	if (rc < 0) {
		kb_gw_store_failed(r, rc);
		return;
	}
	const char *owner = kb_gw_sub_field(&rec, "user_id");
	if (!owner || strcmp(owner, r->user.id) != 0) {
		kb_gw_sub_rec_free(&rec);
		kb_gw_reply_error(r, 403,
				  "not authorized to view this submission");
		return;
	}
	json_t *o = kb_gw_submission_json(
		id, &rec, board_id_of(r->g, kb_gw_sub_field(&rec, "lb")),
		kb_now_ms(), 1);
	json_object_set_new(o, "runner_queue", sub_runner_queue(r, id, &rec));
	kb_gw_sub_rec_free(&rec);
	kb_gw_reply_json(r, 200, o);
}

void kb_gw_sub_deleted(struct kb_gw_req *r, uint64_t id, int rc,
		       const char *not_found, const char *lb, const char *gpu,
		       int changed, const char *by)
{
	char prefix[330];

	if (rc == -ENOENT) {
		kb_gw_reply_error(r, 404, "%s", not_found);
		return;
	}
	if (rc == -EPERM) {
		kb_gw_reply_error(r, 403,
				  "not authorized to delete this submission");
		return;
	}
	if (rc < 0) {
		kb_gw_store_failed(r, rc);
		return;
	}
	if (changed && r->g->cache) {
		snprintf(prefix, sizeof(prefix), "%s|%s|", lb, gpu);
		kb_gw_cache_invalidate(r->g->cache, prefix);
	}
	kb_info("sub=%" PRIu64 " deleted by %s ranking_changed=%d", id, by,
		changed);
	kb_gw_reply_json(r, 200,
			 json_pack("{s:s,s:I}", "status", "ok", "submission_id",
				   (json_int_t)id));
}

static void user_submission_delete_begin(struct kb_gw_req *r)
{
	char lb[160], gpu[160], by[200];
	uint64_t id;
	int changed = 0, rc;

	if (kb_gw_authenticate(r) < 0 ||
	    parse_id(r, r->route.params[0], &id) < 0)
		return;
	rc = kb_gw_sub_delete(r->g, id, r->user.id, lb, sizeof(lb), gpu,
			      sizeof(gpu), &changed);
	snprintf(by, sizeof(by), "its owner user=%s", r->user.id);
	kb_gw_sub_deleted(r, id, rc, "submission not found", lb, gpu, changed,
			  by);
}

/* ?limit (1..max, default def) and ?offset (>= 0), strictly: out-of-range
 * values are an error, as upstream's list endpoints answer. */
static int strict_page(struct kb_gw_req *r, long def, long max, long *limit,
		       long *offset)
{
	const char *ls = kb_gw_query(r, "limit"),
		   *os = kb_gw_query(r, "offset");
	uint64_t v;

	*limit = def;
	*offset = 0;
	if (ls && (kb_parse_u64(ls, &v) != 0 || v < 1 || v > (uint64_t)max)) {
		kb_gw_reply_error(r, 400, "limit must be between 1 and %ld",
				  max);
		return -1;
	}
	if (ls)
		*limit = (long)v;
	if (os && (kb_parse_u64(os, &v) != 0 || v > 1000000000u)) {
		kb_gw_reply_error(r, 400, "offset must be >= 0");
		return -1;
	}
	if (os)
		*offset = (long)v;
	return 0;
}

static json_t *list_item(uint64_t id, const redisReply *row)
{
	const char *ms_s = kb_gw_list_value(row, "submitted_ms");
	const char *status = kb_gw_list_value(row, "status");
	const char *gpu = kb_gw_list_value(row, "gpu");
	char when[40] = "";
	json_t *score = kb_gw_jnum(kb_gw_list_value(row, "score"));
	json_t *runs = json_array();

	if (ms_s)
		kb_time_iso8601(strtoll(ms_s, NULL, 10), when, sizeof(when));
	if (status && strcmp(status, "done") == 0)
		json_array_append_new(runs, json_pack("{s:o,s:O}", "gpu_type",
						      kb_gw_jstr(gpu), "score",
						      score));
	json_t *o =
		json_pack("{s:I,s:o,s:o,s:s,s:b,s:o,s:o,s:o,s:o,s:o,s:o,s:o}",
			  "id", (json_int_t)id, "leaderboard_name",
			  kb_gw_jstr(kb_gw_list_value(row, "lb")), "file_name",
			  kb_gw_jstr(kb_gw_list_value(row, "file_name")),
			  "submission_time", when, "done",
			  status && (strcmp(status, "done") == 0 ||
				     strcmp(status, "failed") == 0),
			  "gpu_type", kb_gw_jstr(gpu), "mode",
			  kb_gw_jstr(kb_gw_list_value(row, "mode")), "status",
			  kb_gw_jstr(status), "stage",
			  kb_gw_jstr(kb_gw_list_value(row, "stage")), "verdict",
			  kb_gw_jstr(kb_gw_list_value(row, "verdict")), "score",
			  score, "runs", runs);
	struct kb_gw_job_in in = {
		.id = id,
		.status = status,
		.mode = kb_gw_list_value(row, "mode"),
		.verdict = kb_gw_list_value(row, "verdict"),
		.scored = json_is_number(score),
		.gpu = gpu,
	};
	json_object_set_new(o, "job", kb_gw_job_json(&in));
	return o;
}

static void user_submissions_begin(struct kb_gw_req *r)
{
	struct kb_gw_sub_list l;
	const char *lb = kb_gw_query(r, "leaderboard");
	long limit, offset;
	int rc;

	if (kb_gw_authenticate(r) < 0 ||
	    strict_page(r, USER_LIST_DEFAULT, USER_LIST_MAX, &limit, &offset) <
		    0)
		return;
	if (lb && !kb_rules_name_ok(lb, 64)) {
		kb_gw_reply_error(r, 400, "invalid leaderboard name");
		return;
	}
	const struct kb_gw_lb *known = lb ? kb_gw_lb_find(r->g, lb) : NULL;
	if (known) /* names match case-insensitively; the index has one */
		lb = known->task->name;
	rc = kb_gw_sub_list_user(r->g, r->user.id, lb, offset, limit, &l);
	if (rc < 0) {
		kb_gw_store_failed(r, rc);
		return;
	}
	json_t *list = json_array();
	for (size_t i = 0; i < l.n; i++)
		json_array_append_new(list, list_item(l.ids[i], l.rows[i]));
	kb_gw_sub_list_free(&l);
	kb_gw_reply_json(r, 200, list);
}

/* ---- POST /user/join ---- */

static void user_join_begin(struct kb_gw_req *r)
{
	if (kb_gw_authenticate(r) == 0)
		kb_gw_expect_json(r, JOIN_BODY_MAX);
}

static void user_join_finish(struct kb_gw_req *r)
{
	struct kb_gw_body_join b;
	char lbs[16 * 66], why[128];
	const char *reason = "";
	int st = kb_gw_body_join(r->json, r->json_len, &b, &reason), rc;

	if (st) {
		kb_gw_reply_error(r, st, "%s", reason);
		return;
	}
	rc = kb_gw_invite_claim(r->g, b.code, r->user.id, r->user.name, lbs,
				sizeof(lbs), why, sizeof(why));
	if (rc == 1) {
		kb_gw_reply_error(r, 400, "%s", why);
		return;
	}
	if (rc < 0) {
		kb_gw_store_failed(r, rc);
		return;
	}
	json_t *list = json_array();
	char *save = NULL;
	for (char *t = strtok_r(lbs, ",", &save); t;
	     t = strtok_r(NULL, ",", &save))
		json_array_append_new(list, json_string(t));
	kb_info("user=%s joined %zu closed leaderboard(s)", r->user.id,
		json_array_size(list));
	kb_gw_reply_json(r, 200,
			 json_pack("{s:s,s:o}", "status", "ok", "leaderboards",
				   list));
}

/* ---- GET /submissions/{lb}/{gpu} ---- */

static json_t *ranking_json(const struct kb_gw_lb *lb, const char *gpu,
			    const struct kb_gw_rank_entry *e, size_t n)
{
	json_t *list = json_array();

	for (size_t i = 0; i < n; i++) {
		char when[40];
		int known = e[i].submitted_ms != INT64_MAX;
		kb_time_iso8601(known ? e[i].submitted_ms : 0, when,
				sizeof(when));
		json_t *o = json_object();
		json_object_set_new(o, "rank", json_integer(e[i].rank));
		json_object_set_new(o, "user_id", kb_gw_jstr(e[i].user_id));
		json_object_set_new(o, "user_name", kb_gw_jstr(e[i].user_name));
		json_object_set_new(o, "score", json_real(e[i].score));
		json_object_set_new(o, "submission_score",
				    json_real(e[i].score));
		json_object_set_new(
			o, "submission_id",
			e[i].sub_id ? json_integer((json_int_t)e[i].sub_id)
				    : json_null());
		json_object_set_new(o, "submission_name",
				    kb_gw_jstr(e[i].file_name));
		json_object_set_new(o, "submitted_at",
				    known ? json_string(when) : json_null());
		json_object_set_new(o, "submission_time",
				    known ? json_string(when) : json_null());
		json_object_set_new(o, "submitted_ms",
				    known ? json_integer(e[i].submitted_ms)
					  : json_null());
		json_object_set_new(o, "leaderboard_name",
				    json_string(lb->task->name));
		json_object_set_new(o, "gpu_type", kb_gw_jstr(gpu));
		json_array_append_new(list, o);
	}
	return list;
}

struct cached_use {
	struct kb_gw_req *r;
};

static int use_cached(void *value, void *ctx)
{
	struct cached_use *u = ctx;

	kb_gw_reply_response(u->r, 200, value);
	return 0;
}

static void ranking_begin(struct kb_gw_req *r)
{
	struct kb_gw_rank_entry *e = NULL;
	const char *why = "", *gpu = r->route.params[1];
	char key[320];
	long limit, offset;
	size_t n = 0;
	int rc;

	if (kb_gw_board_and_gpu(r, r->route.params[0], gpu) < 0 ||
	    kb_gw_board_access(r) < 0)
		return;
	rc = kb_rules_page(kb_gw_query(r, "limit"), kb_gw_query(r, "offset"),
			   RANKING_DEFAULT_LIMIT, RANKING_MAX_LIMIT, &limit,
			   &offset, &why);
	if (rc) {
		kb_gw_reply_error(r, rc, "%s", why);
		return;
	}
	snprintf(key, sizeof(key), "%s|%s|%ld|%ld", r->lb->task->name, gpu,
		 limit, offset);
	struct cached_use u = {r};
	if (r->g->cache &&
	    kb_gw_cache_use(r->g->cache, key, use_cached, &u) == 0)
		return;
	rc = kb_gw_ranking(r->g, r->lb->task->name, gpu, offset, limit, &e, &n);
	if (rc < 0) {
		kb_gw_store_failed(r, rc);
		return;
	}
	json_t *list = ranking_json(r->lb, gpu, e, n);
	free(e);
	char *s = json_dumps(list, JSON_COMPACT);
	json_decref(list);
	struct MHD_Response *resp =
		s ? kb_gw_json_response(s, strlen(s), MHD_RESPMEM_MUST_FREE)
		  : NULL;
	if (!resp) {
		free(s);
		kb_gw_reply_error(r, 500, "internal error");
		return;
	}
	kb_gw_reply_response(r, 200, resp);
	if (r->g->cache)
		kb_gw_cache_put(r->g->cache, key,
				resp); /* keeps our reference */
	else
		MHD_destroy_response(resp);
}

/* ---- GET /submission_count/{lb}/{gpu} ---- */

static void submission_count_begin(struct kb_gw_req *r)
{
	const char *user = kb_gw_query(r, "user_id");
	long count = 0;
	int rc;

	if (kb_gw_board_and_gpu(r, r->route.params[0], r->route.params[1]) <
		    0 ||
	    kb_gw_board_access(r) < 0)
		return;
	if (user && !kb_rules_user_id_ok(user)) {
		kb_gw_reply_error(r, 400, "invalid user_id");
		return;
	}
	rc = kb_gw_ranking_count(r->g, r->lb->task->name, r->route.params[1],
				 user, &count);
	if (rc < 0) {
		kb_gw_store_failed(r, rc);
		return;
	}
	kb_gw_reply_json(r, 200,
			 json_pack("{s:I}", "count", (json_int_t)count));
}

/* ---- GET /runner_queue/{gpu} ---- */

static void runner_queue_begin(struct kb_gw_req *r)
{
	struct kb_gw_worker_info w[64];
	const char *gpu = r->route.params[0];
	char err[256] = "";
	long lag = 0, running = 0;
	int64_t now = kb_now_ms();
	int rc;

	if (!kb_gw_gpu_known(r->g, gpu)) {
		kb_gw_reply_error(r, 404, "no leaderboard offers gpu '%s'",
				  gpu);
		return;
	}
	rc = kb_gw_running_count(r->g, gpu, &running);
	if (rc < 0) {
		kb_gw_store_failed(r, rc);
		return;
	}
	int lag_rc = r->g->queue ? kb_gw_queue_lag(r->g->queue, gpu, &lag, err,
						   sizeof(err))
				 : -EIO;
	size_t nw = kb_gw_events_workers(
		r->g->events, gpu, now, r->g->cfg.worker_stale_s * 1000, w, 64);
	long idle = 0;
	json_t *workers = json_array();
	for (size_t i = 0; i < nw; i++) {
		char seen[40];
		kb_time_iso8601(w[i].last_seen_ms, seen, sizeof(seen));
		idle += w[i].busy_with == 0;
		json_array_append_new(
			workers,
			json_pack("{s:o,s:s,s:o,s:o}", "name",
				  kb_gw_jstr(w[i].name), "last_seen", seen,
				  "busy_with",
				  w[i].busy_with
					  ? json_integer(
						    (json_int_t)w[i].busy_with)
					  : json_null(),
				  "stage",
				  w[i].busy_with ? kb_gw_jstr(w[i].stage)
						 : json_null()));
	}
	/* Queued: the accepted records no worker has taken, as /admin/stats
	 * counts them; the topic's backlog beside it (messages of deleted or
	 * lost submissions make the two differ). */
	long backlog = lag - running > 0 ? lag - running : 0, queued = 0;
	rc = kb_gw_queued_count(r->g, gpu, &queued);
	if (rc < 0) {
		kb_gw_store_failed(r, rc);
		json_decref(workers);
		return;
	}
	struct kb_gw_outlook ol;
	kb_gw_events_outlook(r->g->events, gpu, 0, now,
			     r->g->cfg.worker_stale_s * 1000, &ol);
	const char *status =
		nw == 0    ? (ol.workers < 0 ? "starting" : "unavailable")
		: idle > 0 ? "available"
			   : "busy";
	json_t *o = json_pack(
		"{s:s,s:s,s:I,s:o,s:I,s:I,s:I,s:s,s:o,s:o}", "runner",
		"kb-worker", "gpu", gpu, "queued_jobs", (json_int_t)queued,
		"backlog", lag_rc == 0 ? json_integer(backlog) : json_null(),
		"running_jobs", (json_int_t)running, "available_runners",
		(json_int_t)nw, "idle_runners", (json_int_t)idle, "status",
		status, "error", lag_rc == 0 ? json_null() : kb_gw_jstr(err),
		"workers", workers);
	kb_gw_reply_json(r, 200, o);
}

/* ---- the table (routes.h) ---- */

static void no_body(struct kb_gw_req *r)
{
	kb_gw_reply_error(r, 500, "internal error");
}

static void not_enabled(struct kb_gw_req *r)
{
	kb_gw_reply_error(r, 404,
			  "Discord interactions are not enabled on this "
			  "gateway");
}

/* Not served here: the metrics show admin activity, per-GPU queues and
 * busy workers, so they have a listener of their own (KB_METRICS_PORT,
 * loopback by default; main.c). */
static void metrics_begin(struct kb_gw_req *r)
{
	kb_gw_reply_error(r, 404,
			  "metrics are served on their own listener "
			  "(KB_METRICS_ADDR:KB_METRICS_PORT), not here");
}

const struct kb_gw_handler kb_gw_api_handlers[KB_ROUTE_COUNT] = {
	[KB_ROUTE_NONE] = {no_body, no_body},
	[KB_ROUTE_HEALTH] = {health_begin, no_body},
	[KB_ROUTE_LEADERBOARDS] = {leaderboards_begin, no_body},
	[KB_ROUTE_GPUS] = {gpus_begin, no_body},
	[KB_ROUTE_SUBMIT] = {submit_begin, submit_finish},
	[KB_ROUTE_ADMIN_SUBMIT] = {admin_submit_begin, admin_submit_finish},
	[KB_ROUTE_USER_SUBMISSION] = {user_submission_begin, no_body},
	[KB_ROUTE_USER_SUBMISSION_DELETE] = {user_submission_delete_begin,
					     no_body},
	[KB_ROUTE_USER_SUBMISSIONS] = {user_submissions_begin, no_body},
	[KB_ROUTE_USER_JOIN] = {user_join_begin, user_join_finish},
	[KB_ROUTE_RANKING] = {ranking_begin, no_body},
	[KB_ROUTE_SUBMISSION_COUNT] = {submission_count_begin, no_body},
	[KB_ROUTE_RUNNER_QUEUE] = {runner_queue_begin, no_body},
	[KB_ROUTE_DISCORD_INTERACTIONS] = {not_enabled, no_body},
	[KB_ROUTE_METRICS] = {metrics_begin, no_body},
};
