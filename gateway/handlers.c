/* The endpoints of the first API slice. Each is a begin() on the headers
 * and, for the two POSTs, a finish() on the body (see http.h).
 *
 * Order of checks on POST /submission/{lb}/{gpu}/{mode}, all decided from
 * the headers before a byte of the body is read: CLI id (401, or 403 for a
 * banned user), leaderboard and gpu (404), mode (400), Content-Length
 * (413), Content-Type (400). Then the body: the multipart framing (400),
 * the file field (400 when missing), its size (413), its text (400).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "kb_log.h"
#include "kb_util.h"
#include "report.h"

/* Multipart framing around the file: boundaries, part headers, small
 * extra fields. Generous, since it only bounds what we read. */
#define MULTIPART_OVERHEAD (64u << 10)
#define ADMIN_BODY_MAX (64u << 10)
#define RANKING_DEFAULT_LIMIT 100
#define RANKING_MAX_LIMIT 1000

static void store_failed(struct kb_gw_req *r, int rc)
{
	if (rc == -EIO)
		kb_gw_reply_error(r, 503, "store unavailable, retry later");
	else
		kb_gw_reply_error(r, 500, "internal error");
}

/* Resolves X-Popcorn-Cli-Id into r->user. Returns 0, or replies and
 * returns -1. */
static int authenticate(struct kb_gw_req *r)
{
	const char *cli = kb_gw_header(r, "X-Popcorn-Cli-Id");
	int rc;

	if (!cli || !*cli) {
		kb_gw_reply_error(r, 401, "missing X-Popcorn-Cli-Id header");
		return -1;
	}
	if (!kb_rules_cli_id_ok(cli)) {
		kb_gw_reply_error(r, 401, "invalid or unauthorized X-Popcorn-Cli-Id");
		return -1;
	}
	rc = kb_gw_user_by_cli(r->g, cli, &r->user);
	if (rc == -ENOENT) {
		kb_gw_reply_error(r, 401, "invalid or unauthorized X-Popcorn-Cli-Id");
		return -1;
	}
	if (rc < 0) {
		store_failed(r, rc);
		return -1;
	}
	if (r->user.banned) {
		kb_gw_reply_error(r, 403, "user is banned");
		return -1;
	}
	return 0;
}

/* Resolves {lb} and {gpu} into r->lb. Returns 0, or replies 404. */
static int board_and_gpu(struct kb_gw_req *r, const char *lb, const char *gpu)
{
	r->lb = kb_gw_lb_find(r->g, lb);
	if (!r->lb) {
		kb_gw_reply_error(r, 404, "unknown leaderboard '%s'", lb);
		return -1;
	}
	if (gpu && !kb_gw_lb_has_gpu(r->lb, gpu)) {
		kb_gw_reply_error(r, 404, "gpu '%s' is not offered for leaderboard '%s'",
				  gpu, lb);
		return -1;
	}
	return 0;
}

/* ---- GET /health, /leaderboards, /gpus/{lb} ---- */

static void cached_begin(struct kb_gw_req *r)
{
	kb_gw_reply_cached(r, NULL);
}

static void gpus_begin(struct kb_gw_req *r)
{
	if (board_and_gpu(r, r->route.params[0], NULL) == 0)
		kb_gw_reply_cached(r, r->route.params[0]);
}

/* ---- POST /submission/{lb}/{gpu}/{mode} ---- */

static void submit_begin(struct kb_gw_req *r)
{
	const struct kb_gw_config *cfg = &r->g->cfg;
	char boundary[KB_MULTIPART_BOUNDARY_MAX + 1];
	const char *why = "";
	int st;

	if (authenticate(r) < 0 ||
	    board_and_gpu(r, r->route.params[0], r->route.params[1]) < 0)
		return;
	r->mode = kb_mode_parse(r->route.params[2]);
	if (r->mode == KB_MODE_INVALID) {
		kb_gw_reply_error(r, 400,
				  "unknown submission mode '%s' (expected test, "
				  "benchmark, profile or leaderboard)",
				  r->route.params[2]);
		return;
	}
	r->body_cap = (uint64_t)cfg->max_file_bytes + MULTIPART_OVERHEAD;
	st = kb_rules_content_length(kb_gw_header(r, "Content-Length"),
				     r->body_cap, &why);
	if (st) {
		if (st == 413)
			kb_gw_reply_error(r, 413, "file too large (limit %ld bytes)",
					  cfg->max_file_bytes);
		else
			kb_gw_reply_error(r, st, "%s", why);
		return;
	}
	if (kb_multipart_boundary(kb_gw_header(r, "Content-Type"), boundary,
				  sizeof(boundary)) != 0) {
		kb_gw_reply_error(r, 400, "expected a multipart/form-data body "
					  "with a boundary");
		return;
	}
	r->mp = kb_multipart_new(boundary, "file", (size_t)cfg->max_file_bytes);
	if (!r->mp) {
		kb_gw_reply_error(r, 500, "internal error");
		return;
	}
	r->body = KB_GW_BODY_MULTIPART;
}

