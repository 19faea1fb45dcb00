/* The read-only /leaderboard commands and autocomplete (see
 * internal.h). Short answers go back at once (type 4, ephemeral);
 * answers that need files, or more than one message, are deferred and
 * sent by a job thread through the REST queue. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "internal.h"
#include "kb_lang.h"
#include "kb_log.h"
#include "kb_report.h"
#include "kb_seal.h"
#include "kb_util.h"
#include "store/store.h"

#define SHOW_TOP 10
#define PERSONAL_LAST 15
#define RANK_SCAN_MAX 10000
#define TASK_FILES_MAX 9
#define DESCRIPTION_MAX 1400
#define BOARD_CHOICES KB_DC_CHOICES_MAX

/* ---- small helpers ---- */

static void fmt_date(int64_t ms, char *out, size_t size)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (ms < 0 || !gmtime_r(&t, &tm)) {
		snprintf(out, size, "none");
		return;
	}
	strftime(out, size, "%Y-%m-%d %H:%M UTC", &tm);
}

static json_t *error_msg(const char *text)
{
	return kb_dc_resp_message(text, 1);
}

/* Visible boards in table order, for list and autocomplete. */
static int board_visible(struct kb_dc *dc, const struct kb_dc_interaction *it,
			 const struct kb_gw_lb *lb)
{
	char why[8];

	if (atomic_load(&lb->deleted))
		return 0;
	return kb__dc_board(dc, it, lb->task->name, why, sizeof(why)) == lb;
}

static void store_error(char *buf, size_t size, int rc)
{
	snprintf(buf, size,
		 rc == -EIO ? "⚠️ The store is unavailable right now; "
			      "please try again in a minute."
			    : "⚠️ Something went wrong reading the store.");
}

/* Messages: either answered at once (one message) or by a job. */
struct parts {
	char **v;
	size_t n;
};

static void parts_free(struct parts *p)
{
	kb_dc_text_free_parts(p->v, p->n);
	p->v = NULL;
	p->n = 0;
}

static int parts_add(struct parts *p, char **more, size_t n)
{
	char **v = realloc(p->v, (p->n + n) * sizeof(*v));

	if (!v) {
		kb_dc_text_free_parts(more, n);
		return -ENOMEM;
	}
	memcpy(v + p->n, more, n * sizeof(*v));
	free(more);
	p->v = v;
	p->n += n;
	return 0;
}

static int parts_text(struct parts *p, const char *text)
{
	char **v;
	size_t n;

	if (kb_dc_text_split(text, KB_DC_CONTENT_MAX, &v, &n) < 0)
		return -ENOMEM;
	return parts_add(p, v, n);
}

/* Sends parts: the first edits the deferred answer, the rest follow. */
static void send_parts(struct kb_dc *dc, const struct kb_dc_interaction *it,
		       const struct parts *p)
{
	for (size_t i = 0; i < p->n; i++) {
		if (i == 0)
			kb__dc_edit(dc, it->application_id, it->token, p->v[0],
				    NULL, 0, 0, "reply");
		else
			kb__dc_followup(dc, it->application_id, it->token,
					p->v[i], 1, NULL, "reply part");
	}
}

typedef int (*build_fn)(struct kb_dc *dc, const struct kb_dc_interaction *it,
			struct parts *out, char *err, size_t err_size);

/* Builds the answer; one message goes back at once, more are deferred to
 * job (which builds again: cheaper than carrying the parts over). */
static json_t *answer(struct kb_dc *dc, const struct kb_dc_interaction *it,
		      build_fn build, kb_dc_job_fn job, kb_dc_job_fn *defer)
{
	struct parts p = {0};
	char err[512];
	json_t *resp;

	if (build(dc, it, &p, err, sizeof(err)) < 0) {
		parts_free(&p);
		return error_msg(err);
	}
	if (p.n == 1) {
		resp = kb_dc_resp_message(p.v[0], 1);
		parts_free(&p);
		return resp;
	}
	parts_free(&p);
	*defer = job;
	return NULL;
}

