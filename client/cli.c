/* kb_cli: see cli.h. */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CALL_TIMEOUT_S 60L

const struct kb_cmd *kb_cli_find(const struct kb_cmd *const *table, size_t n,
				 const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(table[i]->name, name) == 0)
			return table[i];
	return NULL;
}

void kb_cli_list(FILE *f, const struct kb_cmd *const *table, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!table[i]->hidden)
			fprintf(f, "    %-13s %s\n", table[i]->name,
				table[i]->summary);
}

int kb_cli_dispatch(struct kb_cli *c, const struct kb_cmd *self,
		    const struct kb_cmd *const *table, size_t n, int argc,
		    char **argv)
{
	const struct kb_cmd *cmd;

	if (argc >= 2 &&
	    (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		kb_cli_help(self);
		return KB_EXIT_OK;
	}
	if (argc < 2) {
		fprintf(stderr, "kb: %s needs one of these commands:\n",
			self->name);
		kb_cli_list(stderr, table, n);
		fprintf(stderr, "Run 'kb %s --help' for details.\n",
			self->name);
		return KB_EXIT_USAGE;
	}
	cmd = kb_cli_find(table, n, argv[1]);
	if (!cmd || !cmd->run) {
		fprintf(stderr, "kb: %s: unknown command '%s'; one of:\n",
			self->name, argv[1]);
		kb_cli_list(stderr, table, n);
		return KB_EXIT_USAGE;
	}
	return cmd->run(c, argc - 1, argv + 1);
}

const char *kb_cli_full(const struct kb_cmd *cmd)
{
	return cmd->full ? cmd->full : cmd->name;
}

void kb_cli_help(const struct kb_cmd *cmd)
{
	fputs(cmd->help, stdout);
}

int kb_cli_usage(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "kb: %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nRun 'kb %s --help' for usage.\n", cmd);
	return KB_EXIT_USAGE;
}

