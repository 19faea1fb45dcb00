/* kb leaderboards, kb ranking: the public, read-only views. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "result.h"

/* Parses a --limit/--offset value; -1 if it is not a number >= min. */
static long count_arg(const char *s, long min)
{
	char *end;
	long v = strtol(s, &end, 10);

	return (*s && !*end && v >= min) ? v : -1;
}

/* The first line of s, at most max bytes (cut at a UTF-8 boundary). */
static void first_line(const char *s, char *out, size_t max)
{
	size_t n = 0;

	if (!s)
		s = "";
	while (s[n] && s[n] != '\n' && s[n] != '\r' && n + 1 < max)
		n++;
	if (s[n] && s[n] != '\n' && s[n] != '\r')
		while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
			n--;
	memcpy(out, s, n);
	out[n] = '\0';
}

/* ---- kb leaderboards ---- */

static int run_leaderboards(struct kb_cli *c, int argc, char **argv)
{
	static const struct option longopts[] = {KB_COMMON_LONGOPTS,
						 {NULL, 0, NULL, 0}};
	const json_t *lb;
	size_t i;
	json_t *list;
	int opt, ec;

	kb_cli_getopt_reset(argv, "kb leaderboards");
	while ((opt = getopt_long(argc, argv, "hq", longopts, NULL)) != -1) {
		int done = -1;
		if (kb_cli_common_opt(c, &kb_cmd_leaderboards, opt, &done) &&
		    done >= 0)
			return done;
	}
	if (optind != argc)
		return kb_cli_usage("leaderboards", "takes no arguments");
	if (!kb_cli_api(c, 0, &ec))
		return ec;
	list = kb_cli_get_json(c, "GET", "/leaderboards", NULL, &ec);
	if (!list)
		return ec;
	if (c->json) {
		kb_cli_print_json(list);
	} else if (!json_is_array(list)) {
		json_decref(list);
		kb_cli_err("GET /leaderboards: expected a list");
		return KB_EXIT_API;
	} else if (json_array_size(list) == 0) {
		printf("No leaderboards.\n");
	} else {
		printf("%-28s %-20s %-20s %s\n", "NAME", "GPUS", "DEADLINE",
		       "DESCRIPTION");
		json_array_foreach(list, i, lb)
		{
			char gpus[256] = "", desc[64], cell[32], cell2[32];
			const json_t *g;
			size_t k;
			const json_t *task = json_object_get(lb, "task");
			const char *d = json_string_value(
				json_object_get(lb, "description"));

			json_array_foreach(json_object_get(lb, "gpu_types"), k,
					   g)
			{
				size_t used = strlen(gpus);
				snprintf(gpus + used, sizeof(gpus) - used,
					 "%s%s", used ? "," : "",
					 json_string_value(g)
						 ? json_string_value(g)
						 : "?");
			}
			if (!d)
				d = json_string_value(
					json_object_get(task, "description"));
			first_line(d, desc, sizeof(desc));
			printf("%-28s %-20s %-20.20s %s\n",
			       kb_cli_cell(lb, "name", cell, sizeof(cell)),
			       *gpus ? gpus : "-",
			       kb_cli_cell(lb, "deadline", cell2,
					   sizeof(cell2)),
			       desc);
		}
	}
	json_decref(list);
	return KB_EXIT_OK;
}

const struct kb_cmd kb_cmd_leaderboards = {
	.name = "leaderboards",
	.summary = "list the leaderboards, their GPUs and deadlines",
	.run = run_leaderboards,
	.help = "NAME\n"
		"    kb leaderboards - list the leaderboards\n"
		"\n"
		"SYNOPSIS\n"
		"    kb leaderboards [--json]\n"
		"\n"
		"DESCRIPTION\n"
		"    Prints one line per leaderboard (GET /leaderboards): its name, the\n"
		"    GPU types it accepts, its deadline and the first line of its\n"
		"    description. Needs no account.\n"
		"\n"
		"OPTIONS\n"
		"    --json    Print the server's list as JSON (with each task).\n"
		"\n"
		"EXIT STATUS\n"
		"    0 success; 2 usage error; 3 API or network error.\n",
};

/* ---- kb ranking LB GPU ---- */

