/* kb_cli: what every kb command shares: the invocation context, the
 * command table type, exit statuses and the helpers for options, output
 * and API calls.
 *
 * Adding a command: define its struct kb_cmd (name, summary, manual text,
 * run function) in its own cmd_*.c, declare it in commands.h, and add one
 * line to the table in commands.c. A command with subcommands ("kb
 * submissions list") runs kb_cli_dispatch() on a table of its own.
 *
 * Not thread-safe: kb is single-threaded.
 */
#ifndef KB_CLI_H
#define KB_CLI_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "api.h"
#include "config.h"

/* Exit statuses (documented in kb --help). */
enum {
	KB_EXIT_OK = 0,
	KB_EXIT_FAILED = 1, /* the submission was evaluated and did not pass */
	KB_EXIT_USAGE = 2,  /* bad arguments, no CLI id, a local I/O error */
	KB_EXIT_API = 3,    /* network or API error; the platform's fault */
	KB_EXIT_INTERRUPTED = 130,
};

#define KB_DEFAULT_API_URL "http://127.0.0.1:8000"

struct kb_cli {
	/* Global options, set by main() before a command runs. */
	int json;                    /* --json: print the server's JSON */
	int quiet;                   /* --quiet: no progress on stderr */
	const char *api_url_opt;     /* --api-url, or NULL */
	const char *config_path_opt; /* --config, or NULL */

	/* Resolved lazily by kb_cli_api(). */
	char config_path[4096];
	struct kb_cfg cfg;
	int cfg_loaded;
	char api_url[2048];
	const char *api_url_from; /* "--api-url", "POPCORN_API_URL", ... */
	struct kb_api *api;
};

struct kb_cmd {
	const char *name;
	const char *summary; /* one line for the command list */
	const char *help;    /* the full manual text (NAME, SYNOPSIS, ...) */
	/* argv[0] is the command's name; returns an exit status. */
	int (*run)(struct kb_cli *c, int argc, char **argv);
	int hidden;       /* not listed (aliases) */
	const char *full; /* "submissions list" for a subcommand; NULL
				 means the same as name */
};

/* cmd->full, else cmd->name. */
const char *kb_cli_full(const struct kb_cmd *cmd);

/* A command table is an array of pointers, so that each command's
 * definition stays in its own file. Finds name in table[0..n); NULL if
 * absent. */
const struct kb_cmd *kb_cli_find(const struct kb_cmd *const *table, size_t n,
				 const char *name);

/* Prints the table's visible commands, one per line with its summary. */
void kb_cli_list(FILE *f, const struct kb_cmd *const *table, size_t n);

/* Runs the subcommand argv[1] of self (a command with subcommands, such
 * as "submissions") from table[0..n). "-h"/"--help" prints self's help;
 * a missing or unknown name is a usage error listing the table. Returns
 * an exit status. */
int kb_cli_dispatch(struct kb_cli *c, const struct kb_cmd *self,
		    const struct kb_cmd *const *table, size_t n, int argc,
		    char **argv);

/* Prints a command's manual text to stdout. */
void kb_cli_help(const struct kb_cmd *cmd);

/* Usage error: "kb: <cmd>: <message>" plus a hint to --help on stderr.
 * Returns KB_EXIT_USAGE. */
int kb_cli_usage(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* "kb: <message>" on stderr. */
void kb_cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The API handle, creating it on first use: the base URL from --api-url,
 * POPCORN_API_URL, api_url in the config file, or KB_DEFAULT_API_URL; the
 * CLI id from KB_CLI_ID or cli_id in the config file when need_id (a
 * missing id is then an error telling the user to run kb register).
 * Returns NULL after printing the reason; *exit_code is the status to
 * return. */
struct kb_api *kb_cli_api(struct kb_cli *c, int need_id, int *exit_code);

/* Config file path (--config or ~/.popcorn.yaml); "" with a message on
 * stderr if it cannot be found. */
const char *kb_cli_config_path(struct kb_cli *c);

/* Runs a call that answers JSON. Returns the parsed body of a 2xx
 * response, or NULL after printing the error (network, HTTP status with
 * the server's detail, or a body that is not JSON) with *exit_code set. */
json_t *kb_cli_get_json(struct kb_cli *c, const char *method, const char *path,
			const json_t *body, int *exit_code);

/* Prints j indented to stdout (for --json). */
void kb_cli_print_json(const json_t *j);

/* The value of o[key] as text for a table cell ("-" when absent/null). */
const char *kb_cli_cell(const json_t *o, const char *key, char *buf, size_t n);

/* Common option letters, for commands' getopt_long tables. */
#define KB_OPT_HELP 'h'
#define KB_OPT_JSON 0x101
#define KB_OPT_QUIET 'q'
#define KB_OPT_API_URL 0x102
#define KB_OPT_CONFIG 0x103
#define KB_COMMON_LONGOPTS                                                     \
	{"help", 0, NULL, KB_OPT_HELP}, {"json", 0, NULL, KB_OPT_JSON},        \
		{"quiet", 0, NULL, KB_OPT_QUIET},                              \
		{"api-url", 1, NULL, KB_OPT_API_URL},                          \
	{                                                                      \
		"config", 1, NULL, KB_OPT_CONFIG                               \
	}

/* Handles a common option letter: 1 if it was one (help: *done set to
 * KB_EXIT_OK after printing the help), 0 otherwise. A '?' from getopt is
 * a usage error (*done = KB_EXIT_USAGE). */
int kb_cli_common_opt(struct kb_cli *c, const struct kb_cmd *cmd, int opt,
		      int *done);

/* getopt_long reset for a command's own parse; sets argv[0] to "kb NAME"
 * so getopt's own messages name the command. */
void kb_cli_getopt_reset(char **argv, const char *full_name);

/* Parses a positive decimal id; 0 if s is not one. */
unsigned long long kb_cli_parse_id(const char *s);

#endif
