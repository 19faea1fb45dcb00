/* kb-discord: registers KernelBot's slash commands with Discord.
 *
 * Theory of operation
 *
 * Discord learns an application's commands from one bulk PUT of the whole
 * set (commands.c), which replaces what was registered before, so
 * running this again is harmless. With DISCORD_GUILD_ID the commands go to
 * that server only and are usable at once (good for a test server); without
 * it they are global. The program reads its configuration from the same
 * environment variables as kb-gateway, prints what Discord now has, and
 * exits 0, or 1 with Discord's answer when the PUT failed.
 *
 *   kb-discord register        PUT the command set
 *   kb-discord commands        print the command set (JSON) and exit
 */
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "kb_config.h"
#include "kb_log.h"

static char *app_id, *bot_token, *api_base, *guild_id;

static const struct kb_cfg_entry config[] = {
	{"DISCORD_APPLICATION_ID", KB_CFG_STRING, NULL, 0, 0, 0, &app_id,
	 "application id (snowflake)"},
	{"DISCORD_BOT_TOKEN", KB_CFG_STRING, NULL, 0, 0, 1, &bot_token,
	 "bot token of the application"},
	{"DISCORD_API_BASE", KB_CFG_STRING, "https://discord.com/api/v10", 0, 0,
	 0, &api_base, "Discord REST API base URL"},
	{"DISCORD_GUILD_ID", KB_CFG_STRING, "", 0, 0, 0, &guild_id,
	 "register in this server only; empty: global commands"},
};

static int usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s register   register the slash commands with Discord\n"
		"       %s commands   print the command set as JSON\n"
		"environment:\n",
		argv0, argv0);
	for (size_t i = 0; i < KB_ARRAY_LEN(config); i++)
		fprintf(stderr, "  %-24s %s\n", config[i].env, config[i].help);
	return 2;
}

int main(int argc, char **argv)
{
	char err[1024];
	int n;

	if (argc != 2)
		return usage(argv[0]);
	if (strcmp(argv[1], "commands") == 0) {
		json_t *cmds = kb_dc_commands_json();
		if (!cmds || json_dumpf(cmds, stdout, JSON_INDENT(2)) < 0)
			return 1;
		putchar('\n');
		json_decref(cmds);
		return 0;
	}
	if (strcmp(argv[1], "register") != 0)
		return usage(argv[0]);
	kb_log_init("discord", KB_LOG_INFO, 0);
	if (kb_config_load(config, KB_ARRAY_LEN(config), err, sizeof(err)) <
	    0) {
		fprintf(stderr, "kb-discord: %s\n", err);
		return 2;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	n = kb_dc_register(api_base, app_id, guild_id, bot_token, err,
			   sizeof(err));
	if (n < 0)
		fprintf(stderr, "kb-discord: registration failed: %s\n", err);
	else
		printf("registered %d commands %s%s\n", n,
		       guild_id[0] ? "in guild " : "globally", guild_id);
	kb_config_free(config, KB_ARRAY_LEN(config));
	curl_global_cleanup();
	return n < 0 ? 1 : 0;
}
