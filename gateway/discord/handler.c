/* POST /discord/interactions: Discord's outgoing webhook.
 *
 * Every request is authenticated first (Ed25519 over timestamp + raw
 * body, verify.h) and refused with 401 when it does not verify or
 * is stale; Discord itself sends forged requests now and then to check
 * that we do. A signed interaction is accepted once: its id again within
 * the signature window is a replay (401). Then: PING answers PONG; AUTOCOMPLETE answers choices; a
 * command answers within Discord's 3 seconds either with its message or,
 * when it needs slow work, with a deferred response (type 5) while a job
 * thread does the work and edits the message later.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "discord.h"
#include "http/http.h"
#include "internal.h"
#include "kb_keys.h"
#include "kb_log.h"
#include "kb_util.h"

static const struct {
	const char *name;
	kb_dc_cmd_fn fn;
	int admin;
} commands[] = {
	{"leaderboard submit test", kb__dc_cmd_submit, 0},
	{"leaderboard submit benchmark", kb__dc_cmd_submit, 0},
	{"leaderboard submit profile", kb__dc_cmd_submit, 0},
	{"leaderboard submit ranked", kb__dc_cmd_submit, 0},
	{"leaderboard list", kb__dc_cmd_list, 0},
	{"leaderboard show", kb__dc_cmd_show, 0},
	{"leaderboard show-personal", kb__dc_cmd_show_personal, 0},
	{"leaderboard task", kb__dc_cmd_task, 0},
	{"leaderboard template", kb__dc_cmd_template, 0},
	{"leaderboard get-submission", kb__dc_cmd_get_submission, 0},
	{"admin start", kb__dc_cmd_admin, 1},
	{"admin stop", kb__dc_cmd_admin, 1},
	{"admin ban", kb__dc_cmd_admin, 1},
	{"admin unban", kb__dc_cmd_admin, 1},
	{"admin delete-submission", kb__dc_cmd_admin, 1},
	{"admin reload-problems", kb__dc_cmd_admin, 1},
	{"admin ping", kb__dc_cmd_ops, 1},
	{"admin show-stats", kb__dc_cmd_ops, 1},
	{"admin delete-leaderboard", kb__dc_cmd_ops, 1},
	{"admin export", kb__dc_cmd_ops, 1},
	{"admin get-submission", kb__dc_cmd_get_submission, 1},
	{"admin verify-task", kb__dc_cmd_verify_task, 1},
};

static json_t *command(struct kb_dc *dc, struct kb_gw_req *r,
		       const struct kb_dc_interaction *it)
{
	kb_dc_job_fn defer = NULL;
	json_t *resp;
	size_t i;

	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(commands[i].name, it->command) == 0)
			break;
	if (i == sizeof(commands) / sizeof(commands[0])) {
		char *name = kb_dc_text_clean(it->command, strlen(it->command),
					      96, 1);
		char msg[256];
		snprintf(msg, sizeof(msg),
			 "❓ Unknown command `/%s`. The commands "
			 "may have changed: try `/leaderboard list`.",
			 name ? name : "?");
		free(name);
		kb_warn("discord: unknown command user=%s", it->user_id);
		return kb_dc_resp_message(msg, 1);
	}
	if (commands[i].admin && !kb__dc_is_admin(dc, it))
		return kb_dc_resp_message(
			"⛔ Only KernelBot admins may use `/admin`.", 1);
	resp = commands[i].fn(dc, it, &defer);
	if (resp || !defer)
		return resp;
	int rc =
		kb__dc_job_submit(dc, defer, r->json, r->json_len, kb_now_ms());
	if (rc == -ESHUTDOWN)
		return kb_dc_resp_message(
			"⏳ KernelBot is restarting; please try "
			"again in a minute.",
			1);
	if (rc < 0)
		return kb_dc_resp_message(
			"⏳ KernelBot is busy; please try again "
			"in a minute.",
			1);
	return kb_dc_resp_deferred(1);
}

/* A signed request stays valid for the whole signature window: whoever
 * sees one (a proxy's log, a leaked capture) could send it again. Each
 * interaction id is let through once (kb:dcseen:<id>, shared by every
 * gateway, kept as long as its signature could pass). Returns 1 for a
 * first delivery, else replies (401 a replay, 400 no id, 503 store) and
 * returns 0. */
