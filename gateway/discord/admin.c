/* /admin: start, stop, ban, unban, delete-submission, reload-problems.
 * Only users or roles listed in DISCORD_ADMIN_IDS get here (the handler
 * checks). Each answers at once, ephemeral, except reload-problems, which
 * reads the problem files on a job thread.
 *
 * Reloading: problems are loaded when a gateway starts, each Submission
 * carries its task, and every gateway replica must serve the same
 * definitions, so replacing a board's task inside one running process
 * would let replicas disagree (and the board table is lock-free by
 * design: boards are only ever appended). A running gateway therefore
 * does not replace loaded tasks. What /admin reload-problems does is
 * compare the files on disk with what is loaded and say which boards are
 * new, changed or gone, and that a rolling restart applies them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kb_log.h"
#include "kb_util.h"
#include "store/store.h"

static json_t *ban(struct kb_dc *dc, const struct kb_dc_interaction *it,
		   int banned)
{
	const char *sf = kb_dc_opt_str(it, "user");
	const char *name = sf ? kb_dc_resolved_user_name(it, sf) : NULL;
	char uid[96];
	int rc;

	if (!sf || strspn(sf, "0123456789") != strlen(sf) || !*sf)
		return kb__dc_sayf("❌ Pick a user.");
	kb__dc_user_id(sf, uid, sizeof(uid));
	rc = kb_gw_user_set_banned(dc->g, uid, banned);
	if (rc == -ENOENT && banned) {
		/* Not a user yet: create it, so that the ban holds on first use. */
		rc = kb_gw_user_ensure(dc->g, uid, name && *name ? name : sf);
		if (rc == -EINVAL)
			rc = kb_gw_user_ensure(dc->g, uid, sf);
		if (rc == 0)
			rc = kb_gw_user_set_banned(dc->g, uid, 1);
	}
	if (rc == -ENOENT)
		return kb__dc_sayf(
			"<@%s> has never used KernelBot; there is no ban to lift.",
			sf);
	if (rc < 0)
		return kb__dc_store_failed(rc);
	kb_info("discord: admin=%s %s user=%s", it->user_id,
		banned ? "banned" : "unbanned", uid);
	return kb__dc_sayf(
		banned ? "🔨 <@%s> is banned: their submissions are refused."
		       : "✅ <@%s> may submit again.",
		sf);
}

static json_t *delete_submission(struct kb_dc *dc,
				 const struct kb_dc_interaction *it)
{
	const struct kb_dc_option *o = kb_dc_opt(it, "submission_id");
	char lb[128], gpu[64];
	int changed = 0, rc;

	if (!o || o->num <= 0)
		return kb__dc_sayf(
			"❌ `submission_id` must be a positive number.");
	rc = kb_gw_sub_delete(dc->g, (uint64_t)o->num, NULL, lb, sizeof(lb),
			      gpu, sizeof(gpu), &changed);
	if (rc == -ENOENT)
		return kb__dc_sayf("❌ There is no submission #%lld.", o->num);
	if (rc < 0)
		return kb__dc_store_failed(rc);
	kb_info("discord: admin=%s deleted sub=%lld", it->user_id, o->num);
	return kb__dc_sayf(
		"🗑️ Submission #%lld (`%s` on %s) is deleted%s.", o->num,
		lb, gpu, changed ? "; the ranking was recomputed" : "");
}

/* ---- reload-problems ---- */

