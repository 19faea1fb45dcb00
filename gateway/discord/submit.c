/* /leaderboard submit: intake on a job thread, then the tracker thread
 * that turns a submission's progress into message edits.
 *
 * Intake (job thread, after the deferred answer): the script is fetched
 * from Discord's CDN (only from DISCORD_CDN_PREFIXES, at most the API's
 * file limit), the leaderboard and gpu are resolved (option, else the
 * file's #!POPCORN line, else the board's first gpu), the Discord user is
 * mapped to a platform user (created on first use), and kb_gw_submit()
 * validates, records and publishes exactly as the HTTP API does. For a
 * ranked run the top 3 and the user's entry are read now, before the
 * result can change them. Then a watch is opened and the submission is
 * handed to the tracker.
 *
 * The tracker (one thread for all submissions) sleeps in poll() on an
 * eventfd that the watches' wake callbacks write to. It edits a message
 * when a stage changes, never more often than DISCORD_EDIT_INTERVAL_MS
 * (the newest state wins; a pending edit is replaced in the REST queue,
 * never sent stale), and always sends the final one at once. A ranked
 * result waits (up to DISCORD_FOLD_WAIT_MS) for the ranker to fold it, so
 * the placement it reports is the ranking's own; then the final edit
 * carries the short report and the full one as a file, a public follow-up
 * says the placement, and the announce channel hears about changes to the
 * top 3 (neither for a closed board). Interaction tokens last 15 minutes: a result that comes later is
 * posted to the channel with the bot token instead.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "http/rules.h"
#include "internal.h"
#include "kb_log.h"
#include "kb_mode.h"
#include "kb_util.h"
#include "store/store.h"

#define RANK_SCAN_MAX 10000
/* Interaction tokens are valid 15 minutes; keep a margin. */
#define TOKEN_LIFE_MS (14 * 60 * 1000)
/* A running stage's message is refreshed this often, so that its clock
 * ticks (not while queued: the queue position comes as events). */
#define REFRESH_MS 15000
#define FOLD_POLL_MS 200

/* A followed submission (owned by the tracker thread once added). */
struct track {
	struct track *next;
	struct kb_dc *dc;
	struct kb_gw_watch *w;
	uint64_t id;
	char app_id[32], token[600], snowflake[32], channel[32], uid[96];
	char lb[128], gpu[64], mode[16], file_name[256];
	int64_t created_ms;   /* wall clock: when the interaction came */
	int64_t last_edit_ms; /* monotonic */
	int dirty, finished;
	struct kb_dc_progress prog;
	int ranked;
	struct kb_dc_podium before;
	int had_prev;
	double prev_score;
	Kb__Result *result;
	int waiting_fold;
	int64_t fold_deadline_ms;
};

struct kb_dc_tracker {
	struct kb_dc *dc;
	int efd;
	pthread_t thread;
	int started;
	pthread_mutex_t mu;
	struct track *incoming;
	int stopping;
};

/* ---- intake ---- */

static const char *mode_of(const char *command)
{
	const char *last = strrchr(command, ' ');

	last = last ? last + 1 : command;
	return strcmp(last, "ranked") == 0 ? "leaderboard" : last;
}

/* 1 when url starts with one of the comma-separated prefixes. */
static int url_allowed(const char *prefixes, const char *url)
{
	const char *p = prefixes;

	while (*p) {
		size_t span;
		p += strspn(p, ", \t");
		span = strcspn(p, ", \t");
		if (span && strncmp(url, p, span) == 0)
			return 1;
		p += span;
	}
	return 0;
}

static void tracker_add(struct kb_dc_tracker *t, struct track *tr);
static struct track *track_new(struct kb_dc *dc,
			       const struct kb_dc_interaction *it, uint64_t id,
			       const char *uid, const char *lb, const char *gpu,
			       const char *mode, const char *file_name,
			       int64_t received_ms);
static int track_open(struct kb_dc_tracker *t, struct track *tr);

/* A board's top 3 and the user's entry before a ranked submission. */
struct before {
	struct kb_dc_podium podium;
	int had_prev;
	double prev_score;
};
static void snapshot_before(struct kb_dc *dc, const char *lb, const char *gpu,
			    const char *uid, struct before *out);

