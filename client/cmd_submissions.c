/* kb submissions list|show|delete: the user's own submissions. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "result.h"

static const struct kb_cmd list_cmd, show_cmd, delete_cmd;

static int parse_common(struct kb_cli *c, const struct kb_cmd *cmd, int argc,
			char **argv, const struct option *longopts,
			const char *shortopts, int (*own)(int opt, void *arg),
			void *arg)
{
	char name[64];
	int opt;

	snprintf(name, sizeof(name), "kb %s", kb_cli_full(cmd));
	kb_cli_getopt_reset(argv, name);
	while ((opt = getopt_long(argc, argv, shortopts, longopts, NULL)) !=
	       -1) {
		int done = -1;
		if (kb_cli_common_opt(c, cmd, opt, &done)) {
			if (done >= 0)
				return done;
			continue;
		}
		if (own && own(opt, arg) != 0)
			return KB_EXIT_USAGE;
	}
	argv[0] = (char *)cmd->name;
	return -1;
}

/* The path /user/submissions/{id} for argument s, or a usage error. */
static int id_path(const struct kb_cmd *cmd, const char *s, struct kb_buf *b,
		   unsigned long long *id)
{
	*id = kb_cli_parse_id(s);
	if (!*id)
		return kb_cli_usage(kb_cli_full(cmd),
				    "'%s' is not a submission id", s);
	kb_buf_printf(b, "/user/submissions/%llu", *id);
	return b->data ? 0 : KB_EXIT_API;
}

/* ---- list ---- */

struct list_opts {
	const char *lb, *limit, *offset;
};

static int list_opt(int opt, void *arg)
{
	struct list_opts *o = arg;

	if (opt == 'l')
		o->lb = optarg;
	else if (opt == 'n')
		o->limit = optarg;
	else if (opt == 'o')
		o->offset = optarg;
	return 0;
}

/* What a submission came to, as a word: the job object's status
 * (pending, running, succeeded, failed, timed_out, hacked), which tells a
 * failed run from a passed one; else the stored status, which says only
 * "done"; else upstream's done flag. */
static const char *row_status(const json_t *e)
{
	const char *st = json_string_value(
		json_object_get(json_object_get(e, "job"), "status"));

	if (!st)
		st = json_string_value(json_object_get(e, "status"));
	if (!st)
		st = kb_result_done(e) ? "done" : "pending";
	return st;
}

static int run_list(struct kb_cli *c, int argc, char **argv)
{
	static const struct option longopts[] = {
		KB_COMMON_LONGOPTS,      {"leaderboard", 1, NULL, 'l'},
		{"limit", 1, NULL, 'n'}, {"offset", 1, NULL, 'o'},
		{NULL, 0, NULL, 0},
	};
	struct list_opts o = {0};
	struct kb_buf path = {0};
	const json_t *e;
	json_t *list;
	size_t i;
	int ec = parse_common(c, &list_cmd, argc, argv, longopts,
			      "hql:n:", list_opt, &o);

	if (ec >= 0)
		return ec;
	if (optind != argc)
		return kb_cli_usage("submissions list", "takes no arguments");
	if (!kb_cli_api(c, 1, &ec))
		return ec;
	kb_buf_append(&path, "/user/submissions", 17);
	if (o.lb)
		kb_api_query_add(&path, "leaderboard", o.lb);
	if (o.limit)
		kb_api_query_add(&path, "limit", o.limit);
	if (o.offset)
		kb_api_query_add(&path, "offset", o.offset);
	list = path.data ? kb_cli_get_json(c, "GET", path.data, NULL, &ec)
			 : NULL;
	kb_buf_free(&path);
	if (!list)
		return ec;
	if (c->json) {
		kb_cli_print_json(list);
	} else if (!json_is_array(list)) {
		json_decref(list);
		kb_cli_err("the submission list is not a list");
		return KB_EXIT_API;
	} else if (json_array_size(list) == 0) {
		printf("No submissions.\n");
	} else {
		printf("%-8s %-22s %-22s %-8s %-20s %-9s %s\n", "ID",
		       "LEADERBOARD", "FILE", "GPU", "SUBMITTED", "STATUS",
		       "SCORE");
		json_array_foreach(list, i, e)
		{
			char b1[32], b2[64], b3[64], b4[32], b5[40], status[24],
				score[32] = "-";
			const char *st = row_status(e);
			const char *gpu = json_string_value(
				json_object_get(e, "gpu_type"));
			double sc;

			snprintf(status, sizeof(status), "%s", st);
			if (kb_result_score(e, &sc))
				kb_fmt_seconds(sc, score, sizeof(score));
			printf("%-8s %-22.22s %-22.22s %-8s %-20.19s %-9s %s\n",
			       kb_cli_cell(e, "id", b1, sizeof(b1)),
			       kb_cli_cell(e, "leaderboard_name", b2,
					   sizeof(b2)),
			       kb_cli_cell(e, "file_name", b3, sizeof(b3)),
			       gpu ? gpu
				   : kb_cli_cell(e, "gpu", b4, sizeof(b4)),
			       kb_cli_cell(e, "submission_time", b5,
					   sizeof(b5)),
			       status, score);
		}
	}
	json_decref(list);
	return KB_EXIT_OK;
}

