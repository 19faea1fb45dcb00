/* kb help, and the manual of kb itself (kb --help). */
#include <stdio.h>
#include <string.h>

#include "commands.h"

static const char help_head[] =
	"NAME\n"
	"    kb - command-line client for KernelBot, the GPU kernel competition\n"
	"    platform\n"
	"\n"
	"SYNOPSIS\n"
	"    kb [GLOBAL OPTIONS] COMMAND [OPTIONS] [ARGUMENTS]\n"
	"    kb help [COMMAND [SUBCOMMAND]]\n"
	"    kb --version\n"
	"\n"
	"DESCRIPTION\n"
	"    kb submits kernels to a KernelBot server and reads its leaderboards.\n"
	"    It speaks the HTTP API of upstream KernelBot and shares popcorn-cli's\n"
	"    configuration file, so an account registered with either tool works\n"
	"    with both. kb never asks questions (except 'submissions delete' on a\n"
	"    terminal without --yes), writes results to stdout and progress and\n"
	"    errors to stderr, and every command prints the server's JSON instead\n"
	"    of a table when given --json.\n"
	"\n"
	"COMMANDS\n";

static const char help_tail[] =
	"\n"
	"    Run 'kb COMMAND --help' (or 'kb help COMMAND') for a command's manual.\n"
	"\n"
	"GLOBAL OPTIONS\n"
	"    These may also follow the command name.\n"
	"\n"
	"    --api-url URL\n"
	"        The API base URL, e.g. https://kernelbot.example.org. Overrides\n"
	"        POPCORN_API_URL and the config file.\n"
	"    --config PATH\n"
	"        The configuration file to use instead of ~/.popcorn.yaml.\n"
	"    --json\n"
	"        Print the server's JSON on stdout instead of text (for submit:\n"
	"        the final result). Exit statuses are unchanged.\n"
	"    -q, --quiet\n"
	"        No progress lines on stderr. Errors are still reported.\n"
	"    -h, --help\n"
	"        Print this manual (or the command's) and exit 0.\n"
	"    -V, --version\n"
	"        Print the version and exit 0.\n"
	"\n"
	"ENVIRONMENT\n"
	"    POPCORN_API_URL\n"
	"        The API base URL, as for popcorn-cli. Without it (and without\n"
	"        --api-url), api_url from the config file is used, and then\n"
	"        " KB_DEFAULT_API_URL " (a local kb-gateway).\n"
	"    KB_CLI_ID\n"
	"        The CLI id to send instead of cli_id from the config file; for\n"
	"        scripts and CI, where no config file exists.\n"
	"    HOME\n"
	"        Where ~/.popcorn.yaml is.\n"
	"    KB_DISCORD_CLIENT_ID, KB_GITHUB_CLIENT_ID\n"
	"        See 'kb register --help'.\n"
	"\n"
	"FILES\n"
	"    ~/.popcorn.yaml\n"
	"        A YAML mapping, shared with popcorn-cli:\n"
	"            cli_id: \"<your CLI id>\"\n"
	"            api_url: \"https://...\"     (optional; kb only)\n"
	"        kb register writes cli_id there, keeping the other keys, through\n"
	"        a temporary file renamed into place, with mode 0600.\n"
	"\n"
	"EXIT STATUS\n"
	"    0    Success. For submit: the submission passed.\n"
	"    1    submit only: the submission was evaluated and did not pass\n"
	"         (wrong answer, compile error, crash, timeout, or a timing the\n"
	"         platform refused as physically impossible).\n"
	"    2    Usage or local error: bad arguments, an unreadable file, no\n"
	"         leaderboard or GPU given, no CLI id, a broken or unwritable\n"
	"         configuration file, stdout not writable.\n"
	"    3    API or network error: the server is unreachable or answered\n"
	"         with an error or something kb cannot read, or the platform\n"
	"         failed to evaluate the submission (not the submission's fault).\n"
	"    130  Interrupted (Ctrl-C). A submission keeps running on the server;\n"
	"         'kb submissions show ID' finds its result later.\n"
	"\n"
	"EXAMPLES\n"
	"    export POPCORN_API_URL=https://kernelbot.example.org\n"
	"    kb register github\n"
	"    kb leaderboards\n"
	"    kb submit --mode leaderboard kernel.cu\n"
	"    kb ranking vectorsum_cpu CPU\n"
	"    kb submissions list --leaderboard vectorsum_cpu\n"
	"    kb --json submit kernel.cu | jq .results\n";

void kb_print_main_help(void)
{
	fputs(help_head, stdout);
	kb_cli_list(stdout, kb_commands, kb_ncommands);
	fputs(help_tail, stdout);
}

static int run_help(struct kb_cli *c, int argc, char **argv)
{
	const struct kb_cmd *cmd;
	char *args[8];
	int n = 0;

	if (argc < 2) {
		kb_print_main_help();
		return KB_EXIT_OK;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		kb_cli_help(&kb_cmd_help);
		return KB_EXIT_OK;
	}
	cmd = kb_cli_find(kb_commands, kb_ncommands, argv[1]);
	if (!cmd || cmd == &kb_cmd_help) {
		kb_cli_err("help: no command '%s'", argv[1]);
		return KB_EXIT_USAGE;
	}
	/* "kb help A B" is "kb A B --help", which also reaches subcommands. */
	for (int i = 1; i < argc && n < 6; i++)
		args[n++] = argv[i];
	args[n++] = "--help";
	args[n] = NULL;
	return cmd->run(c, n, args);
}

const struct kb_cmd kb_cmd_help = {
	.name = "help",
	.summary = "show the manual of kb or of a command",
	.help = "NAME\n"
		"    kb help - show a manual\n"
		"\n"
		"SYNOPSIS\n"
		"    kb help [COMMAND [SUBCOMMAND]]\n"
		"\n"
		"DESCRIPTION\n"
		"    Without arguments, the manual of kb; otherwise the same as\n"
		"    'kb COMMAND [SUBCOMMAND] --help'.\n",
	.run = run_help,
};
