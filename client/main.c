/* kb: the command-line client of KernelBot in C.
 *
 * Theory of operation. kb is a thin, scriptable front end to the HTTP API
 * that kb-gateway serves and upstream KernelBot defines (see
 * ../shared/DESIGN.md, "HTTP API"). Each invocation runs one command from
 * the table in commands.c and exits with a status that says whose problem
 * an error was (see EXIT STATUS in kb --help): 0 done, 1 the submission
 * did not pass, 2 the invocation was wrong, 3 the API or network failed.
 *
 * Identity and location come from the same places popcorn-cli uses: the
 * API base from POPCORN_API_URL (or --api-url, or api_url in the config),
 * the CLI id from cli_id in ~/.popcorn.yaml (or KB_CLI_ID), sent as
 * X-Popcorn-Cli-Id. Nothing is read or checked before a command needs it,
 * so "kb --help" works anywhere and "kb leaderboards" needs no account.
 *
 * kb submit is the one long-running command: it posts the file to the
 * streaming endpoint and feeds the server-sent events through the pure
 * parser in sse.c while libcurl receives them, showing each stage on
 * stderr, then prints the final report on stdout. An older server without
 * that endpoint gets the asynchronous submit and a polling loop instead.
 *
 * Signals: SIGINT and SIGTERM only set kb_api_interrupted; transfers and
 * waits check it about every 100 ms and unwind, so kb exits 130 through
 * the normal path (the submission itself keeps running on the server).
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"

static void on_signal(int sig)
{
	(void)sig;
	kb_api_interrupted = 1;
}

static void install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: a sleeping poll loop wakes at once. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		KB_COMMON_LONGOPTS,
		{"version", 0, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	struct kb_cli c;
	const struct kb_cmd *cmd;
	char err[256];
	int opt, rc;

	memset(&c, 0, sizeof(c));
	argv[0] = "kb";
	/* '+': stop at the command name; its options are its own. */
	while ((opt = getopt_long(argc, argv, "+hqV", longopts, NULL)) != -1) {
		int done = -1;
		if (opt == 'V') {
			printf("kb %s\n", KB_CLIENT_VERSION);
			return KB_EXIT_OK;
		}
		if (opt == KB_OPT_HELP) {
			kb_print_main_help();
			return KB_EXIT_OK;
		}
		if (kb_cli_common_opt(&c, &kb_cmd_help, opt, &done)) {
			if (done >= 0)
				return done;
			continue;
		}
		return KB_EXIT_USAGE;
	}
	if (optind >= argc) {
		fprintf(stderr, "kb: a command is needed; one of:\n");
		kb_cli_list(stderr, kb_commands, kb_ncommands);
		fprintf(stderr, "Run 'kb --help' for the manual.\n");
		return KB_EXIT_USAGE;
	}
	cmd = kb_cli_find(kb_commands, kb_ncommands, argv[optind]);
	if (!cmd) {
		fprintf(stderr, "kb: unknown command '%s'; one of:\n",
			argv[optind]);
		kb_cli_list(stderr, kb_commands, kb_ncommands);
		return KB_EXIT_USAGE;
	}
	install_signals();
	if (kb_api_global_init(err, sizeof(err)) < 0) {
		kb_cli_err("%s", err);
		return KB_EXIT_API;
	}
	rc = cmd->run(&c, argc - optind, argv + optind);
	fflush(stdout);
	if (ferror(stdout) && rc == KB_EXIT_OK) {
		kb_cli_err("cannot write to stdout");
		rc = KB_EXIT_USAGE;
	}
	kb_api_destroy(c.api);
	kb_cfg_clear(&c.cfg);
	kb_api_global_cleanup();
	return rc;
}