static int run_ranking(struct kb_cli *c, int argc, char **argv)
{
	static const struct option longopts[] = {
		KB_COMMON_LONGOPTS,
		{"limit", 1, NULL, 'n'},
		{"offset", 1, NULL, 'o'},
		{NULL, 0, NULL, 0},
	};
	const char *limit = NULL, *offset = NULL;
	struct kb_buf path = {0};
	const json_t *e;
	json_t *list;
	size_t i;
	int opt, ec;

	kb_cli_getopt_reset(argv, "kb ranking");
	while ((opt = getopt_long(argc, argv, "hqn:", longopts, NULL)) != -1) {
		int done = -1;
		if (kb_cli_common_opt(c, &kb_cmd_ranking, opt, &done)) {
			if (done >= 0)
				return done;
			continue;
		}
		if (opt == 'n')
			limit = optarg;
		else if (opt == 'o')
			offset = optarg;
	}
	if (argc - optind != 2)
		return kb_cli_usage("ranking", "needs a leaderboard and a GPU "
					       "(kb ranking LB GPU)");
	if ((limit && count_arg(limit, 1) < 0) ||
	    (offset && count_arg(offset, 0) < 0))
		return kb_cli_usage("ranking",
				    "--limit and --offset take a "
				    "whole number (limit at least 1)");
	if (!kb_cli_api(c, 0, &ec))
		return ec;
	kb_api_path_add(&path, "submissions");
	kb_api_path_add(&path, argv[optind]);
	kb_api_path_add(&path, argv[optind + 1]);
	if (limit)
		kb_api_query_add(&path, "limit", limit);
	if (offset)
		kb_api_query_add(&path, "offset", offset);
	list = path.data ? kb_cli_get_json(c, "GET", path.data, NULL, &ec)
			 : NULL;
	kb_buf_free(&path);
	if (!list)
		return ec;
	if (c->json) {
		kb_cli_print_json(list);
	} else if (!json_is_array(list)) {
		json_decref(list);
		kb_cli_err("the ranking is not a list");
		return KB_EXIT_API;
	} else if (json_array_size(list) == 0) {
		printf("No ranked submissions yet for %s on %s.\n",
		       argv[optind], argv[optind + 1]);
	} else {
		long base = offset ? count_arg(offset, 0) : 0;
		printf("%-5s %-24s %-12s %-8s %-24s %s\n", "RANK", "USER",
		       "SCORE", "ID", "FILE", "SUBMITTED");
		json_array_foreach(list, i, e)
		{
			char rank[24], score[32] = "-", c1[64], c2[64], c3[64],
				       c4[64];
			const json_t *sc =
				json_object_get(e, "submission_score");
			if (!json_is_number(sc))
				sc = json_object_get(e, "score");
			if (json_is_number(sc))
				kb_fmt_seconds(json_number_value(sc), score,
					       sizeof(score));
			if (json_is_integer(json_object_get(e, "rank")))
				snprintf(rank, sizeof(rank), "%lld",
					 (long long)json_integer_value(
						 json_object_get(e, "rank")));
			else
				snprintf(rank, sizeof(rank), "%ld",
					 base + (long)i + 1);
			printf("%-5s %-24s %-12s %-8s %-24s %s\n", rank,
			       kb_cli_cell(e, "user_name", c1, sizeof(c1)),
			       score,
			       kb_cli_cell(e, "submission_id", c2, sizeof(c2)),
			       kb_cli_cell(e, "submission_name", c3,
					   sizeof(c3)),
			       kb_cli_cell(e, "submission_time", c4,
					   sizeof(c4)));
		}
	}
	json_decref(list);
	return KB_EXIT_OK;
}

const struct kb_cmd kb_cmd_ranking = {
	.name = "ranking",
	.summary = "show a leaderboard's ranking on one GPU",
	.run = run_ranking,
	.help = "NAME\n"
		"    kb ranking - show a leaderboard's ranking for one GPU type\n"
		"\n"
		"SYNOPSIS\n"
		"    kb ranking [--limit N] [--offset N] [--json] LEADERBOARD GPU\n"
		"\n"
		"DESCRIPTION\n"
		"    Prints the best ranked submission of each user, fastest first\n"
		"    (GET /submissions/{lb}/{gpu}): rank, user, score (the mean time of\n"
		"    the ranked runs), submission id, file name and time. Ties go to the\n"
		"    earlier submission. Needs no account.\n"
		"\n"
		"OPTIONS\n"
		"    -n, --limit N    At most N entries (the server's default otherwise).\n"
		"    --offset N       Skip the first N entries.\n"
		"    --json           Print the server's list as JSON.\n"
		"\n"
		"EXIT STATUS\n"
		"    0 success; 2 usage error; 3 API or network error (an unknown\n"
		"    leaderboard or GPU is an HTTP 404 from the server).\n"
		"\n"
		"EXAMPLES\n"
		"    kb ranking vectorsum_cpu CPU --limit 10\n",
};