static void refuse(struct kb_dc *dc, const struct kb_dc_interaction *it,
		   const char *what, const char *detail)
{
	char *msg = kb_dc_render_refusal(what, detail);

	kb__dc_edit(dc, it->application_id, it->token, msg ? msg : "❌ Refused.",
		    NULL, 0, 0, "refusal");
	free(msg);
}

static void job_submit(struct kb_dc *dc, const struct kb_dc_interaction *it,
		       int64_t received_ms)
{
	const struct kb_dc_option *o = kb_dc_opt(it, "script");
	struct kb_dc_attachment att;
	size_t max = (size_t)dc->g->cfg.max_file_bytes, len = 0;
	char err[384], lb_name[128], gpu[128], uid[96];
	const char *mode = mode_of(it->command), *why = "";
	char *code = NULL, *fname = NULL;
	int rc;

	if (kb__dc_stopping(dc)) {
		refuse(dc, it, "Submission not taken",
		       "KernelBot is restarting; please submit again in a minute.");
		return;
	}
	if (!o || kb_dc_attachment(it, o->str, &att) < 0) {
		refuse(dc, it, "Submission refused",
		       "attach your file as `script`.");
		return;
	}
	if (!url_allowed(dc->cfg.cdn_prefixes, att.url)) {
		kb_warn("discord: attachment URL outside DISCORD_CDN_PREFIXES user=%s",
			it->user_id);
		refuse(dc, it, "Submission refused",
		       "the attachment does not come from Discord's CDN.");
		return;
	}
	/* The name as we may quote it in a message. */
	fname = kb_dc_text_clean(att.filename, strlen(att.filename), 64, 1);
	rc = kb_dc_fetch(att.url, max, dc->cfg.fetch_timeout_ms, &code, &len,
			 err, sizeof(err));
	if (rc == -EFBIG) {
		snprintf(err, sizeof(err),
			 "`%s` is larger than the limit of %zu bytes.",
			 fname ? fname : "?", max);
		refuse(dc, it, "Submission refused", err);
		free(fname);
		return;
	}
	if (rc < 0) {
		kb_warn("discord: attachment download failed user=%s: %s",
			it->user_id, err);
		refuse(dc, it, "Could not download your file",
		       "Discord's CDN did not answer; please try again.");
		free(fname);
		return;
	}
	rc = kb_rules_code(code, len, max, &why);
	if (rc != 0)
		snprintf(err, sizeof(err), "`%s`: %s (it must be UTF-8 text).",
			 fname ? fname : "?", why);
	free(fname);
	if (rc != 0) {
		refuse(dc, it, "Submission refused", err);
		free(code);
		return;
	}

	/* The leaderboard and gpu: options first, then the file's lines. */
	const char *opt_lb = kb__dc_opt_board(it),
		   *opt_gpu = kb_dc_opt_str(it, "gpu");
	if (opt_lb)
		snprintf(lb_name, sizeof(lb_name), "%s", opt_lb);
	else if (kb_dc_directive(code, len, "leaderboard", lb_name,
				 sizeof(lb_name)) != 1)
		lb_name[0] = '\0';
	if (!lb_name[0]) {
		refuse(dc, it, "Submission refused",
		       "name the leaderboard in the `leaderboard` option or with a "
		       "`#!POPCORN leaderboard <name>` line in your file.");
		free(code);
		return;
	}
	const struct kb_gw_lb *lb =
		kb__dc_board(dc, it, lb_name, err, sizeof(err));
	if (!lb) {
		kb__dc_edit(dc, it->application_id, it->token, err, NULL, 0, 0,
			    "refusal");
		free(code);
		return;
	}
	if (opt_gpu)
		snprintf(gpu, sizeof(gpu), "%s", opt_gpu);
	else if (kb_dc_directive(code, len, "gpu", gpu, sizeof(gpu)) != 1)
		snprintf(gpu, sizeof(gpu), "%s",
			 lb->task->ngpus ? lb->task->gpus[0] : "");

	rc = kb_gw_user_external(dc->g, "discord", it->user_id,
				 it->user_name ? it->user_name : it->user_id,
				 uid, sizeof(uid));
	if (rc == -EINVAL) /* a display name we cannot store: the id will do */
		rc = kb_gw_user_external(dc->g, "discord", it->user_id,
					 it->user_id, uid, sizeof(uid));
	if (rc < 0) {
		refuse(dc, it, "Submission refused",
		       rc == -EIO
			       ? "the store is unavailable; please try again in a minute."
			       : "your Discord account cannot be used here.");
		free(code);
		return;
	}
	struct kb_gw_submit_req req = {
		.user_id = uid,
		.lb = lb->task->name,
		.gpu = gpu,
		.mode = mode,
		.file_name = att.filename,
		.code = code,
		.code_len = len,
		.admin = 0,
	};
	/* The ranking before: read now, so the result cannot be in it yet. */
	struct before before = {0};
	if (kb_mode_parse(mode) == KB_MODE_LEADERBOARD)
		snapshot_before(dc, lb->task->name, gpu, uid, &before);
	struct kb_gw_submit_res res;
	memset(&res, 0, sizeof(res));
	rc = kb_gw_submit(dc->g, &req, &res);
	free(code);
	if (rc < 0) {
		if (res.status == 429 && res.retry_after_s > 0) {
			size_t l = strlen(res.detail);
			snprintf(res.detail + l, sizeof(res.detail) - l,
				 " (try again in %ld s)", res.retry_after_s);
		}
		refuse(dc, it, "Submission refused", res.detail);
		return;
	}
	kb_info("discord: sub=%" PRIu64
		" user=%s lb=%s gpu=%s mode=%s accepted",
		res.id, uid, lb->task->name, gpu, mode);
	char name[256];
	kb_rules_file_name(att.filename, name, sizeof(name));
	struct track *tr = track_new(dc, it, res.id, uid, lb->task->name, gpu,
				     mode, name, received_ms);
	if (tr) {
		tr->before = before.podium;
		tr->had_prev = before.had_prev;
		tr->prev_score = before.prev_score;
	}
	if (!tr || track_open(dc->tracker, tr) < 0) {
		char msg[256];
		snprintf(msg, sizeof(msg),
			 "✅ Submission #%" PRIu64 " is queued. Follow it "
			 "with `/leaderboard get-submission %" PRIu64 "`.",
			 res.id, res.id);
		kb__dc_edit(dc, it->application_id, it->token, msg, NULL, 0, 0,
			    "accepted");
		return;
	}
	tracker_add(dc->tracker, tr);
}