static const struct kb_cmd list_cmd = {
	.name = "list",
	.full = "submissions list",
	.summary = "list your submissions",
	.run = run_list,
	.help = "NAME\n"
		"    kb submissions list - list your submissions\n"
		"\n"
		"SYNOPSIS\n"
		"    kb submissions list [--leaderboard LB] [--limit N] [--offset N] [--json]\n"
		"\n"
		"DESCRIPTION\n"
		"    One line per submission, newest first (GET /user/submissions): id,\n"
		"    leaderboard, file, GPU, time, status and score.\n"
		"\n"
		"OPTIONS\n"
		"    -l, --leaderboard LB   Only this leaderboard's submissions.\n"
		"    -n, --limit N          At most N (the server allows 1 to 100; 50 by\n"
		"                           default).\n"
		"    --offset N             Skip the newest N.\n"
		"    --json                 Print the server's list as JSON.\n",
};

/* ---- show ---- */

static void print_field(const char *label, const json_t *o, const char *key)
{
	char buf[64];
	const json_t *v = json_object_get(o, key);

	if (v && !json_is_null(v))
		printf("%-13s %s\n", label,
		       kb_cli_cell(o, key, buf, sizeof(buf)));
}

static int no_code_opt(int opt, void *arg)
{
	if (opt == 'C')
		*(int *)arg = 1;
	return 0;
}

static int run_show(struct kb_cli *c, int argc, char **argv)
{
	static const struct option longopts[] = {
		KB_COMMON_LONGOPTS,
		{"no-code", 0, NULL, 'C'},
		{NULL, 0, NULL, 0},
	};
	struct kb_buf path = {0};
	unsigned long long id;
	int no_code = 0;
	json_t *j;
	int ec = parse_common(c, &show_cmd, argc, argv, longopts, "hq",
			      no_code_opt, &no_code);

	if (ec >= 0)
		return ec;
	if (argc - optind != 1)
		return kb_cli_usage("submissions show",
				    "needs one submission id");
	ec = id_path(&show_cmd, argv[optind], &path, &id);
	if (ec || !kb_cli_api(c, 1, &ec)) {
		kb_buf_free(&path);
		return ec;
	}
	j = kb_cli_get_json(c, "GET", path.data, NULL, &ec);
	kb_buf_free(&path);
	if (!j)
		return ec;
	if (c->json) {
		kb_cli_print_json(j);
		json_decref(j);
		return KB_EXIT_OK;
	}
	char why[128], score[32];
	double sc;
	enum kb_outcome o = kb_result_outcome(j, why, sizeof(why));
	const char *code = json_string_value(json_object_get(j, "code"));

	printf("Submission %llu\n", id);
	print_field("Leaderboard:", j, "leaderboard_name");
	print_field("GPU:", j, "gpu");
	print_field("Mode:", j, "mode");
	print_field("File:", j, "file_name");
	print_field("User:", j, "user_name");
	print_field("Submitted:", j, "submission_time");
	printf("%-13s %s\n", "Status:", row_status(j));
	print_field("Stage:", j, "stage");
	if (kb_result_done(j))
		printf("%-13s %s\n", "Result:",
		       o == KB_OUTCOME_PASSED   ? "passed"
		       : o == KB_OUTCOME_FAILED ? "failed"
		       : o == KB_OUTCOME_INFRA
			       ? "not evaluated (platform error)"
			       : "unknown");
	if (kb_result_score(j, &sc)) {
		kb_fmt_seconds(sc, score, sizeof(score));
		printf("%-13s %s\n", "Score:", score);
	}
	char *report = kb_result_render(j);
	if (report && *report)
		printf("\n%s", report);
	free(report);
	if (code && !no_code)
		printf("\nCode:\n%s%s", code,
		       *code && code[strlen(code) - 1] == '\n' ? "" : "\n");
	json_decref(j);
	return KB_EXIT_OK;
}

static const struct kb_cmd show_cmd = {
	.name = "show",
	.full = "submissions show",
	.summary = "show one submission, its result and code",
	.run = run_show,
	.help = "NAME\n"
		"    kb submissions show - show one of your submissions\n"
		"\n"
		"SYNOPSIS\n"
		"    kb submissions show [--no-code] [--json] ID\n"
		"\n"
		"DESCRIPTION\n"
		"    Prints the submission's details, its runs and report once done, and\n"
		"    its code (GET /user/submissions/{id}). Only your own submissions\n"
		"    can be shown.\n"
		"\n"
		"OPTIONS\n"
		"    --no-code   Leave the code out.\n"
		"    --json      Print the server's record as JSON.\n",
};