static void run_built(struct kb_dc *dc, const struct kb_dc_interaction *it,
		      build_fn build)
{
	struct parts p = {0};
	char err[512];

	if (build(dc, it, &p, err, sizeof(err)) < 0)
		kb__dc_edit(dc, it->application_id, it->token, err, NULL, 0, 0,
			    "error");
	else
		send_parts(dc, it, &p);
	parts_free(&p);
}

/* A board that is not sealed says so, with the reason (kb_seal.h), and
 * 1 is returned; nothing (0) for one the trusted side times. */
static int not_sealed_line(struct kb_buf *b, const struct kb_gw_lb *lb)
{
	const char *why = kb_seal_not_sealed(lb->task);

	if (why)
		kb_buf_printf(
			b,
			"⚠️ **Not sealed**: %s; " KB_SEAL_NOT_SEALED_MEANS
			".",
			why);
	return why != NULL;
}

/* ---- /leaderboard list ---- */

static int build_list(struct kb_dc *dc, const struct kb_dc_interaction *it,
		      struct parts *out, char *err, size_t err_size)
{
	size_t n = kb_gw_lb_count(dc->g), k = 0;
	char **lines = calloc(n ? n : 1, sizeof(*lines));
	char **msgs;
	size_t nmsgs;
	int64_t now = kb_now_ms();

	if (!lines) {
		snprintf(err, err_size, "⚠️ Out of memory.");
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		const struct kb_gw_lb *lb = kb_gw_lb_at(dc->g, i);
		struct kb_buf b = {0};
		char when[40];
		if (!lb || !board_visible(dc, it, lb))
			continue;
		fmt_date(lb->deadline_ms, when, sizeof(when));
		kb_buf_printf(&b, "%-24s %-20s %s", lb->task->name,
			      lb->deadline_ms >= 0 && lb->deadline_ms < now
				      ? "ended"
				      : when,
			      lb->task->lang);
		for (size_t g = 0; g < lb->task->ngpus; g++)
			kb_buf_printf(&b, "%s%s", g ? ", " : "  ",
				      lb->task->gpus[g]);
		if (atomic_load(&lb->closed))
			kb_buf_printf(&b, "  (invite only)");
		if (kb_seal_not_sealed(lb->task))
			kb_buf_printf(&b, "  (not sealed)");
		lines[k++] = b.data;
	}
	if (k == 0) {
		free(lines);
		return parts_text(out,
				  "There are no open leaderboards right now.");
	}
	char title[160];
	snprintf(title, sizeof(title),
		 "**Leaderboards** (%zu) — deadline, language, "
		 "GPUs. Submit with `/leaderboard submit ranked`.",
		 k);
	int rc = kb_dc_text_pack(title, (const char *const *)lines, k, 1,
				 KB_DC_CONTENT_MAX, &msgs, &nmsgs);
	for (size_t i = 0; i < k; i++)
		free(lines[i]);
	free(lines);
	if (rc < 0) {
		snprintf(err, err_size, "⚠️ Out of memory.");
		return rc;
	}
	return parts_add(out, msgs, nmsgs);
}

static void job_list(struct kb_dc *dc, const struct kb_dc_interaction *it,
		     int64_t received_ms)
{
	run_built(dc, it, build_list);
}

json_t *kb__dc_cmd_list(struct kb_dc *dc, const struct kb_dc_interaction *it,
			kb_dc_job_fn *defer)
{
	return answer(dc, it, build_list, job_list, defer);
}

/* ---- /leaderboard show ---- */

/* The gpus an answer covers: the option, or all of the board's. Returns
 * 0, or -EINVAL with err set. */
static int gpus_of(const struct kb_gw_lb *lb, const char *gpu,
		   const char ***gpus, size_t *n, char *err, size_t err_size)
{
	if (gpu) {
		if (!kb_gw_lb_has_gpu(lb, gpu)) {
			char *c = kb_dc_text_clean(gpu, strlen(gpu), 32, 1);
			snprintf(err, err_size,
				 "❌ `%s` does not run on `%s`; it runs on: ",
				 lb->task->name, c ? c : "?");
			free(c);
			for (size_t i = 0; i < lb->task->ngpus; i++) {
				size_t l = strlen(err);
				snprintf(err + l, err_size - l, "%s%s",
					 i ? ", " : "", lb->task->gpus[i]);
			}
			return -EINVAL;
		}
		for (size_t i = 0; i < lb->task->ngpus; i++)
			if (strcmp(lb->task->gpus[i], gpu) == 0) {
				*gpus = (const char **)&lb->task->gpus[i];
				*n = 1;
			}
		return 0;
	}
	*gpus = (const char **)lb->task->gpus;
	*n = lb->task->ngpus;
	return 0;
}