static int first_delivery(struct kb_dc *dc, struct kb_gw_req *r,
			  const struct kb_dc_interaction *it)
{
	char key[64];
	int rc;

	if (!it->id || !*it->id || strlen(it->id) > 24 ||
	    strspn(it->id, "0123456789") != strlen(it->id)) {
		kb_gw_reply_error(r, 400, "malformed interaction: no id");
		return 0;
	}
	snprintf(key, sizeof(key), KB_KEY_DISCORD_SEEN, it->id);
	rc = kb_gw_seen_once(dc->g, key,
			     dc->cfg.max_age_s + dc->cfg.max_future_s);
	if (rc < 0) {
		kb_gw_store_failed(r, rc);
		return 0;
	}
	if (rc == 0) {
		kb_warn("discord: refused a replayed interaction");
		kb_gw_reply_error(r, 401, "invalid request signature");
	}
	return rc;
}

static void interactions_begin(struct kb_gw_req *r)
{
	struct kb_dc *dc = kb__dc_acquire();
	uint64_t cap;

	if (!dc) {
		kb_gw_reply_error(r, 404, "Not Found");
		return;
	}
	cap = (uint64_t)dc->cfg.max_body;
	kb__dc_release(dc);
	if (!kb_gw_header(r, "X-Signature-Ed25519") ||
	    !kb_gw_header(r, "X-Signature-Timestamp")) {
		kb_gw_reply_error(r, 401, "invalid request signature");
		return;
	}
	kb_gw_expect_json(r, cap);
}

static void interactions_finish(struct kb_gw_req *r)
{
	struct kb_dc *dc = kb__dc_acquire();
	struct kb_dc_interaction it;
	char err[160];
	json_t *resp = NULL;
	int rc;

	if (!dc) {
		kb_gw_reply_error(r, 404, "Not Found");
		return;
	}
	rc = kb_dc_verify(dc->pk, kb_gw_header(r, "X-Signature-Ed25519"),
			  kb_gw_header(r, "X-Signature-Timestamp"), r->json,
			  r->json_len, kb_now_ms() / 1000, dc->cfg.max_age_s,
			  dc->cfg.max_future_s);
	if (rc < 0) {
		kb_info("discord: refused a request: %s",
			rc == -ETIME     ? "stale timestamp"
			: rc == -EBADMSG ? "bad signature"
					 : "malformed signature headers");
		kb__dc_release(dc);
		kb_gw_reply_error(r, 401, "invalid request signature");
		return;
	}
	if (kb_dc_interaction_parse(r->json ? r->json : "", r->json_len, &it,
				    err, sizeof(err)) < 0) {
		kb__dc_release(dc);
		kb_dc_interaction_clear(&it);
		kb_gw_reply_error(r, 400, "malformed interaction: %s", err);
		return;
	}
	rc = first_delivery(dc, r, &it);
	if (rc <= 0) {
		kb__dc_release(dc);
		kb_dc_interaction_clear(&it);
		return;
	}
	switch (it.type) {
	case KB_DC_IT_PING:
		resp = kb_dc_resp_pong();
		break;
	case KB_DC_IT_AUTOCOMPLETE:
		resp = kb__dc_autocomplete(dc, &it);
		break;
	case KB_DC_IT_COMMAND:
		kb_info("discord: user=%s command=/%s", it.user_id, it.command);
		resp = command(dc, r, &it);
		break;
	default:
		resp = kb_dc_resp_message("This interaction is not supported.",
					  1);
		break;
	}
	kb__dc_release(dc);
	kb_dc_interaction_clear(&it);
	if (!resp)
		kb_gw_reply_error(r, 500, "internal error");
	else
		kb_gw_reply_json(r, 200, resp);
}

const struct kb_gw_handler kb_gw_discord_interactions_handler = {
	interactions_begin,
	interactions_finish,
};