/* Publishes the Submission and waits for the broker's acknowledgement.
 * Returns 0 or negative (the message is then not delivered: librdkafka's
 * message.timeout.ms is below our wait, see main.c). */
static int publish(struct kb_gw_req *r, const struct kb_gw_sub *s)
{
	const struct kb_gw_lb *lb = r->lb;
	Kb__Submission sub = KB__SUBMISSION__INIT;
	Kb__Task task = lb->pb; /* shallow: shares the startup data */
	Kb__TaskFile code_file = lb->pb_files[lb->submission_file];
	Kb__TaskFile **files = malloc((lb->pb.n_files ? lb->pb.n_files : 1) *
				      sizeof(*files));
	char topic[256], key[32], err[256];
	int rc;

	if (!files)
		return -ENOMEM;
	memcpy(files, lb->pb.files, lb->pb.n_files * sizeof(*files));
	code_file.content.data = (uint8_t *)s->code;
	code_file.content.len = s->code_len;
	files[lb->submission_file] = &code_file;
	task.files = files;

	sub.id = s->id;
	sub.user_id = (char *)s->user_id;
	sub.user_name = (char *)s->user_name;
	sub.leaderboard = (char *)s->lb;
	sub.gpu = (char *)s->gpu;
	sub.mode = (Kb__Mode)r->mode;
	sub.file_name = (char *)s->file_name;
	sub.code.data = (uint8_t *)s->code;
	sub.code.len = s->code_len;
	sub.task = &task;
	if (r->mode == KB_MODE_LEADERBOARD) {
		sub.secret_seed = lb->secret_seed;
		sub.has_secret_seed = 1;
	}
	sub.submitted_at_ms = s->submitted_ms;
	sub.attempt = 0;

	size_t len = kb__submission__get_packed_size(&sub);
	uint8_t *buf = malloc(len ? len : 1);
	if (!buf) {
		free(files);
		return -ENOMEM;
	}
	kb__submission__pack(&sub, buf);
	free(files);
	rc = kb_topic_submissions(topic, sizeof(topic), s->gpu);
	if (rc == 0) {
		int n = snprintf(key, sizeof(key), "%" PRIu64, s->id);
		rc = kb_producer_send(r->g->producer, topic, key, (size_t)n, buf,
				      len, (int)r->g->cfg.kafka_timeout_ms + 2000,
				      err, sizeof(err));
		if (rc < 0)
			kb_warn("sub=%" PRIu64 " gpu=%s publish failed: %s", s->id,
				s->gpu, err);
	}
	free(buf);
	return rc;
}

