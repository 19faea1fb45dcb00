/* /admin operations: ping, show-stats, delete-leaderboard and export.
 * Only users or roles listed in DISCORD_ADMIN_IDS get here (the handler
 * checks). Every answer is ephemeral.
 *
 * ping and delete-leaderboard answer at once (a few Redis round trips);
 * show-stats and export read every submission of a board (or of all of
 * them) and run on a job thread, editing the deferred answer.
 *
 * Deleting a board is what DELETE /admin/leaderboards/<name> does
 * (kb_gw_lb_delete: one Lua script, so the board is gone for every
 * gateway or not at all). A slash command cannot ask "are you sure?" by
 * itself, so the command asks for the board's name again in `confirm`;
 * a board with submissions also needs `force` (its rankings go too).
 *
 * export attaches what an operator wants out of a board without the HTTP
 * API at hand: every submission (metadata, no code) as JSON Lines, and
 * the rankings as CSV. The dataset with code is POST /admin/export.
 * Files stay under EXPORT_MAX_BYTES (Discord refuses larger uploads); a
 * cut file says so in the message.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/events.h"
#include "core/problems.h"
#include "core/results.h"
#include "http/rules.h"
#include "internal.h"
#include "kb_config.h"
#include "kb_log.h"
#include "kb_time.h"
#include "kb_util.h"
#include "store/store.h"

#define PING_GPUS_MAX 32
#define EXPORT_PAGE 1000
#define EXPORT_MAX_BYTES (8u << 20)
#define EXPORT_RANK_MAX 100000

static int opt_bool(const struct kb_dc_interaction *it, const char *name)
{
	const struct kb_dc_option *o = kb_dc_opt(it, name);

	return o && o->type == KB_DC_OPT_BOOLEAN && o->num;
}

/* An admin may name any live board, closed ones too. */
static const struct kb_gw_lb *admin_board(struct kb_dc *dc,
					  const struct kb_dc_interaction *it,
					  json_t **refusal)
{
	char why[256];
	const char *name = kb__dc_opt_board(it);
	const struct kb_gw_lb *lb =
		kb__dc_board(dc, it, name, why, sizeof(why));

	if (!lb)
		*refusal = kb_dc_resp_message(why, 1);
	return lb;
}

/* ---- ping ---- */

static json_t *ping(struct kb_dc *dc)
{
	struct kb_gw_worker_info w[8];
	const char *gpus[PING_GPUS_MAX];
	struct kb_buf b = {0};
	int64_t now = kb_now_ms();
	double t0 = kb_mono_s();
	int accepting = 1, rc = kb_gw_get_accepting(dc->g, &accepting);
	double store_ms = (kb_mono_s() - t0) * 1e3;
	size_t n = kb_gw_live_gpus(dc->g, gpus, PING_GPUS_MAX);

	if (rc < 0)
		kb_buf_printf(
			&b,
			"🏓 Pong from this gateway, but the store does not answer "
			"(%s): submissions cannot be taken.\n",
			rc == -EIO ? "unreachable" : "unexpected reply");
	else
		kb_buf_printf(&b,
			      "🏓 Pong. Store: %.1f ms. Submissions: %s.\n",
			      store_ms,
			      accepting
				      ? "accepted"
				      : "**stopped** (`/admin start` resumes)");
	kb_buf_printf(&b, "Workers seen in the last %ld s:",
		      dc->g->cfg.worker_stale_s);
	for (size_t i = 0; i < n; i++) {
		size_t nw = kb_gw_events_workers(
			dc->g->events, gpus[i], now,
			dc->g->cfg.worker_stale_s * 1000, w, KB_ARRAY_LEN(w));
		size_t busy = 0;
		for (size_t k = 0; k < nw; k++)
			busy += w[k].busy_with != 0;
		if (nw == 0)
			kb_buf_printf(&b, "\n- %s: **none**", gpus[i]);
		else
			kb_buf_printf(&b, "\n- %s: %zu%s (%zu busy)", gpus[i],
				      nw, nw == KB_ARRAY_LEN(w) ? "+" : "",
				      busy);
	}
	if (n == 0)
		kb_buf_printf(&b, " no leaderboard is open.");
	json_t *resp = kb__dc_sayf("%s", b.data ? b.data : "🏓 Pong.");
	kb_buf_free(&b);
	return resp;
}

/* ---- show-stats ---- */

