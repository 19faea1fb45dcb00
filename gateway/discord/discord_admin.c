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
#include <inttypes.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "discord_bot.h"
#include "kb_log.h"
#include "kb_util.h"
#include "store.h"

static json_t *say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static json_t *say(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return kb_dc_resp_message(msg, 1);
}

static json_t *store_failed(int rc)
{
	return say(rc == -EIO ? "⚠️ The store is unavailable; nothing changed."
			      : "⚠️ The store answered unexpectedly; nothing changed.");
}

static json_t *ban(struct kb_dc *dc, const struct kb_dc_interaction *it, int banned)
{
	const char *sf = kb_dc_opt_str(it, "user");
	const char *name = sf ? kb_dc_resolved_user_name(it, sf) : NULL;
	char uid[96];
	int rc;

	if (!sf || strspn(sf, "0123456789") != strlen(sf) || !*sf)
		return say("❌ Pick a user.");
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
		return say("<@%s> has never used KernelBot; there is no ban to lift.", sf);
	if (rc < 0)
		return store_failed(rc);
	kb_info("discord: admin=%s %s user=%s", it->user_id, banned ? "banned" : "unbanned",
		uid);
	return say(banned ? "🔨 <@%s> is banned: their submissions are refused."
			  : "✅ <@%s> may submit again.", sf);
}

static json_t *delete_submission(struct kb_dc *dc, const struct kb_dc_interaction *it)
{
	const struct kb_dc_option *o = kb_dc_opt(it, "submission_id");
	char lb[128], gpu[64];
	int changed = 0, rc;

	if (!o || o->num <= 0)
		return say("❌ `submission_id` must be a positive number.");
	rc = kb_gw_sub_delete(dc->g, (uint64_t)o->num, NULL, lb, sizeof(lb), gpu,
			      sizeof(gpu), &changed);
	if (rc == -ENOENT)
		return say("❌ There is no submission #%lld.", o->num);
	if (rc < 0)
		return store_failed(rc);
	kb_info("discord: admin=%s deleted sub=%lld", it->user_id, o->num);
	return say("🗑️ Submission #%lld (`%s` on %s) is deleted%s.", o->num, lb, gpu,
		   changed ? "; the ranking was recomputed" : "");
}

/* ---- reload-problems ---- */

static void digest_add(crypto_hash_sha256_state *st, const char *s, size_t n)
{
	uint64_t len = n;

	crypto_hash_sha256_update(st, (const unsigned char *)&len, sizeof(len));
	if (n)
		crypto_hash_sha256_update(st, (const unsigned char *)s, n);
}

static void digest_str(crypto_hash_sha256_state *st, const char *s)
{
	digest_add(st, s ? s : "", s ? strlen(s) : 0);
}

/* A fingerprint of everything a board's submissions depend on. contents:
 * the files' contents, per task file (NULL entries skipped); when NULL
 * they are read from disk. Returns 0 or -errno (a file unreadable). */
static int fingerprint(const struct kb_task *t, char *const *contents,
		       const size_t *lens, unsigned char out[32])
{
	crypto_hash_sha256_state st;
	char num[64];

	crypto_hash_sha256_init(&st);
	digest_str(&st, t->lang);
	digest_str(&st, t->description);
	digest_str(&st, t->ranking_by);
	snprintf(num, sizeof(num), "%u/%u/%u/%d/%" PRIu64 "/%d", t->test_timeout,
		 t->benchmark_timeout, t->ranked_timeout, t->has_seed, t->seed, t->multi_gpu);
	digest_str(&st, num);
	for (size_t i = 0; i < t->nconfig; i++) {
		digest_str(&st, t->config[i].key);
		digest_str(&st, t->config[i].value);
	}
	for (size_t i = 0; i < t->ntests; i++)
		digest_str(&st, t->tests[i]);
	for (size_t i = 0; i < t->nbenchmarks; i++)
		digest_str(&st, t->benchmarks[i]);
	for (size_t i = 0; i < t->ngpus; i++)
		digest_str(&st, t->gpus[i]);
	digest_str(&st, t->deadline);
	for (size_t i = 0; i < t->nfiles; i++) {
		digest_str(&st, t->files[i].name);
		if (strcmp(t->files[i].source, "@SUBMISSION@") == 0)
			continue;
		if (contents) {
			if (contents[i])
				digest_add(&st, contents[i], lens[i]);
			continue;
		}
		char err[512], *data = NULL;
		size_t len = 0;
		int rc = kb_task_read(t, t->files[i].source, 64u << 20, &data, &len,
				      err, sizeof(err));
		if (rc < 0)
			return rc;
		digest_add(&st, data, len);
		free(data);
	}
	crypto_hash_sha256_final(&st, out);
	return 0;
}

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
		kb_buf_printf(&b, "❌ The problem files on disk do not load, so a restart "
				  "would fail too:\n```\n%s\n```", c ? c : "?");
		free(c);
		kb__dc_reply(dc, it, b.data ? b.data : "❌ The problem files do not load.",
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
		if (fingerprint(t, NULL, NULL, a) < 0 ||
		    fingerprint(lb->task, lb->file_contents, lb->file_lens, z) < 0 ||
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
	kb_buf_printf(&b, "**Problem definitions** (`KB_PROBLEMS`): %zu on disk, "
			  "%zu unchanged.\n", ps.n, n_same);
	if (added.data)
		kb_buf_printf(&b, "New on disk:%s\n", added.data);
	if (changed.data)
		kb_buf_printf(&b, "Changed on disk:%s\n", changed.data);
	if (gone.data)
		kb_buf_printf(&b, "No longer on disk:%s\n", gone.data);
	if (added.data || changed.data || gone.data)
		kb_buf_printf(&b, "A running gateway keeps the definitions it started with "
				  "(every replica must judge alike), so apply these with a "
				  "rolling restart of the gateways, e.g. `kubectl rollout "
				  "restart deployment/kb-gateway`. Workers need no restart: "
				  "each submission carries its task.");
	else
		kb_buf_printf(&b, "Everything loaded matches the files: nothing to reload.");
	kb__dc_reply(dc, it, b.data ? b.data : "⚠️ Out of memory.", NULL, 0, 1);
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
			return store_failed(rc);
		kb_info("discord: admin=%s %s submissions", it->user_id,
			on ? "started" : "stopped");
		return say(on ? "▶️ KernelBot accepts submissions again."
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
	return say("❓ Unknown admin command.");
}