static void submit_finish(struct kb_gw_req *r)
{
	const struct kb_gw *g = r->g;
	char file_name[256];
	const char *why = "";
	size_t len;
	int rc = kb_multipart_finish(r->mp);

	if (rc == -EFBIG) {
		kb_gw_reply_error(r, 413, "file too large (limit %ld bytes)",
				  g->cfg.max_file_bytes);
		return;
	}
	if (rc < 0) {
		kb_gw_reply_error(r, 400, "malformed multipart body: %s",
				  kb_multipart_error(r->mp));
		return;
	}
	if (!kb_multipart_found(r->mp)) {
		kb_gw_reply_error(r, 400, "missing form field 'file'");
		return;
	}
	const char *code = kb_multipart_data(r->mp, &len);
	int st = kb_rules_code(code, len, (size_t)g->cfg.max_file_bytes, &why);
	if (st) {
		kb_gw_reply_error(r, st, "%s", why);
		return;
	}
	const char *fn = kb_multipart_filename(r->mp);
	kb_rules_file_name(fn && kb_utf8_valid(fn, strlen(fn)) ? fn : NULL,
			   file_name, sizeof(file_name));

	/* Order, so that no failure leaves a half-made submission: the id
	 * first (a lost id is harmless), then every record in one MULTI
	 * (all or nothing, status "queued"), then the synchronous publish.
	 * A failed publish turns the record into "failed" (only if nothing
	 * moved it on) and the client gets 503: no record ever claims to be
	 * queued for a message the broker does not have, except across a
	 * crash between the two steps, which SIGTERM's drain avoids. */
	struct kb_gw_sub s = {
		.user_id = r->user.id,
		.user_name = r->user.name,
		.lb = r->lb->task->name,
		.gpu = r->route.params[1],
		.mode = kb_mode_name(r->mode),
		.file_name = file_name,
		.code = code,
		.code_len = len,
		.submitted_ms = kb_now_ms(),
	};
	kb_sha256_hex(code, len, s.code_sha);
	rc = kb_gw_sub_next_id(g, &s.id);
	if (rc == 0)
		rc = kb_gw_sub_record(g, &s);
	if (rc < 0) {
		store_failed(r, rc);
		return;
	}
	rc = publish(r, &s);
	if (rc < 0) {
		int mrc = kb_gw_sub_mark_failed(g, s.id, "submission queue unavailable");
		if (mrc < 0)
			kb_error("sub=%" PRIu64 " could not be marked failed (%d)",
				 s.id, mrc);
		kb_gw_reply_error(r, 503, "submission queue unavailable, retry "
					  "later (submission %" PRIu64 " was not queued)",
				  s.id);
		return;
	}
	kb_info("sub=%" PRIu64 " user=%s lb=%s gpu=%s mode=%s bytes=%zu queued",
		s.id, s.user_id, s.lb, s.gpu, s.mode, len);
	json_t *o = json_pack("{s:{s:I,s:I},s:s}", "details", "id", (json_int_t)s.id,
			      "job_status_id", (json_int_t)s.id, "status", "accepted");
	kb_gw_reply_json(r, 202, o);
}

/* ---- GET /user/submissions/{id} ---- */

static json_t *str_or_null(const char *s)
{
	size_t n;
	char *clean;
	json_t *j;

	if (!s)
		return json_null();
	clean = kb_gw_utf8_sanitize(s, strlen(s), &n);
	j = clean ? json_stringn(clean, n) : json_null();
	free(clean);
	return j;
}

static json_t *num_or_null(const char *s)
{
	char *end;
	double v;

	if (!s || !*s)
		return json_null();
	v = strtod(s, &end);
	return *end ? json_null() : json_real(v);
}

static json_t *runs_json(const Kb__Result *res)
{
	json_t *runs = json_array();
	char start[40], end[40];

	kb_rules_iso8601(res->started_at_ms, start, sizeof(start));
	kb_rules_iso8601(res->finished_at_ms, end, sizeof(end));
	for (size_t i = 0; i < res->n_runs; i++) {
		const Kb__RunResult *rr = res->runs[i];
		int ranked = strcmp(rr->key, "leaderboard") == 0;
		json_t *o = json_object();
		json_object_set_new(o, "mode", str_or_null(rr->key));
		json_object_set_new(o, "secret", json_boolean(strcmp(rr->key, "private") == 0));
		json_object_set_new(o, "runner", str_or_null(res->gpu));
		json_object_set_new(o, "passed", json_boolean(rr->passed));
		json_object_set_new(o, "success", json_boolean(rr->success));
		json_object_set_new(o, "exit_code", json_integer(rr->exit_code));
		json_object_set_new(o, "timed_out", json_boolean(rr->timed_out));
		json_object_set_new(o, "duration", json_real(rr->duration_s));
		json_object_set_new(o, "score", ranked && res->has_score
							 ? json_real(res->score)
							 : json_null());
		json_object_set_new(o, "start_time", json_string(start));
		json_object_set_new(o, "end_time", json_string(end));
		json_array_append_new(runs, o);
	}
	return runs;
}