static void job_stats(struct kb_dc *dc, const struct kb_dc_interaction *it,
		      int64_t received_ms)
{
	struct kb_gw_stats st;
	struct kb_buf b = {0};
	const char *lb = kb__dc_opt_board(it);
	const struct kb_gw_lb *board = lb ? kb_gw_lb_find(dc->g, lb) : NULL;
	int last_day = opt_bool(it, "last_day_only");
	int rc = kb_gw_stats(dc->g, board ? board->task->name : NULL,
			     last_day ? received_ms - 86400000 : 0, &st);

	if (rc < 0) {
		kb__dc_reply(
			dc, it,
			rc == -EIO
				? "⚠️ The store is unavailable; try again "
				  "in a minute."
				: "⚠️ The store answered unexpectedly.",
			NULL, 0, 1);
		return;
	}
	/* The keys of GET /admin/stats (upstream's generate_stats). */
	kb_buf_printf(&b, "**KernelBot stats** · %s%s%s · %s\n```\n",
		      board ? "`" : "",
		      board ? board->task->name : "all leaderboards",
		      board ? "`" : "",
		      last_day ? "last 24 hours" : "all time");
	kb_buf_printf(
		&b,
		"num_submissions = %ld\nnum_users = %ld\nnum_ranked_entries = %ld\n"
		"sub_waiting = %ld\nqueued = %ld\nrunning = %ld\ndone = %ld\n"
		"failed = %ld\n",
		st.submissions, st.users, st.ranked_entries,
		st.by_status[0] + st.by_status[1], st.by_status[0],
		st.by_status[1], st.by_status[2], st.not_passed);
	if (!last_day)
		kb_buf_printf(&b, "num_unique_codes = %ld\n", st.unique_codes);
	for (size_t i = 0; i < st.nrunners; i++) {
		const struct kb_gw_runner_stats *r = &st.runners[i];
		kb_buf_printf(&b,
			      "num_run.%s = %ld\nruns_passed.%s = %ld\n"
			      "runs_scored.%s = %ld\nruns_secret.%s = %ld\n",
			      r->gpu, r->runs, r->gpu, r->passed, r->gpu,
			      r->scored, r->gpu, r->secret);
	}
	kb_buf_printf(&b, "```");
	kb__dc_reply(dc, it, b.data ? b.data : "⚠️ Out of memory.", NULL, 0,
		     1);
	kb_info("discord: admin=%s read the stats", it->user_id);
	kb_buf_free(&b);
}

static json_t *show_stats(struct kb_dc *dc, const struct kb_dc_interaction *it,
			  kb_dc_job_fn *defer)
{
	json_t *refusal = NULL;

	if (kb__dc_opt_board(it) && !admin_board(dc, it, &refusal))
		return refusal;
	*defer = job_stats;
	return NULL;
}

/* ---- delete-leaderboard ---- */

static json_t *delete_leaderboard(struct kb_dc *dc,
				  const struct kb_dc_interaction *it)
{
	json_t *refusal = NULL;
	const struct kb_gw_lb *lb = admin_board(dc, it, &refusal);
	const char *confirm = kb_dc_opt_str(it, "confirm");
	int force = opt_bool(it, "force"), has = 0, rc;

	if (!lb)
		return refusal;
	const char *name = lb->task->name;
	rc = kb_gw_board_has_submissions(dc->g, name, &has);
	if (rc < 0)
		return kb__dc_store_failed(rc);
	if (has && !force)
		return kb__dc_sayf(
			"❌ `%s` has submissions. Deleting it drops its rankings "
			"too: add `force: True` to do that.",
			name);
	if (!confirm || strcmp(confirm, name) != 0)
		return kb__dc_sayf(
			"⚠️ This deletes leaderboard `%s` on every gateway: it "
			"disappears from lists, takes no submissions%s. To go "
			"ahead, run the command again with `confirm: %s`.",
			name,
			has ? ", and its rankings and score history are dropped"
			    : "",
			name);
	rc = kb_gw_lb_delete(dc->g, (struct kb_gw_lb *)lb, force);
	if (rc < 0)
		return kb__dc_store_failed(rc);
	kb_info("discord: admin=%s deleted board %s force=%d", it->user_id,
		name, force);
	return kb__dc_sayf("🗑️ Leaderboard `%s` is deleted%s.", name,
			   has ? " with its rankings" : "");
}