static int build_show(struct kb_dc *dc, const struct kb_dc_interaction *it,
		      struct parts *out, char *err, size_t err_size)
{
	const struct kb_gw_lb *lb =
		kb__dc_board(dc, it, kb__dc_opt_board(it), err, err_size);
	const char **gpus;
	size_t ngpus;

	if (!lb || gpus_of(lb, kb_dc_opt_str(it, "gpu"), &gpus, &ngpus, err,
			   err_size) < 0)
		return -EINVAL;
	struct kb_buf note = {0};
	if (not_sealed_line(&note, lb)) {
		int rc = note.data ? parts_text(out, note.data) : -ENOMEM;
		kb_buf_free(&note);
		if (rc < 0) {
			snprintf(err, err_size, "⚠️ Out of memory.");
			return rc;
		}
	}
	for (size_t g = 0; g < ngpus; g++) {
		struct kb_gw_rank_entry *e = NULL;
		size_t n = 0;
		long total = 0;
		char title[256];
		int rc = kb_gw_ranking(dc->g, lb->task->name, gpus[g], 0,
				       SHOW_TOP, &e, &n);
		if (rc == 0)
			rc = kb_gw_ranking_count(dc->g, lb->task->name, gpus[g],
						 NULL, &total);
		if (rc < 0) {
			free(e);
			store_error(err, err_size, rc);
			return rc;
		}
		if (n == 0) {
			snprintf(title, sizeof(title),
				 "**Ranking of `%s` on %s**: no ranked "
				 "submissions yet.",
				 lb->task->name, gpus[g]);
			rc = parts_text(out, title);
			free(e);
			if (rc < 0)
				return rc;
			continue;
		}
		char **lines = calloc(n, sizeof(*lines)), **msgs;
		size_t nmsgs;
		for (size_t i = 0; lines && i < n; i++) {
			char t[32], *name, *file;
			kb_dc_fmt_seconds(e[i].score, t, sizeof(t));
			name = kb_dc_text_clean(e[i].user_name,
						strlen(e[i].user_name), 18, 1);
			file = kb_dc_text_clean(e[i].file_name,
						strlen(e[i].file_name), 24, 1);
			if (asprintf(&lines[i], "#%-3ld %-18s %10s  %s",
				     e[i].rank, name ? name : "?", t,
				     file ? file : "") < 0)
				lines[i] = NULL;
			free(name);
			free(file);
		}
		snprintf(title, sizeof(title),
			 "**Ranking of `%s` on %s** (top %zu of %ld)",
			 lb->task->name, gpus[g], n, total);
		rc = lines ? kb_dc_text_pack(title, (const char *const *)lines,
					     n, 1, KB_DC_CONTENT_MAX, &msgs,
					     &nmsgs)
			   : -ENOMEM;
		for (size_t i = 0; lines && i < n; i++)
			free(lines[i]);
		free(lines);
		free(e);
		if (rc == 0)
			rc = parts_add(out, msgs, nmsgs);
		if (rc < 0) {
			snprintf(err, err_size, "⚠️ Out of memory.");
			return rc;
		}
	}
	/* Several short blocks fit in one message: join them. */
	if (out->n > 1) {
		struct kb_buf b = {0};
		for (size_t i = 0; i < out->n; i++)
			kb_buf_printf(&b, "%s%s", i ? "\n" : "", out->v[i]);
		if (b.data && kb_dc_text_units(b.data) <= KB_DC_CONTENT_MAX) {
			parts_free(out);
			out->v = malloc(sizeof(char *));
			if (!out->v) {
				kb_buf_free(&b);
				return -ENOMEM;
			}
			out->v[0] = b.data;
			out->n = 1;
		} else {
			kb_buf_free(&b);
		}
	}
	return 0;
}

static void job_show(struct kb_dc *dc, const struct kb_dc_interaction *it,
		     int64_t received_ms)
{
	run_built(dc, it, build_show);
}