static void user_submission_begin(struct kb_gw_req *r)
{
	struct kb_gw_sub_rec rec;
	uint64_t id;
	int rc;

	if (authenticate(r) < 0)
		return;
	if (kb_parse_u64(r->route.params[0], &id) != 0 || id == 0) {
		kb_gw_reply_error(r, 400, "invalid submission id");
		return;
	}
	rc = kb_gw_sub_fetch(r->g, id, &rec);
	if (rc == -ENOENT) {
		kb_gw_reply_error(r, 404, "submission not found");
		return;
	}
	if (rc < 0) {
		store_failed(r, rc);
		return;
	}
	const char *owner = kb_gw_sub_field(&rec, "user_id");
	if (!owner || strcmp(owner, r->user.id) != 0) {
		kb_gw_sub_rec_free(&rec);
		kb_gw_reply_error(r, 403, "not authorized to view this submission");
		return;
	}

	const char *status = kb_gw_sub_field(&rec, "status");
	const char *ms_s = kb_gw_sub_field(&rec, "submitted_ms");
	int64_t ms = ms_s ? strtoll(ms_s, NULL, 10) : 0;
	char when[40];
	kb_rules_iso8601(ms, when, sizeof(when));

	json_t *o = json_object();
	json_object_set_new(o, "id", json_integer((json_int_t)id));
	json_object_set_new(o, "leaderboard_name", str_or_null(kb_gw_sub_field(&rec, "lb")));
	json_object_set_new(o, "gpu", str_or_null(kb_gw_sub_field(&rec, "gpu")));
	json_object_set_new(o, "mode", str_or_null(kb_gw_sub_field(&rec, "mode")));
	json_object_set_new(o, "file_name", str_or_null(kb_gw_sub_field(&rec, "file_name")));
	json_object_set_new(o, "user_id", str_or_null(owner));
	json_object_set_new(o, "user_name", str_or_null(kb_gw_sub_field(&rec, "user_name")));
	json_object_set_new(o, "submission_time", json_string(when));
	json_object_set_new(o, "submitted_ms", json_integer(ms));
	json_object_set_new(o, "status", str_or_null(status));
	json_object_set_new(o, "done", json_boolean(status && (strcmp(status, "done") == 0 ||
							       strcmp(status, "failed") == 0)));
	json_object_set_new(o, "stage", str_or_null(kb_gw_sub_field(&rec, "stage")));
	json_object_set_new(o, "verdict", str_or_null(kb_gw_sub_field(&rec, "verdict")));
	json_object_set_new(o, "score", num_or_null(kb_gw_sub_field(&rec, "score")));
	json_object_set_new(o, "error", str_or_null(kb_gw_sub_field(&rec, "error")));
	json_object_set_new(o, "code", rec.code && rec.code->type == REDIS_REPLY_STRING
					       ? str_or_null(rec.code->str) : json_null());

	Kb__Result *res = NULL;
	if (rec.res && rec.res->type == REDIS_REPLY_STRING)
		res = kb__result__unpack(NULL, rec.res->len, (const uint8_t *)rec.res->str);
	if (rec.res && rec.res->type == REDIS_REPLY_STRING && !res)
		kb_error("sub=%" PRIu64 " stored Result does not decode", id);
	if (res) {
		kb_report_redact(res);
		char *report = kb_report_render(res);
		json_object_set_new(o, "runs", runs_json(res));
		json_object_set_new(o, "report", str_or_null(report));
		free(report);
		if (json_is_null(json_object_get(o, "verdict")))
			json_object_set_new(o, "verdict",
					    json_string(kb_report_verdict_name(res->verdict)));
		if (json_is_null(json_object_get(o, "score")) && res->has_score)
			json_object_set_new(o, "score", json_real(res->score));
		kb__result__free_unpacked(res, NULL);
	} else {
		json_object_set_new(o, "runs", json_array());
		json_object_set_new(o, "report", json_null());
	}
	kb_gw_sub_rec_free(&rec);
	kb_gw_reply_json(r, 200, o);
}

/* ---- GET /submissions/{lb}/{gpu} ---- */

