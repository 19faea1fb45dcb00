/* POST /admin/export: the dataset export (docs/api.md). Every ranked and
 * passing submission of the chosen boards, the best per (board, user,
 * code, gpu), in the columns of upstream's published KernelBot dataset,
 * as JSON Lines.
 *
 * The answer is streamed: finish() checks the request (auth, body,
 * boards, the active-board rule) and queues a 200 whose body a
 * libmicrohttpd content reader produces as the client reads it, on the
 * connection's own thread (so on its Redis connection). Memory held per
 * export: the chosen submissions of one board at a time (store.h,
 * kb_gw_export_picks: about 240 bytes per (user, code, gpu) group) and
 * one row (its code, escaped). A store failure after the 200 has gone
 * out cannot change the status: the connection is closed without the
 * chunked body's end, so clients see a truncated transfer, never a
 * shorter export that looks complete. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/results.h"
#include "http/bodies.h"
#include "kb_log.h"
#include "kb_util.h"
#include "routes.h"

#define EXPORT_BODY_MAX (64u << 10)
#define EXPORT_BLOCK (64u << 10)

struct export_board {
	char name[65];
	long id; /* leaderboard_id: the board's place in the table, from 1 */
};

struct export_state {
	struct kb_gw *g;
	struct export_board *boards;
	size_t nboards, board; /* board: the one being written */
	struct kb_gw_export_pick *picks;
	size_t npicks, pick;
	int loaded;        /* picks of boards[board] read */
	struct kb_buf out; /* the row being sent */
	size_t sent;       /* bytes of out sent */
	size_t rows, missing_code;
};

static void export_free(void *cls)
{
	struct export_state *st = cls;

	if (!st)
		return;
	kb_info("admin export: %zu row(s) of %zu board(s), %zu without code%s",
		st->rows, st->nboards, st->missing_code,
		st->board < st->nboards ? " (ended early)" : "");
	free(st->boards);
	free(st->picks);
	kb_buf_free(&st->out);
	free(st);
}

static json_t *code_json(const char *code, size_t len)
{
	json_t *j = json_stringn(code, len);

	return j ? j : kb_gw_jstr(code); /* invalid UTF-8 replaced */
}

/* Renders the row of st->picks[st->pick] into st->out. */
static int render_row(struct export_state *st)
{
	const struct export_board *b = &st->boards[st->board];
	const struct kb_gw_export_pick *pk = &st->picks[st->pick];
	struct kb_gw_export_rec rec;
	int rc = kb_gw_export_row(st->g, pk, &rec);

	if (rc < 0)
		return rc;
	json_t *o = json_pack(
		"{s:I,s:I,s:s,s:s,s:o,s:s,s:o,s:o,s:s,s:f,s:b,s:s,s:s,s:o}",
		"submission_id", (json_int_t)pk->id, "leaderboard_id",
		(json_int_t)b->id, "problem_name", b->name, "user_id",
		pk->user_id, "user_name",
		kb_gw_jstr(rec.user_name ? rec.user_name : ""), "code_id",
		pk->code_sha, "file_name", kb_gw_jstr(rec.file_name),
		"submission_time", kb_gw_jiso(pk->submitted_ms), "status",
		"succeeded", "score", pk->score, "passed", 1, "mode",
		"leaderboard", "runner", pk->gpu, "code",
		rec.code ? code_json(rec.code, rec.code_len) : json_null());
	/* Ranked code is kept for ever (submit.lua); a row without it says
	 * so rather than vanishing from the dataset. */
	if (o && !rec.code) {
		json_object_set_new(o, "code_missing", json_true());
		st->missing_code++;
		kb_warn("admin export: sub=%" PRIu64 " has no code blob",
			pk->id);
	}
	kb_gw_export_rec_free(&rec);
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!s)
		return -ENOMEM;
	st->out.len = 0;
	st->sent = 0;
	rc = kb_buf_append(&st->out, s, strlen(s));
	if (rc == 0)
		rc = kb_buf_append(&st->out, "\n", 1);
	free(s);
	return rc < 0 ? -ENOMEM : 0;
}

/* Fills st->out with the next row. Returns 1, 0 at the end, or a
 * negative code. */
static int next_row(struct export_state *st)
{
	while (st->board < st->nboards) {
		if (!st->loaded) {
			int rc = kb_gw_export_picks(st->g,
						    st->boards[st->board].name,
						    &st->picks, &st->npicks);
			if (rc < 0)
				return rc;
			st->loaded = 1;
			st->pick = 0;
		}
		if (st->pick < st->npicks) {
			int rc = render_row(st);
			if (rc < 0)
				return rc;
			st->pick++;
			st->rows++;
			return 1;
		}
		free(st->picks);
		st->picks = NULL;
		st->npicks = 0;
		st->loaded = 0;
		st->board++;
	}
	return 0;
}