json_t *kb__dc_cmd_show(struct kb_dc *dc, const struct kb_dc_interaction *it,
			kb_dc_job_fn *defer)
{
	return answer(dc, it, build_show, job_show, defer);
}

/* ---- /leaderboard show-personal ---- */

/* The user's rank and score on lb/gpu; *rank 0 when unranked. */
static int user_rank(struct kb_dc *dc, const char *lb, const char *gpu,
		     const char *uid, long *rank, double *score)
{
	struct kb_gw_rank_entry *e = NULL;
	size_t n = 0;
	int rc = kb_gw_ranking(dc->g, lb, gpu, 0, RANK_SCAN_MAX, &e, &n);

	*rank = 0;
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (strcmp(e[i].user_id, uid) == 0) {
			*rank = e[i].rank;
			*score = e[i].score;
		}
	free(e);
	return rc;
}

static int build_personal(struct kb_dc *dc, const struct kb_dc_interaction *it,
			  struct parts *out, char *err, size_t err_size)
{
	const struct kb_gw_lb *lb =
		kb__dc_board(dc, it, kb__dc_opt_board(it), err, err_size);
	const char *gpu_opt = kb_dc_opt_str(it, "gpu");
	struct kb_gw_sub_list l = {0};
	struct kb_buf head = {0};
	const char **gpus;
	size_t ngpus;
	char uid[96];
	int rc;

	if (!lb || gpus_of(lb, gpu_opt, &gpus, &ngpus, err, err_size) < 0)
		return -EINVAL;
	kb__dc_user_id(it->user_id, uid, sizeof(uid));
	kb_buf_printf(&head, "**Your submissions to `%s`**", lb->task->name);
	for (size_t g = 0; g < ngpus; g++) {
		long rank;
		double score = 0;
		char t[32];
		rc = user_rank(dc, lb->task->name, gpus[g], uid, &rank, &score);
		if (rc < 0) {
			kb_buf_free(&head);
			store_error(err, err_size, rc);
			return rc;
		}
		kb_dc_fmt_seconds(score, t, sizeof(t));
		if (rank)
			kb_buf_printf(&head, "\nBest on %s: **%s** (rank #%ld)",
				      gpus[g], t, rank);
		else
			kb_buf_printf(&head, "\nNot ranked on %s yet.",
				      gpus[g]);
	}
	rc = kb_gw_sub_list_user(dc->g, uid, lb->task->name, 0, PERSONAL_LAST,
				 &l);
	if (rc < 0) {
		kb_buf_free(&head);
		store_error(err, err_size, rc);
		return rc;
	}
	char **lines = calloc(l.n ? l.n : 1, sizeof(*lines)), **msgs;
	size_t k = 0, nmsgs;
	for (size_t i = 0; lines && i < l.n; i++) {
		const redisReply *row = l.rows[i];
		const char *gpu = kb_gw_list_value(row, "gpu");
		const char *mode = kb_gw_list_value(row, "mode");
		const char *status = kb_gw_list_value(row, "status");
		const char *verdict = kb_gw_list_value(row, "verdict");
		const char *score = kb_gw_list_value(row, "score");
		const char *ms = kb_gw_list_value(row, "submitted_ms");
		char t[32] = "", when[40];
		if (gpu_opt && (!gpu || strcmp(gpu, gpu_opt) != 0))
			continue;
		if (score && *score)
			kb_dc_fmt_seconds(strtod(score, NULL), t, sizeof(t));
		fmt_date(ms ? strtoll(ms, NULL, 10) : -1, when, sizeof(when));
		if (asprintf(&lines[k],
			     "#%-6" PRIu64 " %-9s %-6s %-13s %10s  %s",
			     l.ids[i], kb_dc_mode_label(mode), gpu ? gpu : "?",
			     verdict && *verdict ? verdict
			     : status            ? status
						 : "?",
			     t, when) >= 0)
			k++;
	}
	kb_gw_sub_list_free(&l);
	if (k == 0)
		kb_buf_printf(
			&head,
			"\nNo submissions yet: `/leaderboard submit` sends one.");
	else
		kb_buf_printf(
			&head,
			"\nYour last %zu (id, mode, gpu, verdict, score, time):",
			k);
	rc = !lines || !head.data ? -ENOMEM
	     : k ? kb_dc_text_pack(head.data, (const char *const *)lines, k, 1,
				   KB_DC_CONTENT_MAX, &msgs, &nmsgs)
		 : 0;
	if (rc == 0)
		rc = k ? parts_add(out, msgs, nmsgs)
		       : parts_text(out, head.data);
	for (size_t i = 0; lines && i < k; i++)
		free(lines[i]);
	free(lines);
	kb_buf_free(&head);
	if (rc < 0)
		snprintf(err, err_size, "⚠️ Out of memory.");
	return rc;
}

