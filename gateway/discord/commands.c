/* kb_dc_commands: see commands.h. */
#include "commands.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interaction.h"
#include "kb_util.h"
#include "rest.h"

#define CHAT_INPUT 1

static json_t *opt(int type, const char *name, const char *desc, int required,
		   int autocomplete)
{
	json_t *o = json_pack("{s:i,s:s,s:s,s:b}", "type", type, "name", name,
			      "description", desc, "required", required);

	if (o && autocomplete)
		json_object_set_new(o, "autocomplete", json_true());
	return o;
}

static json_t *sub(const char *name, const char *desc, json_t *options)
{
	json_t *o = json_pack("{s:i,s:s,s:s}", "type", KB_DC_OPT_SUBCOMMAND,
			      "name", name, "description", desc);

	if (o && options)
		json_object_set_new(o, "options", options);
	else
		json_decref(options);
	return o;
}

static json_t *board_opt(int required)
{
	return opt(KB_DC_OPT_STRING, "leaderboard", "Name of the leaderboard",
		   required, 1);
}

static json_t *gpu_opt(const char *desc)
{
	return opt(KB_DC_OPT_STRING, "gpu", desc, 0, 1);
}

static json_t *submit_sub(const char *name, const char *desc)
{
	/* Required options must come first. */
	return sub(
		name, desc,
		json_pack(
			"[o,o,o]",
			opt(KB_DC_OPT_ATTACHMENT, "script",
			    "Your submission file (UTF-8 text, at most 1 MB)",
			    1, 0),
			opt(KB_DC_OPT_STRING, "leaderboard",
			    "Leaderboard; default: the file's #!POPCORN leaderboard line",
			    0, 1),
			gpu_opt("GPU; default: the file's #!POPCORN gpu line, "
				"else the leaderboard's first")));
}

static json_t *sub_id_opt(void)
{
	json_t *o = opt(KB_DC_OPT_INTEGER, "submission_id",
			"ID of the submission", 1, 0);

	if (o)
		json_object_set_new(o, "min_value", json_integer(1));
	return o;
}

static json_t *leaderboard_cmd(void)
{
	json_t *submit = json_pack(
		"{s:i,s:s,s:s,s:[o,o,o,o]}", "type", KB_DC_OPT_GROUP, "name",
		"submit", "description", "Submit a kernel to a leaderboard",
		"options",
		submit_sub("test", "Check your kernel for correctness"),
		submit_sub("benchmark", "Time your kernel (not ranked)"),
		submit_sub("profile", "Profile your kernel"),
		submit_sub("ranked", "An official, ranked submission"));
	json_t *options = json_pack(
		"[o,o,o,o,o,o,o]", submit,
		sub("list", "Show the open leaderboards", NULL),
		sub("show", "Show the ranking of a leaderboard",
		    json_pack("[o,o]", board_opt(1),
			      gpu_opt("GPU; default: all"))),
		sub("show-personal", "Show your submissions to a leaderboard",
		    json_pack("[o,o]", board_opt(1),
			      gpu_opt("GPU; default: all"))),
		sub("task", "Get the task description and reference files",
		    json_pack("[o]", board_opt(1))),
		sub("template", "Get a starter file for a leaderboard",
		    json_pack("[o,o]", board_opt(1),
			      opt(KB_DC_OPT_STRING, "lang",
				  "Language of the template", 0, 1))),
		sub("get-submission", "Get one of your past submissions",
		    json_pack("[o]", sub_id_opt())));

	return json_pack("{s:s,s:i,s:s,s:o}", "name", "leaderboard", "type",
			 CHAT_INPUT, "description",
			 "KernelBot GPU kernel leaderboards", "options",
			 options);
}