/* ---- export ---- */

static json_t *jstr_or_null(const char *s)
{
	return s ? kb_gw_jstr(s) : json_null();
}

static json_t *jiso(const char *ms)
{
	char out[40];
	uint64_t v;

	if (!ms || kb_parse_u64(ms, &v) != 0 || v == 0 || v > INT64_MAX)
		return json_null();
	kb_time_iso8601((int64_t)v, out, sizeof(out));
	return json_string(out);
}

/* One JSON line of a listed submission. */
static int export_line(struct kb_buf *out, uint64_t id, const redisReply *row)
{
	json_t *o = json_pack(
		"{s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}",
		"submission_id", (json_int_t)id, "user_id",
		jstr_or_null(kb_gw_list_value(row, "user_id")), "user_name",
		jstr_or_null(kb_gw_list_value(row, "user_name")), "gpu",
		jstr_or_null(kb_gw_list_value(row, "gpu")), "mode",
		jstr_or_null(kb_gw_list_value(row, "mode")), "file_name",
		jstr_or_null(kb_gw_list_value(row, "file_name")), "status",
		jstr_or_null(kb_gw_list_value(row, "status")), "verdict",
		jstr_or_null(kb_gw_list_value(row, "verdict")), "score",
		kb_gw_jnum(kb_gw_list_value(row, "score")), "submitted_at",
		jiso(kb_gw_list_value(row, "submitted_ms")), "done_at",
		jiso(kb_gw_list_value(row, "done_ms")));
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	int rc = s ? kb_buf_printf(out, "%s\n", s) : -ENOMEM;

	json_decref(o);
	free(s);
	return rc < 0 ? -ENOMEM : 0;
}

/* Every submission of the board, newest first, while they fit. Sets
 * *rows and *cut (the file stopped at EXPORT_MAX_BYTES). */
static int export_subs(struct kb_dc *dc, const char *lb, struct kb_buf *out,
		       size_t *rows, int *cut)
{
	struct kb_gw_sub_list l;
	long offset = 0;
	int rc = 0;

	*rows = 0;
	*cut = 0;
	do {
		rc = kb_gw_sub_list_board(dc->g, lb, offset, EXPORT_PAGE, &l);
		if (rc < 0)
			return rc;
		for (size_t i = 0; rc == 0 && i < l.n && !*cut; i++) {
			size_t before = out->len;
			rc = export_line(out, l.ids[i], l.rows[i]);
			if (rc == 0 && out->len > EXPORT_MAX_BYTES) {
				out->len = before;
				*cut = 1;
			} else if (rc == 0) {
				(*rows)++;
			}
		}
		offset += (long)l.n;
		size_t got = l.n;
		kb_gw_sub_list_free(&l);
		if (got < EXPORT_PAGE)
			break;
	} while (rc == 0 && !*cut);
	return rc;
}

/* A CSV field: quoted when it holds a comma, a quote or a line break. */
static void csv_field(struct kb_buf *out, const char *s, int last)
{
	if (strpbrk(s, ",\"\r\n")) {
		kb_buf_append(out, "\"", 1);
		for (const char *p = s; *p; p++)
			kb_buf_append(out, *p == '"' ? "\"\"" : p,
				      *p == '"' ? 2 : 1);
		kb_buf_append(out, "\"", 1);
	} else {
		kb_buf_append(out, s, strlen(s));
	}
	kb_buf_append(out, last ? "\n" : ",", 1);
}

static int export_ranking(struct kb_dc *dc, const struct kb_gw_lb *lb,
			  struct kb_buf *out, size_t *entries)
{
	*entries = 0;
	kb_buf_printf(out,
		      "gpu,rank,user_id,user_name,score_seconds,submission_id,"
		      "submitted_at,file_name\n");
	for (size_t g = 0; g < lb->task->ngpus; g++) {
		struct kb_gw_rank_entry *e = NULL;
		size_t n = 0;
		int rc = kb_gw_ranking(dc->g, lb->task->name, lb->task->gpus[g],
				       0, EXPORT_RANK_MAX, &e, &n);
		if (rc < 0)
			return rc;
		for (size_t i = 0; i < n && out->len < EXPORT_MAX_BYTES; i++) {
			char num[64], when[40] = "";
			if (e[i].submitted_ms != INT64_MAX)
				kb_time_iso8601(e[i].submitted_ms, when,
						sizeof(when));
			csv_field(out, lb->task->gpus[g], 0);
			snprintf(num, sizeof(num), "%ld", e[i].rank);
			csv_field(out, num, 0);
			csv_field(out, e[i].user_id, 0);
			csv_field(out, e[i].user_name, 0);
			csv_field(out, e[i].score_text, 0);
			snprintf(num, sizeof(num), "%" PRIu64, e[i].sub_id);
			csv_field(out, e[i].sub_id ? num : "", 0);
			csv_field(out, when, 0);
			csv_field(out, e[i].file_name, 1);
			(*entries)++;
		}
		free(e);
	}
	return 0;
}