static void job_personal(struct kb_dc *dc, const struct kb_dc_interaction *it,
			 int64_t received_ms)
{
	run_built(dc, it, build_personal);
}

json_t *kb__dc_cmd_show_personal(struct kb_dc *dc,
				 const struct kb_dc_interaction *it,
				 kb_dc_job_fn *defer)
{
	return answer(dc, it, build_personal, job_personal, defer);
}

/* ---- /leaderboard task ---- */

static void job_task(struct kb_dc *dc, const struct kb_dc_interaction *it,
		     int64_t received_ms)
{
	char err[256], when[40];
	const struct kb_gw_lb *lb =
		kb__dc_board(dc, it, kb__dc_opt_board(it), err, sizeof(err));
	struct kb_dc_file files[TASK_FILES_MAX + 1];
	size_t nf = 0;
	struct kb_buf b = {0};

	if (!lb) {
		kb__dc_edit(dc, it->application_id, it->token, err, NULL, 0, 0,
			    "error");
		return;
	}
	const struct kb_task *t = lb->task;
	fmt_date(lb->deadline_ms, when, sizeof(when));
	kb_buf_printf(&b, "**Task `%s`** · language %s · deadline %s · GPUs:",
		      t->name, t->lang, when);
	for (size_t i = 0; i < t->ngpus; i++)
		kb_buf_printf(&b, " %s", t->gpus[i]);
	kb_buf_printf(&b, "\n");
	if (not_sealed_line(&b, lb))
		kb_buf_printf(&b, "\n");
	char *desc =
		kb_dc_text_clean(t->description, strlen(t->description), 0, 0);
	char *fit =
		desc ? kb_dc_text_fit(desc, DESCRIPTION_MAX,
				      "\n[… the whole description is attached]")
		     : NULL;
	kb_buf_printf(&b, "%s\n", fit ? fit : "");
	if (desc && fit && strcmp(desc, fit) != 0) {
		files[nf++] = (struct kb_dc_file){(char *)"description.md",
						  desc, strlen(desc)};
	}
	for (size_t i = 0; i < t->nfiles && nf < TASK_FILES_MAX; i++) {
		if (i == lb->submission_file || !lb->file_contents[i])
			continue;
		files[nf++] = (struct kb_dc_file){t->files[i].name,
						  lb->file_contents[i],
						  lb->file_lens[i]};
	}
	if (nf)
		kb_buf_printf(
			&b,
			"The task's files are attached (your file is `%s`).",
			lb->submission_file < t->nfiles
				? t->files[lb->submission_file].name
				: "?");
	char *msg = b.data ? kb_dc_text_fit(b.data, KB_DC_CONTENT_MAX, NULL)
			   : NULL;
	kb__dc_edit(dc, it->application_id, it->token,
		    msg ? msg : "⚠️ Out of memory.", files, nf, 0, "task");
	free(msg);
	free(fit);
	free(desc);
	kb_buf_free(&b);
}

json_t *kb__dc_cmd_task(struct kb_dc *dc, const struct kb_dc_interaction *it,
			kb_dc_job_fn *defer)
{
	char err[256];

	if (!kb__dc_board(dc, it, kb__dc_opt_board(it), err, sizeof(err)))
		return error_msg(err);
	*defer = job_task;
	return NULL;
}

/* ---- /leaderboard template ---- */

/* The template entry for lang (case-insensitive), the only one when lang
 * is NULL and there is one, else NULL. */
