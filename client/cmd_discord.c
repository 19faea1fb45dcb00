/* kb discord register|commands: puts KernelBot's slash commands on Discord.
 *
 * The command set and the registration call live with the bot, in the
 * gateway (gateway/discord/commands.c), and ship as the kb-discord program;
 * kb runs it so that one tool does what a user needs. kb-discord is looked
 * for next to kb (an installed or bundled tree), in the build tree, then in
 * PATH.
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"

static const struct kb_cmd kb_cmd_discord_register;
static const struct kb_cmd kb_cmd_discord_commands;

/* Replaces this process with kb-discord ACTION; returns only on failure. */
static int exec_kb_discord(const char *action)
{
	char self[PATH_MAX], cand[PATH_MAX + 32];
	char *const argv[] = {"kb-discord", (char *)action, NULL};
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n > 0) {
		self[n] = '\0';
		char *dir = dirname(self);
		const char *rel[] = {"kb-discord", "../gateway/kb-discord"};
		for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
			snprintf(cand, sizeof(cand), "%s/%s", dir, rel[i]);
			if (access(cand, X_OK) == 0)
				execv(cand, argv);
		}
	}
	execvp("kb-discord", argv);
	kb_cli_err("cannot run kb-discord (%s); it is built with kb-gateway",
		   strerror(errno));
	return 3;
}

static int run_action(struct kb_cli *c, const struct kb_cmd *cmd,
		      const char *action, int argc, char **argv)
{
	if (argc > 1 &&
	    (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		kb_cli_help(cmd);
		return 0;
	}
	if (argc != 1)
		return kb_cli_usage(kb_cli_full(cmd), "takes no arguments");
	(void)c;
	return exec_kb_discord(action);
}

static int run_register(struct kb_cli *c, int argc, char **argv)
{
	return run_action(c, &kb_cmd_discord_register, "register", argc, argv);
}

static int run_commands(struct kb_cli *c, int argc, char **argv)
{
	return run_action(c, &kb_cmd_discord_commands, "commands", argc, argv);
}

static const struct kb_cmd kb_cmd_discord_register = {
	"register",
	"register the slash commands with Discord",
	"NAME\n"
	"    kb discord register - register KernelBot's slash commands\n\n"
	"SYNOPSIS\n"
	"    kb discord register\n\n"
	"DESCRIPTION\n"
	"    Replaces the application's command set on Discord with one bulk\n"
	"    PUT, so running it again is harmless. With DISCORD_GUILD_ID the\n"
	"    commands go to that server only and are usable at once; without it\n"
	"    they are global.\n\n"
	"ENVIRONMENT\n"
	"    DISCORD_APPLICATION_ID   the application id (required)\n"
	"    DISCORD_BOT_TOKEN        the bot token (required)\n"
	"    DISCORD_GUILD_ID         register in this server only\n"
	"    DISCORD_API_BASE         REST base (default https://discord.com/api/v10)\n\n"
	"EXIT STATUS\n"
	"    0 registered; 1 configuration missing or Discord refused (its\n"
	"    answer is printed); 2 usage; 3 kb-discord not found.\n\n"
	"SEE ALSO\n"
	"    docs/discord.md\n",
	run_register,
	0,
	"discord register"};

static const struct kb_cmd kb_cmd_discord_commands = {
	"commands",
	"print the slash command set as JSON",
	"NAME\n"
	"    kb discord commands - print the slash command set\n\n"
	"SYNOPSIS\n"
	"    kb discord commands\n\n"
	"DESCRIPTION\n"
	"    Prints, as JSON, exactly what kb discord register would send.\n",
	run_commands,
	0,
	"discord commands"};

static const struct kb_cmd *const discord_table[] = {
	&kb_cmd_discord_register,
	&kb_cmd_discord_commands,
};

static int run_discord(struct kb_cli *c, int argc, char **argv)
{
	return kb_cli_dispatch(c, &kb_cmd_discord, discord_table,
			       sizeof(discord_table) / sizeof(discord_table[0]),
			       argc, argv);
}

const struct kb_cmd kb_cmd_discord = {
	"discord",
	"set up the Discord bot (register its commands)",
	"NAME\n"
	"    kb discord - set up the Discord bot\n\n"
	"SYNOPSIS\n"
	"    kb discord register\n"
	"    kb discord commands\n\n"
	"DESCRIPTION\n"
	"    register  puts the slash command set on Discord (guild or global)\n"
	"    commands  prints the command set as JSON\n\n"
	"    See docs/discord.md for creating the application and setting the\n"
	"    interactions URL.\n",
	run_discord,
	0,
	NULL};