static json_t *admin_cmd(void)
{
	json_t *options = json_pack(
		"[o,o,o,o,o,o,o,o,o,o,o,o]",
		sub("start", "Accept new submissions again", NULL),
		sub("stop", "Stop accepting new submissions (maintenance)",
		    NULL),
		sub("ban", "Ban a user from submitting",
		    json_pack("[o]", opt(KB_DC_OPT_USER, "user",
					 "The user to ban", 1, 0))),
		sub("unban", "Lift a user's ban",
		    json_pack("[o]",
			      opt(KB_DC_OPT_USER, "user", "The user", 1, 0))),
		sub("delete-submission", "Delete a submission",
		    json_pack("[o]", sub_id_opt())),
		sub("reload-problems",
		    "Compare the problem files with the loaded set", NULL),
		sub("ping",
		    "Check the gateway, the store and which workers are online",
		    NULL),
		sub("show-stats", "Submission, user and run counts",
		    json_pack("[o,o]", board_opt(0),
			      opt(KB_DC_OPT_BOOLEAN, "last_day_only",
				  "Only the last 24 hours", 0, 0))),
		sub("delete-leaderboard",
		    "Delete a leaderboard (asks for its name again)",
		    json_pack(
			    "[o,o,o]", board_opt(1),
			    opt(KB_DC_OPT_STRING, "confirm",
				"The leaderboard's name again, to confirm", 0,
				0),
			    opt(KB_DC_OPT_BOOLEAN, "force",
				"Also when it has submissions (drops its rankings)",
				0, 0))),
		sub("get-submission",
		    "Get anyone's submission: its code and report",
		    json_pack("[o]", sub_id_opt())),
		sub("export",
		    "Export a leaderboard's submissions and rankings as files",
		    json_pack("[o]", board_opt(1))),
		sub("verify-task",
		    "Check a leaderboard's task files and examples on disk",
		    json_pack("[o]", board_opt(1))));

	/* Visible to everyone by default; kb-gateway checks DISCORD_ADMIN_IDS
	 * itself, and a server can narrow who sees it under Integrations. */
	return json_pack("{s:s,s:i,s:s,s:o}", "name", "admin", "type",
			 CHAT_INPUT, "description", "KernelBot administration",
			 "options", options);
}

json_t *kb_dc_commands_json(void)
{
	return json_pack("[o,o]", leaderboard_cmd(), admin_cmd());
}

int kb_dc_commands_url(const char *api_base, const char *app_id,
		       const char *guild_id, char *out, size_t size)
{
	size_t n = strlen(api_base);
	int w;

	while (n && api_base[n - 1] == '/')
		n--;
	if (guild_id && *guild_id)
		w = snprintf(out, size,
			     "%.*s/applications/%s/guilds/%s/commands", (int)n,
			     api_base, app_id, guild_id);
	else
		w = snprintf(out, size, "%.*s/applications/%s/commands", (int)n,
			     api_base, app_id);
	return w < 0 || (size_t)w >= size ? -ENAMETOOLONG : 0;
}

int kb_dc_register(const char *api_base, const char *app_id,
		   const char *guild_id, const char *bot_token, char *errstr,
		   size_t errstr_size)
{
	char url[1024];
	struct kb_dc_http_resp resp;
	json_t *cmds = kb_dc_commands_json();
	char *body = cmds ? json_dumps(cmds, JSON_COMPACT) : NULL;
	int rc;

	json_decref(cmds);
	if (!body) {
		snprintf(errstr, errstr_size, "out of memory");
		return -ENOMEM;
	}
	if (!app_id || !*app_id || !bot_token || !*bot_token) {
		free(body);
		snprintf(errstr, errstr_size,
			 "DISCORD_APPLICATION_ID and "
			 "DISCORD_BOT_TOKEN are required");
		return -EINVAL;
	}
	if (kb_dc_commands_url(api_base, app_id, guild_id, url, sizeof(url)) <
	    0) {
		free(body);
		snprintf(errstr, errstr_size, "URL too long");
		return -ENAMETOOLONG;
	}
	rc = kb_dc_http_call_patient("PUT", url, bot_token, body, 30000, 5,
				     &resp);
	free(body);
	if (rc < 0 || resp.status != 200) {
		char *b =
			kb_truncate(resp.body ? resp.body : "", resp.len, 600);
		if (resp.status)
			snprintf(errstr, errstr_size, "PUT %s: HTTP %ld %s",
				 url, resp.status, b ? b : "");
		else
			snprintf(errstr, errstr_size, "PUT %s: %s", url,
				 resp.err);
		free(b);
		kb_dc_http_resp_free(&resp);
		return rc < 0 ? rc : -EIO;
	}
	json_t *j = json_loadb(resp.body, resp.len, 0, NULL);
	rc = json_is_array(j) ? (int)json_array_size(j) : 0;
	json_decref(j);
	kb_dc_http_resp_free(&resp);
	return rc;
}