static ssize_t export_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct export_state *st = cls;
	size_t n;

	(void)pos;
	if (st->sent == st->out.len) {
		int rc = next_row(st);
		if (rc == 0)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (rc < 0) {
			kb_error("admin export stopped on board %s: %s",
				 st->boards[st->board].name, strerror(-rc));
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
	}
	n = st->out.len - st->sent;
	if (n > max)
		n = max;
	memcpy(buf, st->out.data + st->sent, n);
	st->sent += n;
	return (ssize_t)n;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct export_board *)a)->name,
		      ((const struct export_board *)b)->name);
}

/* The boards the body names (404 for an unknown one), or every live
 * board; in name order, as upstream's export. NULL after a reply. */
static struct export_board *
export_boards(struct kb_gw_req *r, const struct kb_gw_body_export *b, size_t *n)
{
	size_t cap = b->n ? b->n : kb_gw_lb_count(r->g), k = 0;
	struct export_board *v = calloc(cap ? cap : 1, sizeof(*v));

	if (!v) {
		kb_gw_reply_error(r, 500, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < cap; i++) {
		const struct kb_gw_lb *lb;
		if (b->n) {
			lb = kb_gw_lb_find(r->g, b->lbs[i]);
			if (!lb) {
				free(v);
				kb_gw_reply_error(r, 404,
						  "unknown leaderboard '%s'",
						  b->lbs[i]);
				return NULL;
			}
		} else {
			lb = kb_gw_lb_at(r->g, i);
			if (!lb || atomic_load(&lb->deleted))
				continue;
		}
		snprintf(v[k].name, sizeof(v[k].name), "%s", lb->task->name);
		v[k++].id = lb->index + 1;
	}
	qsort(v, k, sizeof(*v), by_name);
	*n = k;
	return v;
}

/* Upstream refuses a public export while a chosen board is active (its
 * deadline ahead): the dataset must not publish a running competition's
 * kernels. Replies 409 naming them and returns -1. */
static int refuse_active(struct kb_gw_req *r, const struct export_board *v,
			 size_t n)
{
	struct kb_buf names = {0};
	int64_t now = kb_now_ms();

	for (size_t i = 0; i < n; i++) {
		const struct kb_gw_lb *lb = kb_gw_lb_find(r->g, v[i].name);
		if (lb && lb->deadline_ms > now)
			kb_buf_printf(&names, "%s%s", names.len ? ", " : "",
				      v[i].name);
	}
	if (!names.len)
		return 0;
	kb_gw_reply_error(r, 409,
			  "Cannot export active leaderboards to the public "
			  "dataset: %s (their deadline has not passed; "
			  "\"private\": true exports them for admins)",
			  names.data);
	kb_buf_free(&names);
	return -1;
}

static void export_begin(struct kb_gw_req *r)
{
	if (kb_gw_require_admin(r) == 0)
		kb_gw_expect_json(r, EXPORT_BODY_MAX);
}

static void export_finish(struct kb_gw_req *r)
{
	struct kb_gw_body_export *b = calloc(1, sizeof(*b));
	const char *why = "";
	size_t n = 0;
	int st;

	if (!b) {
		kb_gw_reply_error(r, 500, "out of memory");
		return;
	}
	/* No body at all: every board, a public export. */
	st = r->json_len ? kb_gw_body_export(r->json, r->json_len, b, &why) : 0;
	if (st) {
		free(b);
		kb_gw_reply_error(r, st, "%s", why);
		return;
	}
	struct export_board *v = export_boards(r, b, &n);
	int private_export = b->private_export;
	free(b);
	if (!v)
		return;
	if (!private_export && refuse_active(r, v, n) < 0) {
		free(v);
		return;
	}
	struct export_state *es = calloc(1, sizeof(*es));
	if (!es) {
		free(v);
		kb_gw_reply_error(r, 500, "out of memory");
		return;
	}
	es->g = r->g;
	es->boards = v;
	es->nboards = n;
	struct MHD_Response *resp = MHD_create_response_from_callback(
		MHD_SIZE_UNKNOWN, EXPORT_BLOCK, export_reader, es, export_free);
	if (!resp) {
		export_free(es);
		kb_gw_reply_error(r, 500, "out of memory");
		return;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				"application/x-ndjson");
	MHD_add_response_header(
		resp, MHD_HTTP_HEADER_CONTENT_DISPOSITION,
		"attachment; filename=\"kernelbot-export.jsonl\"");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
				"no-store");
	kb_info("admin export of %zu board(s)%s", n,
		private_export ? " (private)" : "");
	kb_gw_reply_response(r, 200, resp);
	MHD_destroy_response(resp);
}

const struct kb_gw_handler kb_gw_export_handlers[KB_ROUTE_COUNT] = {
	[KB_ROUTE_ADMIN_EXPORT] = {export_begin, export_finish},
};