static void job_export(struct kb_dc *dc, const struct kb_dc_interaction *it,
		       int64_t received_ms)
{
	const struct kb_gw_lb *lb = kb_gw_lb_find(dc->g, kb__dc_opt_board(it));
	struct kb_buf subs = {0}, rank = {0}, msg = {0};
	char fsubs[128], frank[128];
	size_t rows = 0, entries = 0;
	int cut = 0, rc;

	(void)received_ms;
	if (!lb) {
		kb__dc_reply(dc, it,
			     "❌ That leaderboard was deleted meanwhile.", NULL,
			     0, 1);
		return;
	}
	rc = export_subs(dc, lb->task->name, &subs, &rows, &cut);
	if (rc == 0)
		rc = export_ranking(dc, lb, &rank, &entries);
	if (rc < 0) {
		kb__dc_reply(
			dc, it,
			rc == -EIO
				? "⚠️ The store is unavailable; try again "
				  "in a minute."
				: "⚠️ The export failed reading the store.",
			NULL, 0, 1);
		goto out;
	}
	snprintf(fsubs, sizeof(fsubs), "%s-submissions.jsonl", lb->task->name);
	snprintf(frank, sizeof(frank), "%s-rankings.csv", lb->task->name);
	kb_buf_printf(&msg,
		      "📦 Export of `%s`: %zu submission%s (`%s`, newest first, "
		      "without code) and %zu ranked entr%s (`%s`).",
		      lb->task->name, rows, rows == 1 ? "" : "s", fsubs,
		      entries, entries == 1 ? "y" : "ies", frank);
	if (cut)
		kb_buf_printf(
			&msg,
			"\n⚠️ The submissions file stops at %u MiB (Discord's "
			"upload limit); the HTTP API's `GET /admin/leaderboards/"
			"%s/submissions` pages through all of them.",
			EXPORT_MAX_BYTES >> 20, lb->task->name);
	kb_buf_printf(&msg, "\nThe dataset with code: `POST /admin/export`.");
	/* An empty file is no attachment: a board without submissions gets
	 * the rankings' header alone. */
	struct kb_dc_file files[2];
	size_t nf = 0;
	if (subs.len)
		files[nf++] = (struct kb_dc_file){fsubs, subs.data, subs.len};
	files[nf++] = (struct kb_dc_file){frank, rank.data ? rank.data : "",
					  rank.len};
	kb__dc_reply(dc, it, msg.data ? msg.data : "📦 Export attached.", files,
		     nf, 1);
	kb_info("discord: admin=%s exported board %s rows=%zu entries=%zu",
		it->user_id, lb->task->name, rows, entries);
out:
	kb_buf_free(&subs);
	kb_buf_free(&rank);
	kb_buf_free(&msg);
}

static json_t *export_board(struct kb_dc *dc,
			    const struct kb_dc_interaction *it,
			    kb_dc_job_fn *defer)
{
	json_t *refusal = NULL;

	if (!admin_board(dc, it, &refusal))
		return refusal;
	*defer = job_export;
	return NULL;
}

json_t *kb__dc_cmd_ops(struct kb_dc *dc, const struct kb_dc_interaction *it,
		       kb_dc_job_fn *defer)
{
	const char *sub = it->command + strlen("admin ");

	if (strcmp(sub, "ping") == 0)
		return ping(dc);
	if (strcmp(sub, "show-stats") == 0)
		return show_stats(dc, it, defer);
	if (strcmp(sub, "delete-leaderboard") == 0)
		return delete_leaderboard(dc, it);
	if (strcmp(sub, "export") == 0)
		return export_board(dc, it, defer);
	return kb__dc_sayf("❓ Unknown admin command.");
}