static const struct kb_kv *template_of(const struct kb_task *t,
				       const char *lang)
{
	if (!lang)
		return t->ntemplates == 1 ? &t->templates[0] : NULL;
	for (size_t i = 0; i < t->ntemplates; i++)
		if (strcasecmp(t->templates[i].key, lang) == 0)
			return &t->templates[i];
	return NULL;
}

static int template_error(const struct kb_task *t, const char *lang, char *err,
			  size_t size)
{
	char *c = kb_dc_text_clean(lang ? lang : "", lang ? strlen(lang) : 0,
				   32, 1);

	if (t->ntemplates == 0)
		snprintf(err, size, "❌ `%s` has no templates.", t->name);
	else
		snprintf(
			err, size,
			lang ? "❌ `%s` has no template for `%s`. Choose one of:"
			     : "❌ `%s` has several templates%s; choose one of:",
			t->name, lang ? c : "");
	for (size_t i = 0; i < t->ntemplates; i++) {
		size_t l = strlen(err);
		snprintf(err + l, size - l, " `%s`", t->templates[i].key);
	}
	free(c);
	return -EINVAL;
}

static void job_template(struct kb_dc *dc, const struct kb_dc_interaction *it,
			 int64_t received_ms)
{
	char err[512], path[PATH_MAX], fname[160];
	const struct kb_gw_lb *lb =
		kb__dc_board(dc, it, kb__dc_opt_board(it), err, sizeof(err));
	const struct kb_kv *tpl =
		lb ? template_of(lb->task, kb_dc_opt_str(it, "lang")) : NULL;
	char *code = NULL;
	size_t len = 0;
	struct kb_buf b = {0};

	if (lb && !tpl)
		template_error(lb->task, kb_dc_opt_str(it, "lang"), err,
			       sizeof(err));
	if (!tpl) {
		kb__dc_edit(dc, it->application_id, it->token, err, NULL, 0, 0,
			    "error");
		return;
	}
	if (kb_task_read(lb->task, tpl->value, 1u << 20, &code, &len, path,
			 sizeof(path)) < 0) {
		kb_error("discord: template %s", path);
		kb__dc_edit(dc, it->application_id, it->token,
			    "⚠️ The template cannot be read right now.",
			    NULL, 0, 0, "error");
		return;
	}
	const struct kb_lang *lang = kb_lang_find(lb->task->lang);
	const char *cc = lang ? lang->comment : "//";
	const char *ext = strrchr(tpl->value, '.');
	snprintf(fname, sizeof(fname), "%s%s", lb->task->name,
		 ext ? ext : ".txt");
	kb_buf_printf(&b, "%s!POPCORN leaderboard %s\n", cc, lb->task->name);
	if (lb->task->ngpus)
		kb_buf_printf(&b, "%s!POPCORN gpu %s\n", cc, lb->task->gpus[0]);
	kb_buf_printf(&b, "\n");
	kb_buf_append(&b, code, len);
	struct kb_dc_file f = {fname, b.data, b.len};
	char msg[300];
	snprintf(msg, sizeof(msg),
		 "**Starter code for `%s`** (%s). Submit it with "
		 "`/leaderboard submit test`.",
		 lb->task->name, tpl->key);
	if (b.data)
		kb__dc_edit(dc, it->application_id, it->token, msg, &f, 1, 0,
			    "template");
	free(code);
	kb_buf_free(&b);
}

json_t *kb__dc_cmd_template(struct kb_dc *dc,
			    const struct kb_dc_interaction *it,
			    kb_dc_job_fn *defer)
{
	char err[512];
	const struct kb_gw_lb *lb =
		kb__dc_board(dc, it, kb__dc_opt_board(it), err, sizeof(err));

	if (!lb)
		return error_msg(err);
	if (!template_of(lb->task, kb_dc_opt_str(it, "lang"))) {
		template_error(lb->task, kb_dc_opt_str(it, "lang"), err,
			       sizeof(err));
		return error_msg(err);
	}
	*defer = job_template;
	return NULL;
}

/* ---- /leaderboard get-submission ---- */

static int sub_id_of(const struct kb_dc_interaction *it, uint64_t *id)
{
	const struct kb_dc_option *o = kb_dc_opt(it, "submission_id");

	if (!o)
		return -EINVAL;
	if (o->type == KB_DC_OPT_STRING && o->str)
		return kb_parse_u64(o->str, id) == 0 && *id ? 0 : -EINVAL;
	if (o->num <= 0)
		return -EINVAL;
	*id = (uint64_t)o->num;
	return 0;
}