json_t *kb__dc_cmd_submit(struct kb_dc *dc, const struct kb_dc_interaction *it,
			  kb_dc_job_fn *defer)
{
	const struct kb_dc_option *o = kb_dc_opt(it, "script");
	struct kb_dc_attachment att;
	long max = dc->g->cfg.max_file_bytes;
	char msg[512];

	if (dc->cfg.submit_channel[0] &&
	    (!it->channel_id ||
	     strcmp(it->channel_id, dc->cfg.submit_channel) != 0)) {
		snprintf(msg, sizeof(msg),
			 "❌ Submissions are only accepted in <#%s>.",
			 dc->cfg.submit_channel);
		return kb_dc_resp_message(msg, 1);
	}
	if (!o || kb_dc_attachment(it, o->str, &att) < 0)
		return kb_dc_resp_message(
			"❌ Attach your file as the `script` option.", 1);
	if (att.size > max) {
		char *f = kb_dc_text_clean(att.filename, strlen(att.filename),
					   64, 1);
		snprintf(msg, sizeof(msg),
			 "❌ `%s` is %lld bytes; the limit is %ld bytes "
			 "(1 MB).",
			 f ? f : "?", att.size, max);
		free(f);
		return kb_dc_resp_message(msg, 1);
	}
	const char *board = kb__dc_opt_board(it),
		   *gpu = kb_dc_opt_str(it, "gpu");
	if (board) {
		const struct kb_gw_lb *lb =
			kb__dc_board(dc, it, board, msg, sizeof(msg));
		if (!lb)
			return kb_dc_resp_message(msg, 1);
		if (gpu && !kb_gw_lb_has_gpu(lb, gpu)) {
			char *g = kb_dc_text_clean(gpu, strlen(gpu), 32, 1);
			int n = snprintf(msg, sizeof(msg),
					 "❌ `%s` does not run on `%s`. GPUs:",
					 lb->task->name, g ? g : "?");
			free(g);
			for (size_t i = 0; i < lb->task->ngpus && n > 0 &&
					   (size_t)n < sizeof(msg);
			     i++)
				n += snprintf(msg + n, sizeof(msg) - (size_t)n,
					      " `%s`", lb->task->gpus[i]);
			return kb_dc_resp_message(msg, 1);
		}
	}
	*defer = job_submit;
	return NULL;
}