void kb_cli_err(const char *fmt, ...)
{
	va_list ap;

	fputs("kb: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

const char *kb_cli_config_path(struct kb_cli *c)
{
	char err[256];

	if (c->config_path[0])
		return c->config_path;
	if (c->config_path_opt) {
		snprintf(c->config_path, sizeof(c->config_path), "%s",
			 c->config_path_opt);
	} else if (kb_cfg_default_path(c->config_path, sizeof(c->config_path),
				       err, sizeof(err)) < 0) {
		kb_cli_err("%s", err);
		c->config_path[0] = '\0';
	}
	return c->config_path;
}

/* Loads the config once. Returns 0 (also for a missing file) or -1 after
 * printing why. */
static int load_config(struct kb_cli *c)
{
	char err[512];
	const char *path;
	int rc;

	if (c->cfg_loaded)
		return c->cfg_loaded > 0 ? 0 : -1;
	path = kb_cli_config_path(c);
	if (!*path) {
		c->cfg_loaded = -1;
		return -1;
	}
	rc = kb_cfg_load(path, &c->cfg, err, sizeof(err));
	if (rc < 0 && rc != -ENOENT) {
		kb_cli_err("%s", err);
		c->cfg_loaded = -1;
		return -1;
	}
	c->cfg_loaded = 1;
	return 0;
}

/* A CLI id goes into an HTTP header: printable ASCII, no spaces. */
static int cli_id_ok(const char *s)
{
	if (!s || !*s || strlen(s) > 256)
		return 0;
	for (; *s; s++)
		if (*s <= ' ' || *s > '~')
			return 0;
	return 1;
}

static int url_ok(const char *u)
{
	return strncmp(u, "http://", 7) == 0 || strncmp(u, "https://", 8) == 0;
}

struct kb_api *kb_cli_api(struct kb_cli *c, int need_id, int *exit_code)
{
	const char *url = NULL, *id = NULL, *env;

	*exit_code = KB_EXIT_OK;
	if (c->api && (!need_id || c->cfg.cli_id || getenv("KB_CLI_ID")))
		return c->api;
	if (c->api_url_opt && *c->api_url_opt) {
		url = c->api_url_opt;
		c->api_url_from = "--api-url";
	} else if ((env = getenv("POPCORN_API_URL")) && *env) {
		url = env;
		c->api_url_from = "POPCORN_API_URL";
	} else {
		if (load_config(c) < 0) {
			*exit_code = KB_EXIT_USAGE;
			return NULL;
		}
		if (c->cfg.api_url && *c->cfg.api_url) {
			url = c->cfg.api_url;
			c->api_url_from = "api_url in the config file";
		} else {
			url = KB_DEFAULT_API_URL;
			c->api_url_from = "the default";
		}
	}
	if (!url_ok(url)) {
		kb_cli_err(
			"API URL '%s' (from %s) must start with http:// or https://",
			url, c->api_url_from);
		*exit_code = KB_EXIT_USAGE;
		return NULL;
	}
	snprintf(c->api_url, sizeof(c->api_url), "%s", url);
	if (need_id) {
		if ((env = getenv("KB_CLI_ID")) && *env) {
			id = env;
		} else {
			if (load_config(c) < 0) {
				*exit_code = KB_EXIT_USAGE;
				return NULL;
			}
			id = c->cfg.cli_id;
		}
		if (!id || !*id) {
			kb_cli_err(
				"no CLI id: %s has no cli_id and KB_CLI_ID is not "
				"set; run 'kb register discord' (or github) first",
				kb_cli_config_path(c));
			*exit_code = KB_EXIT_USAGE;
			return NULL;
		}
		if (!cli_id_ok(id)) {
			kb_cli_err(
				"the CLI id is not valid (it must be printable "
				"ASCII without spaces)");
			*exit_code = KB_EXIT_USAGE;
			return NULL;
		}
	}
	kb_api_destroy(c->api);
	c->api = kb_api_new(c->api_url, id);
	if (!c->api) {
		kb_cli_err("out of memory");
		*exit_code = KB_EXIT_API;
	}
	return c->api;
}

json_t *kb_cli_get_json(struct kb_cli *c, const char *method, const char *path,
			const json_t *body, int *exit_code)
{
	struct kb_api_resp r;
	char err[1024];
	json_t *j;
	int rc;

	rc = kb_api_call(c->api, method, path, body, CALL_TIMEOUT_S, &r, err,
			 sizeof(err));
	if (rc < 0) {
		kb_cli_err("%s", err);
		*exit_code = rc == -EINTR ? KB_EXIT_INTERRUPTED : KB_EXIT_API;
		kb_api_resp_free(&r);
		return NULL;
	}
	if (!kb_api_ok(&r)) {
		kb_api_error_text(&r, err, sizeof(err));
		kb_cli_err("%s %s: %s", method, path, err);
		if (r.status == 401)
			kb_cli_err("the server does not know this CLI id; run "
				   "'kb register discord' (or github)");
		*exit_code = KB_EXIT_API;
		kb_api_resp_free(&r);
		return NULL;
	}
	j = kb_api_json(&r, err, sizeof(err));
	if (!j) {
		kb_cli_err("%s %s: %s", method, path, err);
		*exit_code = KB_EXIT_API;
	}
	kb_api_resp_free(&r);
	return j;
}

void kb_cli_print_json(const json_t *j)
{
	json_dumpf(j, stdout, JSON_INDENT(2) | JSON_ENCODE_ANY);
	fputc('\n', stdout);
}

const char *kb_cli_cell(const json_t *o, const char *key, char *buf, size_t n)
{
	const json_t *v = json_object_get(o, key);

	if (json_is_string(v))
		return json_string_value(v);
	if (json_is_integer(v))
		snprintf(buf, n, "%" JSON_INTEGER_FORMAT,
			 json_integer_value(v));
	else if (json_is_real(v))
		snprintf(buf, n, "%g", json_real_value(v));
	else if (json_is_boolean(v))
		snprintf(buf, n, "%s", json_is_true(v) ? "yes" : "no");
	else
		snprintf(buf, n, "-");
	return buf;
}

int kb_cli_common_opt(struct kb_cli *c, const struct kb_cmd *cmd, int opt,
		      int *done)
{
	switch (opt) {
	case KB_OPT_HELP:
		kb_cli_help(cmd);
		*done = KB_EXIT_OK;
		return 1;
	case KB_OPT_JSON:
		c->json = 1;
		return 1;
	case KB_OPT_QUIET:
		c->quiet = 1;
		return 1;
	case KB_OPT_API_URL:
		c->api_url_opt = optarg;
		return 1;
	case KB_OPT_CONFIG:
		c->config_path_opt = optarg;
		c->config_path[0] = '\0';
		return 1;
	case '?':
	case ':':
		fprintf(stderr, "Run 'kb %s --help' for usage.\n",
			kb_cli_full(cmd));
		*done = KB_EXIT_USAGE;
		return 1;
	default:
		return 0;
	}
}

void kb_cli_getopt_reset(char **argv, const char *full_name)
{
	argv[0] = (char *)full_name;
	optind = 0; /* glibc: a full re-initialisation */
	opterr = 1;
}

unsigned long long kb_cli_parse_id(const char *s)
{
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		return 0;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return 0;
	return v;
}