static void ranking_begin(struct kb_gw_req *r)
{
	struct kb_gw_rank_entry *e = NULL;
	const char *why = "";
	long limit, offset;
	size_t n = 0;
	int rc;

	if (board_and_gpu(r, r->route.params[0], r->route.params[1]) < 0)
		return;
	rc = kb_rules_page(kb_gw_query(r, "limit"), kb_gw_query(r, "offset"),
			   RANKING_DEFAULT_LIMIT, RANKING_MAX_LIMIT, &limit,
			   &offset, &why);
	if (rc) {
		kb_gw_reply_error(r, rc, "%s", why);
		return;
	}
	rc = kb_gw_ranking(r->g, r->lb->task->name, r->route.params[1], offset,
			   limit, &e, &n);
	if (rc < 0) {
		store_failed(r, rc);
		return;
	}
	json_t *list = json_array();
	for (size_t i = 0; i < n; i++) {
		char when[40];
		int known = e[i].submitted_ms != INT64_MAX;
		kb_rules_iso8601(known ? e[i].submitted_ms : 0, when, sizeof(when));
		json_t *o = json_object();
		json_object_set_new(o, "rank", json_integer(e[i].rank));
		json_object_set_new(o, "user_id", str_or_null(e[i].user_id));
		json_object_set_new(o, "user_name", str_or_null(e[i].user_name));
		json_object_set_new(o, "score", json_real(e[i].score));
		json_object_set_new(o, "submission_score", json_real(e[i].score));
		json_object_set_new(o, "submission_id",
				    e[i].sub_id ? json_integer((json_int_t)e[i].sub_id)
						: json_null());
		json_object_set_new(o, "submission_name", str_or_null(e[i].file_name));
		json_object_set_new(o, "submitted_at", known ? json_string(when) : json_null());
		json_object_set_new(o, "submission_time", known ? json_string(when) : json_null());
		json_object_set_new(o, "submitted_ms", known ? json_integer(e[i].submitted_ms)
							     : json_null());
		json_object_set_new(o, "leaderboard_name", json_string(r->lb->task->name));
		json_object_set_new(o, "gpu_type", str_or_null(r->route.params[1]));
		json_array_append_new(list, o);
	}
	free(e);
	kb_gw_reply_json(r, 200, list);
}

/* ---- POST /admin/users ---- */

static void admin_users_begin(struct kb_gw_req *r)
{
	const char *why = "";
	int st = kb_rules_admin(kb_gw_header(r, "Authorization"),
				r->g->cfg.admin_token, &why);

	if (st) {
		kb_gw_reply_error(r, st, "%s", why);
		return;
	}
	r->body_cap = ADMIN_BODY_MAX;
	st = kb_rules_content_length(kb_gw_header(r, "Content-Length"),
				     r->body_cap, &why);
	if (st) {
		kb_gw_reply_error(r, st, "%s", why);
		return;
	}
	r->body = KB_GW_BODY_JSON;
}

static void admin_users_finish(struct kb_gw_req *r)
{
	json_error_t jerr;
	char user_id[33], cli_id[65];
	json_t *body = json_loadb(r->json ? r->json : "", r->json_len, 0, &jerr);
	const char *name = json_string_value(json_object_get(body, "name"));
	int rc;

	if (!json_is_object(body)) {
		json_decref(body);
		kb_gw_reply_error(r, 400, "body must be a JSON object");
		return;
	}
	if (!kb_rules_user_name_ok(name)) {
		json_decref(body);
		kb_gw_reply_error(r, 400, "name must be 1 to 64 bytes of text");
		return;
	}
	rc = kb_gw_user_create(r->g, name, user_id, cli_id);
	if (rc < 0) {
		json_decref(body);
		store_failed(r, rc);
		return;
	}
	kb_info("admin created user=%s", user_id); /* never the CLI id */
	json_t *o = json_pack("{s:s,s:s,s:s}", "user_id", user_id, "cli_id", cli_id,
			      "name", name);
	json_decref(body);
	kb_gw_reply_json(r, 200, o);
}

static void no_body(struct kb_gw_req *r)
{
	kb_gw_reply_error(r, 500, "internal error");
}

static const struct kb_gw_handler handlers[] = {
	[KB_ROUTE_NONE] = {no_body, no_body},
	[KB_ROUTE_HEALTH] = {cached_begin, no_body},
	[KB_ROUTE_LEADERBOARDS] = {cached_begin, no_body},
	[KB_ROUTE_GPUS] = {gpus_begin, no_body},
	[KB_ROUTE_SUBMIT] = {submit_begin, submit_finish},
	[KB_ROUTE_USER_SUBMISSION] = {user_submission_begin, no_body},
	[KB_ROUTE_RANKING] = {ranking_begin, no_body},
	[KB_ROUTE_ADMIN_USERS] = {admin_users_begin, admin_users_finish},
};

const struct kb_gw_handler *kb_gw_handler_for(enum kb_route_id id)
{
	if ((size_t)id >= sizeof(handlers) / sizeof(handlers[0]))
		return &handlers[KB_ROUTE_NONE];
	return &handlers[id];
}