/* ---- the tracker ---- */

static int64_t mono_ms(void)
{
	return (int64_t)(kb_mono_s() * 1e3);
}

static void wake(void *ctx)
{
	struct kb_dc_tracker *t = ctx;
	uint64_t one = 1;

	/* Called with a hub lock held: only a non-blocking write. */
	if (write(t->efd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is full, so the tracker wakes anyway. */
	}
}

static struct track *track_new(struct kb_dc *dc,
			       const struct kb_dc_interaction *it, uint64_t id,
			       const char *uid, const char *lb, const char *gpu,
			       const char *mode, const char *file_name,
			       int64_t received_ms)
{
	struct track *tr = calloc(1, sizeof(*tr));

	if (!tr)
		return NULL;
	tr->dc = dc;
	tr->id = id;
	snprintf(tr->app_id, sizeof(tr->app_id), "%s", it->application_id);
	snprintf(tr->token, sizeof(tr->token), "%s", it->token);
	snprintf(tr->snowflake, sizeof(tr->snowflake), "%s", it->user_id);
	snprintf(tr->channel, sizeof(tr->channel), "%s",
		 it->channel_id ? it->channel_id : "");
	snprintf(tr->uid, sizeof(tr->uid), "%s", uid);
	snprintf(tr->lb, sizeof(tr->lb), "%s", lb);
	snprintf(tr->gpu, sizeof(tr->gpu), "%s", gpu);
	snprintf(tr->mode, sizeof(tr->mode), "%s", mode);
	snprintf(tr->file_name, sizeof(tr->file_name), "%s", file_name);
	tr->created_ms = received_ms;
	tr->ranked = kb_mode_parse(mode) == KB_MODE_LEADERBOARD;
	tr->prog.head = (struct kb_dc_sub_head){tr->id, tr->lb, tr->gpu,
						tr->mode, tr->file_name};
	tr->prog.position = -1;
	tr->prog.started_ms = kb_now_ms();
	tr->dirty = 1; /* "accepted" goes out at once */
	return tr;
}

static void track_free(struct track *tr)
{
	if (!tr)
		return;
	kb_gw_watch_close(tr->w);
	if (tr->result)
		kb__result__free_unpacked(tr->result, NULL);
	free(tr);
}

static int track_open(struct kb_dc_tracker *t, struct track *tr)
{
	tr->w = kb_gw_watch_open(t->dc->g, tr->id, wake, t);
	if (!tr->w) {
		free(tr);
		return -ENOMEM;
	}
	return 0;
}

/* Reads the ranking: the top 3 into p (may be NULL) and the user's
 * entry. Returns 0 or a store error. */
static int ranking_read(struct kb_dc *dc, const char *lb, const char *gpu,
			const char *uid, struct kb_dc_podium *p,
			struct kb_gw_rank_entry *mine, int *have_mine)
{
	struct kb_gw_rank_entry *e = NULL;
	size_t n = 0;
	int rc = kb_gw_ranking(dc->g, lb, gpu, 0, RANK_SCAN_MAX, &e, &n);

	*have_mine = 0;
	if (rc < 0)
		return rc;
	if (p) {
		memset(p, 0, sizeof(*p));
		for (size_t i = 0; i < n && i < 3; i++) {
			snprintf(p->user_id[i], sizeof(p->user_id[i]), "%s",
				 e[i].user_id);
			snprintf(p->user_name[i], sizeof(p->user_name[i]), "%s",
				 e[i].user_name);
			p->score[i] = e[i].score;
			p->n++;
		}
	}
	for (size_t i = 0; i < n; i++)
		if (strcmp(e[i].user_id, uid) == 0) {
			*mine = e[i];
			*have_mine = 1;
			break;
		}
	free(e);
	return 0;
}

static void snapshot_before(struct kb_dc *dc, const char *lb, const char *gpu,
			    const char *uid, struct before *out)
{
	struct kb_gw_rank_entry mine;
	int have = 0;

	memset(out, 0, sizeof(*out));
	if (ranking_read(dc, lb, gpu, uid, &out->podium, &mine, &have) < 0)
		return; /* then everything counts as new; harmless */
	out->had_prev = have;
	out->prev_score = have ? mine.score : 0;
}

static int token_alive(const struct track *tr)
{
	return kb_now_ms() - tr->created_ms < TOKEN_LIFE_MS;
}

static void send_progress(struct track *tr)
{
	char *text = kb_dc_render_progress(&tr->prog, kb_now_ms());
	char what[64];

	tr->dirty = 0;
	tr->last_edit_ms = mono_ms();
	if (!text || !token_alive(tr)) {
		free(text);
		return;
	}
	snprintf(what, sizeof(what), "progress sub=%" PRIu64, tr->id);
	kb__dc_edit(tr->dc, tr->app_id, tr->token, text, NULL, 0, 1, what);
	free(text);
}

/* The final message, as an edit while the token lives, else in the
 * channel with a mention. */
static void send_final(struct track *tr, const char *text,
		       const struct kb_dc_file *files, size_t nfiles)
{
	char what[64];

	snprintf(what, sizeof(what), "final sub=%" PRIu64, tr->id);
	if (token_alive(tr)) {
		kb__dc_edit(tr->dc, tr->app_id, tr->token, text, files, nfiles,
			    1, what);
		return;
	}
	char *late = NULL;
	if (asprintf(&late, "<@%s>, your submission finished:\n%s",
		     tr->snowflake, text) < 0)
		late = NULL;
	char *fit = late ? kb_dc_text_fit(late, KB_DC_CONTENT_MAX, NULL) : NULL;
	kb__dc_channel_message(tr->dc, tr->channel, fit ? fit : text, files,
			       nfiles, tr->snowflake, what);
	free(fit);
	free(late);
}

static void finish_error(struct track *tr, const char *why)
{
	char *clean =
		kb_dc_text_clean(why ? why : "", why ? strlen(why) : 0, 300, 0);
	char *text = NULL;

	if (asprintf(
		    &text,
		    "**Submission #%" PRIu64 "** · `%s` on **%s** · %s\n"
		    "⚠️ %s\nIts result will be at `/leaderboard get-submission %" PRIu64
		    "`.",
		    tr->id, tr->lb, tr->gpu, kb_dc_mode_label(tr->mode),
		    clean && *clean ? clean : "KernelBot lost track of it.",
		    tr->id) < 0)
		text = NULL;
	if (text)
		send_final(tr, text, NULL, 0);
	free(text);
	free(clean);
	tr->finished = 1;
}

static void finish_result(struct track *tr, int folded)
{
	struct kb_dc *dc = tr->dc;
	const Kb__Result *r = tr->result;
	struct kb_dc_placement pl = {0};
	struct kb_dc_podium after = {0};
	struct kb_gw_rank_entry mine;
	int have = 0, scored = tr->ranked && r->has_score;

	if (scored && folded &&
	    ranking_read(dc, tr->lb, tr->gpu, tr->uid, &after, &mine, &have) ==
		    0 &&
	    have) {
		pl.known = 1;
		pl.rank = mine.rank;
		pl.best_score = mine.score;
		pl.is_best = mine.sub_id == tr->id;
		pl.first_success = !tr->had_prev;
		pl.had_prev = tr->had_prev;
		pl.prev_score = tr->prev_score;
	}
	char *report = kb_gw_result_report(r);
	char *text = kb_dc_render_result(&tr->prog.head, r, scored ? &pl : NULL,
					 report != NULL, KB_DC_CONTENT_MAX);
	char fname[64];
	snprintf(fname, sizeof(fname), "submission-%" PRIu64 "-report.txt",
		 tr->id);
	struct kb_dc_file f = {fname, report, report ? strlen(report) : 0};
	if (text)
		send_final(tr, text, report ? &f : NULL, report ? 1 : 0);
	/* A closed board's standings are for those it admits: its
	 * submitters see their placement in their own (ephemeral) message,
	 * and neither the channel nor the announce channel hears of it. */
	const struct kb_gw_lb *lb = kb_gw_lb_find(dc->g, tr->lb);
	int public = scored && pl.known && lb && !atomic_load(&lb->closed);
	if (public && pl.is_best) {
		char *line = kb_dc_render_ranked_line(
			tr->snowflake, &tr->prog.head, &pl, r->score);
		char what[64];
		snprintf(what, sizeof(what), "ranked line sub=%" PRIu64,
			 tr->id);
		if (line && token_alive(tr))
			kb__dc_followup(dc, tr->app_id, tr->token, line, 0,
					tr->snowflake, what);
		else if (line)
			kb__dc_channel_message(dc, tr->channel, line, NULL, 0,
					       tr->snowflake, what);
		free(line);
	}
	if (public && dc->cfg.announce_channel[0]) {
		char *ann = kb_dc_render_announce(tr->lb, tr->gpu, &tr->before,
						  &after);
		if (ann)
			kb__dc_channel_message(dc, dc->cfg.announce_channel,
					       ann, NULL, 0, tr->snowflake,
					       "top-3 announcement");
		free(ann);
	}
	kb_info("discord: sub=%" PRIu64 " result sent%s", tr->id,
		scored ? (pl.known ? " with placement"
				   : " (ranking not folded yet)")
		       : "");
	free(text);
	free(report);
	tr->finished = 1;
}

/* 1 while a stage past "queued" runs. */
static int running(const struct track *tr)
{
	return tr->prog.nstages &&
	       strcmp(tr->prog.stages[tr->prog.nstages - 1], "queued") != 0;
}

/* Takes the watch's events; sends what they call for. */
static void track_step(struct track *tr, int64_t now)
{
	struct kb_dc *dc = tr->dc;
	struct kb_gw_event ev;
	int rc;

	while (!tr->finished && !tr->waiting_fold &&
	       (rc = kb_gw_watch_next(tr->w, &ev)) == 1) {
		if (ev.type == KB_GW_EV_STATUS) {
			kb_dc_progress_stage(&tr->prog, ev.stage, ev.message,
					     ev.position, kb_now_ms());
			tr->dirty = 1;
		} else if (ev.type == KB_GW_EV_RESULT && ev.result) {
			tr->result = ev.result;
			ev.result = NULL;
			if (tr->ranked && tr->result->has_score) {
				tr->waiting_fold = 1;
				tr->fold_deadline_ms =
					now + dc->cfg.fold_wait_ms;
			} else {
				finish_result(tr, 0);
			}
		} else {
			finish_error(tr, ev.type == KB_GW_EV_ERROR ? ev.message
								   : NULL);
		}
		kb_gw_event_clear(&ev);
	}
	if (!tr->finished && !tr->waiting_fold && rc < 0)
		finish_error(tr, NULL);
	if (tr->waiting_fold) {
		struct kb_gw_sub_state st;
		int folded = 0;
		memset(&st, 0, sizeof(st));
		if (kb_gw_sub_state(dc->g, tr->id, &st) == 0)
			folded = st.status &&
				 (strcmp(st.status, "done") == 0 ||
				  strcmp(st.status, "failed") == 0);
		kb_gw_sub_state_free(&st);
		if (folded || now >= tr->fold_deadline_ms) {
			tr->waiting_fold = 0;
			finish_result(tr, folded);
		}
		return;
	}
	if (tr->finished)
		return;
	if ((tr->dirty && now - tr->last_edit_ms >= dc->cfg.edit_interval_ms) ||
	    (running(tr) && now - tr->last_edit_ms >= REFRESH_MS))
		send_progress(tr);
}

/* Milliseconds until a track needs attention without a new event. */
static int64_t track_due(const struct track *tr, int64_t now)
{
	int64_t interval = tr->dc->cfg.edit_interval_ms;

	if (tr->waiting_fold)
		return FOLD_POLL_MS;
	if (tr->dirty)
		return tr->last_edit_ms + interval - now;
	if (running(tr))
		return tr->last_edit_ms + REFRESH_MS - now;
	return 60000;
}

static void say_goodbye(struct track *tr)
{
	char *text = NULL;

	if (asprintf(&text,
		     "**Submission #%" PRIu64 "** · `%s` on **%s** · %s\n"
		     "⏸️ KernelBot restarted and stopped following this message; "
		     "your submission goes on. Its result will be at "
		     "`/leaderboard get-submission %" PRIu64 "`.",
		     tr->id, tr->lb, tr->gpu, kb_dc_mode_label(tr->mode),
		     tr->id) >= 0 &&
	    token_alive(tr)) {
		char what[64];
		snprintf(what, sizeof(what), "goodbye sub=%" PRIu64, tr->id);
		kb__dc_edit(tr->dc, tr->app_id, tr->token, text, NULL, 0, 1,
			    what);
	}
	free(text);
}

static void *tracker_thread(void *arg)
{
	struct kb_dc_tracker *t = arg;
	struct track *list = NULL;

	for (;;) {
		int64_t now = mono_ms(), wait = 1000;
		for (struct track *tr = list; tr; tr = tr->next) {
			int64_t d = track_due(tr, now);
			wait = d < wait ? d : wait;
		}
		struct pollfd pfd = {.fd = t->efd, .events = POLLIN};
		poll(&pfd, 1, wait < 1 ? 1 : (int)wait);
		uint64_t v;
		if (read(t->efd, &v, sizeof(v)) < 0) {
			/* EAGAIN: woken by the timeout */
		}
		pthread_mutex_lock(&t->mu);
		while (t->incoming) {
			struct track *tr = t->incoming;
			t->incoming = tr->next;
			tr->next = list;
			list = tr;
		}
		int stopping = t->stopping;
		pthread_mutex_unlock(&t->mu);
		if (stopping)
			break;
		now = mono_ms();
		for (struct track **pp = &list; *pp;) {
			struct track *tr = *pp;
			track_step(tr, now);
			if (tr->finished) {
				*pp = tr->next;
				track_free(tr);
			} else {
				pp = &tr->next;
			}
		}
	}
	while (list) {
		struct track *tr = list;
		list = tr->next;
		say_goodbye(tr);
		track_free(tr);
	}
	kb_gw_redis_drop();
	return NULL;
}

static void tracker_add(struct kb_dc_tracker *t, struct track *tr)
{
	pthread_mutex_lock(&t->mu);
	tr->next = t->incoming;
	t->incoming = tr;
	pthread_mutex_unlock(&t->mu);
	wake(t);
}

struct kb_dc_tracker *kb__dc_tracker_new(struct kb_dc *dc, char *errstr,
					 size_t errstr_size)
{
	struct kb_dc_tracker *t = calloc(1, sizeof(*t));
	int rc;

	if (!t) {
		snprintf(errstr, errstr_size, "out of memory");
		return NULL;
	}
	t->dc = dc;
	pthread_mutex_init(&t->mu, NULL);
	t->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (t->efd < 0) {
		snprintf(errstr, errstr_size, "eventfd: %s", strerror(errno));
		kb__dc_tracker_destroy(t);
		return NULL;
	}
	rc = pthread_create(&t->thread, NULL, tracker_thread, t);
	if (rc != 0) {
		snprintf(errstr, errstr_size, "cannot start the tracker: %s",
			 strerror(rc));
		kb__dc_tracker_destroy(t);
		return NULL;
	}
	t->started = 1;
	return t;
}

void kb__dc_tracker_destroy(struct kb_dc_tracker *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&t->mu);
	t->stopping = 1;
	pthread_mutex_unlock(&t->mu);
	if (t->started) {
		wake(t);
		pthread_join(t->thread, NULL);
	}
	while (t->incoming) { /* added after the thread left */
		struct track *tr = t->incoming;
		t->incoming = tr->next;
		say_goodbye(tr);
		track_free(tr);
	}
	if (t->efd >= 0)
		close(t->efd);
	pthread_mutex_destroy(&t->mu);
	free(t);
}