static void job_get_submission(struct kb_dc *dc,
			       const struct kb_dc_interaction *it,
			       int64_t received_ms)
{
	struct kb_gw_sub_rec rec;
	char uid[96], msg[160], when[40];
	uint64_t id = 0;
	int rc;

	sub_id_of(it, &id);
	kb__dc_user_id(it->user_id, uid, sizeof(uid));
	rc = kb_gw_sub_fetch(dc->g, id, 1, &rec);
	if (rc < 0 && rc != -ENOENT) {
		store_error(msg, sizeof(msg), rc);
		kb__dc_edit(dc, it->application_id, it->token, msg, NULL, 0, 0,
			    "error");
		return;
	}
	const char *owner = rc == 0 ? kb_gw_sub_field(&rec, "user_id") : NULL;
	int admin = kb__dc_is_admin(dc, it);
	if (!owner || (strcmp(owner, uid) != 0 && !admin)) {
		/* Others learn nothing of ids that are not theirs; admins may
		 * hear that one does not exist. */
		if (admin)
			snprintf(msg, sizeof(msg),
				 "❌ There is no submission #%" PRIu64 ".", id);
		else
			snprintf(msg, sizeof(msg),
				 "❌ Submission #%" PRIu64 " is not one of "
				 "your submissions.",
				 id);
		kb__dc_edit(dc, it->application_id, it->token, msg, NULL, 0, 0,
			    "error");
		if (rc == 0)
			kb_gw_sub_rec_free(&rec);
		return;
	}
	const char *lb = kb_gw_sub_field(&rec, "lb"),
		   *gpu = kb_gw_sub_field(&rec, "gpu");
	const char *mode = kb_gw_sub_field(&rec, "mode");
	const char *fname = kb_gw_sub_field(&rec, "file_name");
	const char *status = kb_gw_sub_field(&rec, "status");
	const char *verdict = kb_gw_sub_field(&rec, "verdict");
	const char *score = kb_gw_sub_field(&rec, "score");
	const char *ms = kb_gw_sub_field(&rec, "submitted_ms");
	struct kb_dc_sub_head h = {id, lb ? lb : "?", gpu ? gpu : "?",
				   mode ? mode : "?",
				   fname ? fname : "submission"};
	struct kb_buf b = {0};
	struct kb_dc_file files[2];
	size_t nf = 0;
	char *report = NULL, *text = NULL;
	Kb__Result *res = NULL;

	fmt_date(ms ? strtoll(ms, NULL, 10) : -1, when, sizeof(when));
	if (rec.res && rec.res->type == REDIS_REPLY_STRING)
		res = kb__result__unpack(NULL, rec.res->len,
					 (const uint8_t *)rec.res->str);
	if (res) {
		kb_report_redact(res);
		report = kb_gw_result_report(res);
		text = kb_dc_render_result(&h, res, NULL, report != NULL,
					   KB_DC_CONTENT_MAX - 200);
	}
	if (text) {
		kb_buf_printf(&b, "%s\nSubmitted %s.", text, when);
	} else {
		char t[32] = "";
		if (score && *score)
			kb_dc_fmt_seconds(strtod(score, NULL), t, sizeof(t));
		kb_buf_printf(&b,
			      "**Submission #%" PRIu64
			      "** · `%s` on **%s** · %s\n"
			      "Submitted %s · status %s%s%s%s%s",
			      id, h.lb, h.gpu, kb_dc_mode_label(h.mode), when,
			      status ? status : "?",
			      verdict ? " · verdict " : "",
			      verdict ? verdict : "", *t ? " · score " : "", t);
		if (status && strcmp(status, "done") != 0 &&
		    strcmp(status, "failed") != 0)
			kb_buf_printf(&b,
				      "\n*The submission is still running.*");
	}
	if (strcmp(owner, uid) != 0) {
		const char *who = kb_gw_sub_field(&rec, "user_name");
		char *c = kb_dc_text_clean(who ? who : "?",
					   who ? strlen(who) : 1, 64, 1);
		kb_buf_printf(&b, "\nBy **%s** (`%s`).", c ? c : "?", owner);
		free(c);
	}
	if (rec.code && rec.code->type == REDIS_REPLY_STRING)
		files[nf++] = (struct kb_dc_file){(char *)h.file_name,
						  rec.code->str, rec.code->len};
	char rname[64];
	snprintf(rname, sizeof(rname), "submission-%" PRIu64 "-report.txt", id);
	if (report)
		files[nf++] =
			(struct kb_dc_file){rname, report, strlen(report)};
	char *msgtext = b.data ? kb_dc_text_fit(b.data, KB_DC_CONTENT_MAX, NULL)
			       : NULL;
	kb__dc_edit(dc, it->application_id, it->token,
		    msgtext ? msgtext : "⚠️ Out of memory.", files, nf, 0,
		    "get-submission");
	free(msgtext);
	kb_buf_free(&b);
	free(text);
	free(report);
	if (res)
		kb__result__free_unpacked(res, NULL);
	kb_gw_sub_rec_free(&rec);
}

