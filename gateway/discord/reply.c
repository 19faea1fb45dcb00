/* kb_dc: the answer helpers of the Discord front end (see internal.h):
 * edits, follow-ups and channel messages, each queued for the REST thread,
 * and the small helpers every command shares. */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kb_log.h"
#include "kb_util.h"
#include "store/store.h"

/* Attachments per message, as Discord allows. */
#define FILES_PER_MESSAGE 10

int kb__dc_stopping(struct kb_dc *dc)
{
	pthread_mutex_lock(&dc->mu);
	int stopping = dc->stopping;
	pthread_mutex_unlock(&dc->mu);
	return stopping;
}

/* ---- answering ---- */

static struct kb_dc_call *message_call(const char *method, const char *text,
				       int ephemeral,
				       const struct kb_dc_file *files,
				       size_t nfiles, const char *mention,
				       const char *what)
{
	const char *names[FILES_PER_MESSAGE];
	/* The path is set by submit_call(). */
	struct kb_dc_call *c = kb_dc_call_new(method, "%s", "/");
	json_t *body;
	char *s;

	if (!c)
		return NULL;
	if (nfiles > FILES_PER_MESSAGE)
		nfiles = FILES_PER_MESSAGE;
	for (size_t i = 0; i < nfiles; i++)
		names[i] = files[i].name;
	body = kb_dc_message_body(text, ephemeral, names, nfiles, mention);
	s = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	if (!s) {
		kb_dc_call_free(c);
		return NULL;
	}
	c->json = s;
	for (size_t i = 0; i < nfiles; i++)
		if (kb_dc_call_add_file(c, files[i].name, files[i].data,
					files[i].len) < 0) {
			kb_dc_call_free(c);
			return NULL;
		}
	snprintf(c->what, sizeof(c->what), "%s", what ? what : "message");
	return c;
}