static void job_reload(struct kb_dc *dc, const struct kb_dc_interaction *it,
		       int64_t received_ms)
{
	struct kb_problemset ps = {0};
	struct kb_buf b = {0}, added = {0}, changed = {0}, gone = {0};
	char err[512];
	size_t n_same = 0, n_boards = kb_gw_lb_count(dc->g);
	int rc = kb_problemset_load(dc->g->cfg.problems, &ps, err, sizeof(err));

	if (rc < 0) {
		char *c = kb_dc_text_clean(err, strlen(err), 1500, 1);
		kb_buf_printf(
			&b,
			"❌ The problem files on disk do not load, so a restart "
			"would fail too:\n```\n%s\n```",
			c ? c : "?");
		free(c);
		kb__dc_reply(dc, it,
			     b.data ? b.data
				    : "❌ The problem files do not load.",
			     NULL, 0, 1);
		kb_buf_free(&b);
		return;
	}
	for (size_t i = 0; i < ps.n; i++) {
		const struct kb_task *t = &ps.tasks[i];
		const struct kb_gw_lb *lb = kb_gw_lb_find(dc->g, t->name);
		unsigned char a[32], z[32];
		if (!lb) {
			kb_buf_printf(&added, " `%s`", t->name);
			continue;
		}
		if (kb__dc_task_fingerprint(t, NULL, NULL, a) < 0 ||
		    kb__dc_task_fingerprint(lb->task, lb->file_contents,
					    lb->file_lens, z) < 0 ||
		    memcmp(a, z, sizeof(a)) != 0)
			kb_buf_printf(&changed, " `%s`", t->name);
		else
			n_same++;
	}
	for (size_t i = 0; i < n_boards; i++) {
		const struct kb_gw_lb *lb = kb_gw_lb_at(dc->g, i);
		if (lb && !lb->dynamic && !atomic_load(&lb->deleted) &&
		    !kb_problemset_find(&ps, lb->task->name))
			kb_buf_printf(&gone, " `%s`", lb->task->name);
	}
	kb_buf_printf(&b,
		      "**Problem definitions** (`KB_PROBLEMS`): %zu on disk, "
		      "%zu unchanged.\n",
		      ps.n, n_same);
	if (added.data)
		kb_buf_printf(&b, "New on disk:%s\n", added.data);
	if (changed.data)
		kb_buf_printf(&b, "Changed on disk:%s\n", changed.data);
	if (gone.data)
		kb_buf_printf(&b, "No longer on disk:%s\n", gone.data);
	if (added.data || changed.data || gone.data)
		kb_buf_printf(
			&b,
			"A running gateway keeps the definitions it started with "
			"(every replica must judge alike), so apply these with a "
			"rolling restart of the gateways, e.g. `kubectl rollout "
			"restart deployment/kb-gateway`. Workers need no restart: "
			"each submission carries its task.");
	else
		kb_buf_printf(
			&b,
			"Everything loaded matches the files: nothing to reload.");
	kb__dc_reply(dc, it, b.data ? b.data : "⚠️ Out of memory.", NULL, 0,
		     1);
	kb_info("discord: admin=%s compared problem definitions", it->user_id);
	kb_buf_free(&b);
	kb_buf_free(&added);
	kb_buf_free(&changed);
	kb_buf_free(&gone);
	kb_problemset_clear(&ps);
}

json_t *kb__dc_cmd_admin(struct kb_dc *dc, const struct kb_dc_interaction *it,
			 kb_dc_job_fn *defer)
{
	const char *sub = it->command + strlen("admin ");
	int rc;

	if (strcmp(sub, "start") == 0 || strcmp(sub, "stop") == 0) {
		int on = strcmp(sub, "start") == 0;
		rc = kb_gw_set_accepting(dc->g, on);
		if (rc < 0)
			return kb__dc_store_failed(rc);
		kb_info("discord: admin=%s %s submissions", it->user_id,
			on ? "started" : "stopped");
		return kb__dc_sayf(
			on ? "▶️ KernelBot accepts submissions again."
			   : "⏸️ KernelBot stopped accepting submissions (running ones "
			     "finish). `/admin start` resumes.");
	}
	if (strcmp(sub, "ban") == 0)
		return ban(dc, it, 1);
	if (strcmp(sub, "unban") == 0)
		return ban(dc, it, 0);
	if (strcmp(sub, "delete-submission") == 0)
		return delete_submission(dc, it);
	if (strcmp(sub, "reload-problems") == 0) {
		*defer = job_reload;
		return NULL;
	}
	return kb__dc_sayf("❓ Unknown admin command.");
}