json_t *kb__dc_cmd_get_submission(struct kb_dc *dc,
				  const struct kb_dc_interaction *it,
				  kb_dc_job_fn *defer)
{
	uint64_t id;

	if (sub_id_of(it, &id) < 0)
		return error_msg(
			"❌ `submission_id` must be a positive number.");
	*defer = job_get_submission;
	return NULL;
}

/* ---- autocomplete ---- */

static int contains_ci(const char *hay, const char *needle)
{
	size_t n = needle ? strlen(needle) : 0;

	if (!n)
		return 1;
	for (; *hay; hay++)
		if (strncasecmp(hay, needle, n) == 0)
			return 1;
	return 0;
}

json_t *kb__dc_autocomplete(struct kb_dc *dc,
			    const struct kb_dc_interaction *it)
{
	const struct kb_dc_option *f = kb_dc_focused(it);
	const char *names[BOARD_CHOICES];
	size_t n = 0;
	const char *typed = f && f->str ? f->str : "";
	char why[256];

	if (!f)
		return kb_dc_resp_choices(NULL, NULL, 0);
	if (strcmp(f->name, "leaderboard") == 0 ||
	    strcmp(f->name, "leaderboard_name") == 0) {
		size_t count = kb_gw_lb_count(dc->g);
		for (size_t i = 0; i < count && n < BOARD_CHOICES; i++) {
			const struct kb_gw_lb *lb = kb_gw_lb_at(dc->g, i);
			if (lb && contains_ci(lb->task->name, typed) &&
			    board_visible(dc, it, lb))
				names[n++] = lb->task->name;
		}
	} else if (strcmp(f->name, "gpu") == 0) {
		const char *board = kb__dc_opt_board(it);
		const struct kb_gw_lb *lb =
			board ? kb__dc_board(dc, it, board, why, sizeof(why))
			      : NULL;
		size_t count = kb_gw_lb_count(dc->g);
		/* The chosen board's gpus, else every gpu of every board. */
		for (size_t i = 0; i < count && n < BOARD_CHOICES; i++) {
			const struct kb_gw_lb *b = lb ? lb
						      : kb_gw_lb_at(dc->g, i);
			if (!b || atomic_load(&b->deleted))
				continue;
			for (size_t g = 0;
			     g < b->task->ngpus && n < BOARD_CHOICES; g++) {
				const char *gpu = b->task->gpus[g];
				int seen = 0;
				for (size_t k = 0; k < n; k++)
					seen |= strcmp(names[k], gpu) == 0;
				if (!seen && contains_ci(gpu, typed))
					names[n++] = gpu;
			}
			if (lb)
				break;
		}
	} else if (strcmp(f->name, "lang") == 0) {
		const struct kb_gw_lb *lb = kb__dc_board(
			dc, it, kb__dc_opt_board(it), why, sizeof(why));
		for (size_t i = 0;
		     lb && i < lb->task->ntemplates && n < BOARD_CHOICES; i++)
			if (contains_ci(lb->task->templates[i].key, typed))
				names[n++] = lb->task->templates[i].key;
	}
	return kb_dc_resp_choices(names, NULL, n);
}