/* ---- delete ---- */

static int yes_opt(int opt, void *arg)
{
	if (opt == 'y')
		*(int *)arg = 1;
	return 0;
}

static int confirm(unsigned long long id)
{
	char line[32];

	fprintf(stderr, "Delete submission %llu? This cannot be undone. [y/N] ",
		id);
	fflush(stderr);
	if (!fgets(line, sizeof(line), stdin))
		return 0;
	return line[0] == 'y' || line[0] == 'Y';
}

static int run_delete(struct kb_cli *c, int argc, char **argv)
{
	static const struct option longopts[] = {
		KB_COMMON_LONGOPTS,
		{"yes", 0, NULL, 'y'},
		{"force", 0, NULL, 'y'},
		{NULL, 0, NULL, 0},
	};
	struct kb_buf path = {0};
	unsigned long long id;
	int yes = 0;
	json_t *j;
	int ec = parse_common(c, &delete_cmd, argc, argv, longopts, "hqyf",
			      yes_opt, &yes);

	if (ec >= 0)
		return ec;
	if (argc - optind != 1)
		return kb_cli_usage("submissions delete",
				    "needs one submission id");
	ec = id_path(&delete_cmd, argv[optind], &path, &id);
	if (ec) {
		kb_buf_free(&path);
		return ec;
	}
	if (!yes) {
		if (!isatty(STDIN_FILENO)) {
			kb_buf_free(&path);
			return kb_cli_usage(
				"submissions delete",
				"not deleting without --yes when stdin "
				"is not a terminal");
		}
		if (!confirm(id)) {
			kb_buf_free(&path);
			fprintf(stderr, "Not deleted.\n");
			return KB_EXIT_OK;
		}
	}
	if (!kb_cli_api(c, 1, &ec)) {
		kb_buf_free(&path);
		return ec;
	}
	j = kb_cli_get_json(c, "DELETE", path.data, NULL, &ec);
	kb_buf_free(&path);
	if (!j)
		return ec;
	if (c->json)
		kb_cli_print_json(j);
	else
		printf("Deleted submission %llu.\n", id);
	json_decref(j);
	return KB_EXIT_OK;
}

static const struct kb_cmd delete_cmd = {
	.name = "delete",
	.full = "submissions delete",
	.summary = "delete one of your submissions",
	.run = run_delete,
	.help = "NAME\n"
		"    kb submissions delete - delete one of your submissions\n"
		"\n"
		"SYNOPSIS\n"
		"    kb submissions delete [--yes] [--json] ID\n"
		"\n"
		"DESCRIPTION\n"
		"    Deletes the submission (DELETE /user/submissions/{id}), its results\n"
		"    and its place in any ranking. Asks first on a terminal; elsewhere\n"
		"    (scripts) --yes is required, so nothing is deleted by accident.\n"
		"\n"
		"OPTIONS\n"
		"    -y, --yes, -f, --force   Do not ask.\n"
		"    --json                   Print the server's answer as JSON.\n",
};

/* ---- kb submissions ---- */

static const struct kb_cmd *const sub_table[] = {&list_cmd, &show_cmd,
						 &delete_cmd};

static int run_submissions(struct kb_cli *c, int argc, char **argv)
{
	return kb_cli_dispatch(c, &kb_cmd_submissions, sub_table,
			       sizeof(sub_table) / sizeof(sub_table[0]), argc,
			       argv);
}

const struct kb_cmd kb_cmd_submissions = {
	.name = "submissions",
	.summary = "list, show or delete your submissions",
	.run = run_submissions,
	.help = "NAME\n"
		"    kb submissions - your submissions\n"
		"\n"
		"SYNOPSIS\n"
		"    kb submissions list [--leaderboard LB] [--limit N] [--offset N]\n"
		"    kb submissions show [--no-code] ID\n"
		"    kb submissions delete [--yes] ID\n"
		"    (each also takes --json)\n"
		"\n"
		"DESCRIPTION\n"
		"    list    One line per submission, newest first.\n"
		"    show    One submission: details, result, report and code.\n"
		"    delete  Delete one submission; asks first unless --yes (required\n"
		"            when stdin is not a terminal).\n"
		"\n"
		"    These need your CLI id (kb register). You can see and delete only\n"
		"    your own submissions. 'kb submissions COMMAND --help' tells more.\n"
		"\n"
		"EXIT STATUS\n"
		"    0 success; 2 usage error; 3 API or network error (an unknown id is\n"
		"    an HTTP 404, someone else's an HTTP 403).\n",
};