static void submit_call(struct kb_dc *dc, struct kb_dc_call *c,
			const char *path_fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void submit_call(struct kb_dc *dc, struct kb_dc_call *c,
			const char *path_fmt, ...)
{
	va_list ap;
	int rc;

	if (!c) {
		kb_error("discord: out of memory building a message");
		return;
	}
	free(c->path);
	va_start(ap, path_fmt);
	rc = vasprintf(&c->path, path_fmt, ap);
	va_end(ap);
	if (rc < 0) {
		c->path = NULL;
		kb_dc_call_free(c);
		return;
	}
	rc = kb_dc_rest_submit(dc->rest, c);
	if (rc < 0)
		kb_warn("discord: message not queued (%s)", strerror(-rc));
}

void kb__dc_edit(struct kb_dc *dc, const char *app_id, const char *token,
		 const char *text, const struct kb_dc_file *files,
		 size_t nfiles, int coalesce, const char *what)
{
	struct kb_dc_call *c =
		message_call("PATCH", text, 0, files, nfiles, NULL, what);
	char key[800];

	if (!c)
		return;
	snprintf(key, sizeof(key), "edit:%s", token);
	if (kb_dc_call_set(&c->order_key, token) < 0 ||
	    (coalesce && kb_dc_call_set(&c->coalesce_key, key) < 0)) {
		kb_dc_call_free(c);
		return;
	}
	if (coalesce)
		c->min_gap_ms = dc->cfg.edit_interval_ms;
	/* Discord may not have our deferred answer on file yet. */
	c->retry_404_until_ms = (int64_t)(kb_mono_s() * 1e3) + 15000;
	submit_call(dc, c, "/webhooks/%s/%s/messages/@original", app_id, token);
}

void kb__dc_followup(struct kb_dc *dc, const char *app_id, const char *token,
		     const char *text, int ephemeral, const char *mention_user,
		     const char *what)
{
	struct kb_dc_call *c = message_call("POST", text, ephemeral, NULL, 0,
					    mention_user, what);

	if (!c)
		return;
	if (kb_dc_call_set(&c->order_key, token) < 0) {
		kb_dc_call_free(c);
		return;
	}
	submit_call(dc, c, "/webhooks/%s/%s", app_id, token);
}

void kb__dc_channel_message(struct kb_dc *dc, const char *channel_id,
			    const char *text, const struct kb_dc_file *files,
			    size_t nfiles, const char *mention_user,
			    const char *what)
{
	struct kb_dc_call *c;

	if (!dc->cfg.bot_token[0] || !channel_id || !*channel_id) {
		kb_warn("discord: %s not sent: no bot token or channel", what);
		return;
	}
	c = message_call("POST", text, 0, files, nfiles, mention_user, what);
	if (!c)
		return;
	c->bot_auth = 1;
	if (kb_dc_call_set(&c->order_key, channel_id) < 0) {
		kb_dc_call_free(c);
		return;
	}
	submit_call(dc, c, "/channels/%s/messages", channel_id);
}

void kb__dc_reply(struct kb_dc *dc, const struct kb_dc_interaction *it,
		  const char *text, const struct kb_dc_file *files,
		  size_t nfiles, int ephemeral)
{
	char **parts = NULL;
	size_t n = 0;

	if (kb_dc_text_split(text, KB_DC_CONTENT_MAX, &parts, &n) < 0 ||
	    n == 0) {
		kb_error("discord: out of memory splitting a reply");
		return;
	}
	/* Files ride with the last part, so they come after all the text. */
	kb__dc_edit(dc, it->application_id, it->token, parts[0],
		    n == 1 ? files : NULL, n == 1 ? nfiles : 0, 0, "reply");
	for (size_t i = 1; i < n; i++) {
		struct kb_dc_call *c = message_call("POST", parts[i], ephemeral,
						    i + 1 == n ? files : NULL,
						    i + 1 == n ? nfiles : 0,
						    NULL, "reply part");
		if (!c || kb_dc_call_set(&c->order_key, it->token) < 0) {
			kb_dc_call_free(c);
			break;
		}
		submit_call(dc, c, "/webhooks/%s/%s", it->application_id,
			    it->token);
	}
	kb_dc_text_free_parts(parts, n);
}

/* ---- helpers ---- */

json_t *kb__dc_sayf(const char *fmt, ...)
{
	char msg[KB_DC_CONTENT_MAX * 4 + 1];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	char *fit = kb_dc_text_fit(msg, KB_DC_CONTENT_MAX, NULL);
	json_t *resp = kb_dc_resp_message(fit ? fit : msg, 1);
	free(fit);
	return resp;
}

json_t *kb__dc_store_failed(int rc)
{
	return kb__dc_sayf(
		rc == -EIO
			? "⚠️ The store is unavailable; nothing changed."
			: "⚠️ The store answered unexpectedly; nothing changed.");
}

const char *kb__dc_opt_board(const struct kb_dc_interaction *it)
{
	const char *s = kb_dc_opt_str(it, "leaderboard");

	return s ? s : kb_dc_opt_str(it, "leaderboard_name");
}

int kb__dc_is_admin(const struct kb_dc *dc, const struct kb_dc_interaction *it)
{
	return kb_dc_is_listed(it, dc->cfg.admin_ids);
}

void kb__dc_user_id(const char *snowflake, char *out, size_t size)
{
	snprintf(out, size, "discord-%s", snowflake ? snowflake : "");
}

const struct kb_gw_lb *kb__dc_board(struct kb_dc *dc,
				    const struct kb_dc_interaction *it,
				    const char *name, char *why,
				    size_t why_size)
{
	const struct kb_gw_lb *lb = name ? kb_gw_lb_find(dc->g, name) : NULL;
	char *clean;

	if (lb && atomic_load(&lb->closed) && !kb__dc_is_admin(dc, it)) {
		char uid[96];
		int allowed = 0;
		kb__dc_user_id(it->user_id, uid, sizeof(uid));
		if (kb_gw_has_access(dc->g, lb->task->name, uid, &allowed) <
			    0 ||
		    !allowed)
			lb = NULL;
	}
	if (lb)
		return lb;
	clean = kb_dc_text_clean(name ? name : "", name ? strlen(name) : 0, 64,
				 1);
	snprintf(why, why_size,
		 "There is no leaderboard `%s`. `/leaderboard list` "
		 "shows the open ones.",
		 clean ? clean : "?");
	free(clean);
	return NULL;
}
