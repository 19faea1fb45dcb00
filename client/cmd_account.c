/* kb register, kb join: the account.
 *
 * Registration follows KernelBot's CLI flow. GET /auth/init?provider=P
 * returns {"state": ID}: ID becomes the user's CLI id. The user signs in
 * with the provider in a browser; the provider redirects to
 * /auth/cli/{P}?code=...&state=S, where S is the unpadded URL-safe base64
 * of {"cli_id": ID, "is_reset": bool}, and the server links ID to the
 * account it learns from the code. The CLI never sees that redirect: kb
 * waits until an authenticated call with ID succeeds, so that a script
 * knows when the account is usable. A config file without an id gets ID
 * at once (as popcorn-cli does). One that holds an id keeps it until ID
 * is confirmed: popcorn-cli overwrites it first, and a sign-in that never
 * finishes (a server whose OAuth application is not the one the URL
 * names) then leaves every call refused with no working id on file.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <sodium.h>

#include "commands.h"

#define DEFAULT_WAIT_S 600L
#define CHECK_EVERY_S 2.0
#define CHECK_TIMEOUT_S 30L

struct provider {
	const char *name, *title, *env;
	const char *authorize; /* the provider's OAuth authorization endpoint */
	const char *extra;     /* fixed query parameters after client_id */
};

static const struct provider providers[] = {
	{"discord", "Discord", "KB_DISCORD_CLIENT_ID",
	 "https://discord.com/oauth2/authorize",
	 "&response_type=code&scope=identify"},
	{"github", "GitHub", "KB_GITHUB_CLIENT_ID",
	 "https://github.com/login/oauth/authorize", ""},
};

/* The OAuth state: unpadded URL-safe base64 of {"cli_id","is_reset"}. */
static char *make_state(const char *cli_id, int reset)
{
	json_t *j = json_pack("{s:s,s:b}", "cli_id", cli_id, "is_reset", reset);
	char *js = j ? json_dumps(j, JSON_COMPACT) : NULL;
	char *out = NULL;

	json_decref(j);
	if (js) {
		size_t n = sodium_base64_encoded_len(
			strlen(js), sodium_base64_VARIANT_URLSAFE_NO_PADDING);
		out = malloc(n);
		if (out)
			sodium_bin2base64(
				out, n, (const unsigned char *)js, strlen(js),
				sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	}
	free(js);
	return out;
}

/* The URL the user opens: the server's "authorize_url" (our gateway's
 * addition: the provider URL with client_id and redirect_uri, without
 * state) plus the state; else one built from the client id in the
 * provider's environment variable and the API's /auth/cli/{provider}. */
static int make_url(struct kb_cli *c, const struct provider *p,
		    const json_t *init, const char *state, struct kb_buf *url)
{
	const char *base =
		json_string_value(json_object_get(init, "authorize_url"));
	const char *client = getenv(p->env);

	if (base && *base) {
		kb_buf_printf(url, "%s%sstate=%s", base,
			      strchr(base, '?') ? "&" : "?", state);
		return url->data ? 0 : -ENOMEM;
	}
	if (!client || !*client) {
		kb_cli_err(
			"register: the server did not send an authorization URL "
			"(\"authorize_url\" in /auth/init) and %s is not set; ask "
			"the server's operators for the %s OAuth client id",
			p->env, p->title);
		return -EINVAL;
	}
	char redirect[2200];
	snprintf(redirect, sizeof(redirect), "%s/auth/cli/%s", c->api_url,
		 p->name);
	char *er = curl_easy_escape(NULL, redirect, 0);
	char *ec = curl_easy_escape(NULL, client, 0);
	if (er && ec)
		kb_buf_printf(url, "%s?client_id=%s%s&redirect_uri=%s&state=%s",
			      p->authorize, ec, p->extra, er, state);
	curl_free(er);
	curl_free(ec);
	return url->data ? 0 : -ENOMEM;
}

/* Polls an authenticated endpoint with the new id until the server knows
 * it. Returns 1 confirmed, 0 cannot tell (the server lacks the endpoint),
 * -ETIMEDOUT, -EINTR, -EPERM (refused for another reason). */
static int wait_linked(struct kb_cli *c, const char *cli_id, long wait_s,
		       char *err, size_t err_size)
{
	struct kb_api *a = kb_api_new(c->api_url, cli_id);
	double end = kb_mono_s() + (double)wait_s;
	int rc = -ETIMEDOUT;

	if (!a)
		return -ENOMEM;
	snprintf(err, err_size, "no answer yet");
	while (!kb_api_interrupted && kb_mono_s() < end) {
		struct kb_api_resp r;
		int crc = kb_api_call(a, "GET", "/user/submissions?limit=1",
				      NULL, CHECK_TIMEOUT_S, &r, err, err_size);
		long st = r.status;

		if (crc == 0 && st != 401)
			kb_api_error_text(&r, err, err_size);
		kb_api_resp_free(&r);
		if (crc == -EINTR)
			break;
		if (crc == 0 && st >= 200 && st < 300) {
			rc = 1;
			break;
		}
		if (crc == 0 && (st == 404 || st == 405)) {
			rc = 0;
			break;
		}
		if (crc == 0 && st == 403) {
			rc = -EPERM;
			break;
		}
		/* 401: not linked yet; 5xx or no answer: try again. */
		for (int i = 0;
		     i < (int)(CHECK_EVERY_S * 10) && !kb_api_interrupted;
		     i++) {
			struct timespec ts = {0, 100000000L};
			nanosleep(&ts, NULL);
		}
	}
	if (kb_api_interrupted)
		rc = -EINTR;
	kb_api_destroy(a);
	return rc;
}

/* Whether the config file at path holds a cli_id (an unreadable or
 * unparsable file counts as holding one: it is not overwritten unasked). */
static int has_saved_id(const char *path)
{
	struct kb_cfg cfg = {0};
	char err[256];
	int rc = kb_cfg_load(path, &cfg, err, sizeof(err));
	int has = rc == -ENOENT ? 0 : rc < 0 ? 1 : cfg.cli_id && *cfg.cli_id;

	kb_cfg_clear(&cfg);
	return has;
}

struct register_opts {
	int reset, no_wait;
	long wait_s;
};

static int run_register(struct kb_cli *c, int argc, char **argv)
{
	static const struct option longopts[] = {
		KB_COMMON_LONGOPTS,        {"reset", 0, NULL, 'r'},
		{"no-wait", 0, NULL, 'W'}, {"timeout", 1, NULL, 't'},
		{NULL, 0, NULL, 0},
	};
	struct register_opts o = {.wait_s = DEFAULT_WAIT_S};
	const struct provider *p = NULL;
	struct kb_buf path = {0}, url = {0};
	char err[1024];
	const char *cli_id, *cfg_path;
	char *state = NULL;
	json_t *init = NULL;
	int opt, ec = KB_EXIT_API, rc, saved;

	kb_cli_getopt_reset(argv, "kb register");
	while ((opt = getopt_long(argc, argv, "hq", longopts, NULL)) != -1) {
		int done = -1;
		if (kb_cli_common_opt(c, &kb_cmd_register, opt, &done)) {
			if (done >= 0)
				return done;
			continue;
		}
		if (opt == 'r') {
			o.reset = 1;
		} else if (opt == 'W') {
			o.no_wait = 1;
		} else if (opt == 't') {
			char *end;
			o.wait_s = strtol(optarg, &end, 10);
			if (*end || o.wait_s <= 0)
				return kb_cli_usage(
					"register",
					"--timeout needs a "
					"positive number of seconds");
		}
	}
	if (argc - optind == 1)
		for (size_t i = 0; i < sizeof(providers) / sizeof(providers[0]);
		     i++)
			if (strcmp(argv[optind], providers[i].name) == 0)
				p = &providers[i];
	if (!p)
		return kb_cli_usage("register",
				    "choose a provider: kb register "
				    "discord, or kb register github");
	cfg_path = kb_cli_config_path(c);
	if (!*cfg_path)
		return KB_EXIT_USAGE;
	/* A reset sends the current CLI id with /auth/init: the server moves
	 * only the account that id proves (gateway/routes/auth.c). */
	if (!kb_cli_api(c, o.reset, &ec))
		return ec;

	kb_buf_append(&path, "/auth/init", 10);
	kb_api_query_add(&path, "provider", p->name);
	init = path.data ? kb_cli_get_json(c, "GET", path.data, NULL, &ec)
			 : NULL;
	if (!init)
		goto out;
	cli_id = json_string_value(json_object_get(init, "state"));
	if (!cli_id || !*cli_id || strlen(cli_id) > 256 ||
	    strpbrk(cli_id, " \t\r\n")) {
		kb_cli_err(
			"register: /auth/init did not return a usable \"state\"");
		ec = KB_EXIT_API;
		goto out;
	}
	state = make_state(cli_id, o.reset);
	if (!state || (rc = make_url(c, p, init, state, &url)) < 0) {
		ec = KB_EXIT_API;
		goto out;
	}
	/* With no id on file the new one is saved first: the browser step may
	 * finish after kb stops waiting, and the id must then be in place. An
	 * id on file is replaced only once the new one is confirmed. */
	saved = !has_saved_id(cfg_path);
	if (saved &&
	    kb_cfg_store(cfg_path, "cli_id", cli_id, err, sizeof(err)) < 0) {
		kb_cli_err("register: %s", err);
		ec = KB_EXIT_USAGE;
		goto out;
	}
	FILE *say = c->json ? stderr : stdout;
	fprintf(say,
		"Open this URL in a browser and sign in with %s:\n\n    %s\n\n",
		p->title, url.data);
	fflush(say);
	if (!c->quiet && saved)
		fprintf(stderr, "Your new CLI id is saved in %s.\n", cfg_path);
	else if (!c->quiet)
		fprintf(stderr,
			"Your current CLI id stays in %s until the new "
			"one (%s) is confirmed.\n",
			cfg_path, cli_id);

	rc = 0;
	if (!o.no_wait) {
		if (!c->quiet)
			fprintf(stderr,
				"Waiting up to %ld s for the sign-in to "
				"finish (Ctrl-C stops waiting)...\n",
				o.wait_s);
		rc = wait_linked(c, cli_id, o.wait_s, err, sizeof(err));
	}
	if (rc == 1 && !saved) {
		if (kb_cfg_store(cfg_path, "cli_id", cli_id, err, sizeof(err)) <
		    0) {
			kb_cli_err(
				"register: the new id %s is confirmed but not "
				"saved: %s",
				cli_id, err);
			ec = KB_EXIT_USAGE;
			goto out;
		}
		saved = 1;
	}
	if (c->json) {
		json_t *j = json_pack("{s:s,s:s,s:s,s:s,s:b,s:b}", "provider",
				      p->name, "cli_id", cli_id,
				      "authorize_url", url.data, "config_path",
				      cfg_path, "is_reset", o.reset,
				      "confirmed", rc == 1);
		if (j)
			kb_cli_print_json(j);
		json_decref(j);
	}
	switch (rc) {
	case 1:
		if (!c->json)
			printf("Registered: the server accepts your CLI id.\n");
		ec = KB_EXIT_OK;
		break;
	case 0:
		if (!o.no_wait)
			kb_cli_err(
				"register: cannot confirm the sign-in with this "
				"server%s",
				saved ? "; the id is saved, try 'kb "
					"submissions list'"
				      : "");
		ec = KB_EXIT_OK;
		break;
	case -EINTR:
		kb_cli_err("register: stopped waiting%s",
			   saved ? "; finish signing "
				   "in and the saved id will work"
				 : "");
		ec = KB_EXIT_INTERRUPTED;
		break;
	case -EPERM:
		kb_cli_err("register: the server refuses this id: %s", err);
		ec = KB_EXIT_API;
		break;
	default:
		kb_cli_err(
			"register: the sign-in did not finish within %ld s (%s)%s",
			o.wait_s, err,
			saved ? "; the id is saved and will "
				"work once it does"
			      : "");
		ec = KB_EXIT_API;
		break;
	}
	if (rc != 1 && !saved)
		kb_cli_err("register: your CLI id in %s is unchanged. Once the "
			   "sign-in finishes, use the new id: KB_CLI_ID=%s, or "
			   "cli_id: \"%s\" in that file",
			   cfg_path, cli_id, cli_id);
out:
	json_decref(init);
	free(state);
	kb_buf_free(&path);
	kb_buf_free(&url);
	return ec;
}

const struct kb_cmd kb_cmd_register = {
	.name = "register",
	.summary = "sign in with Discord or GitHub and save a CLI id",
	.run = run_register,
	.help = "NAME\n"
		"    kb register - link this machine to your Discord or GitHub account\n"
		"\n"
		"SYNOPSIS\n"
		"    kb register [--reset] [--no-wait] [--timeout SECONDS] [--json]\n"
		"                discord|github\n"
		"\n"
		"DESCRIPTION\n"
		"    Asks the server for a new CLI id (GET /auth/init?provider=...)\n"
		"    and prints a URL to open in a browser. The id is saved as cli_id\n"
		"    in ~/.popcorn.yaml (other keys are kept; the file is replaced\n"
		"    atomically and made private, mode 0600): at once when the file\n"
		"    has no cli_id; otherwise only once the server accepts the new id,\n"
		"    so that the id you have keeps working if the sign-in never\n"
		"    finishes (kb then prints the new id to use once it does). Signing in there links the id\n"
		"    to your account (the provider redirects to the server's\n"
		"    /auth/cli/{provider}). kb then waits, checking every 2 s, until\n"
		"    the server accepts the id, so that a script can go on at once.\n"
		"\n"
		"    The URL comes from the server (\"authorize_url\" in its /auth/init\n"
		"    answer). A server that does not send one (upstream KernelBot) needs\n"
		"    the OAuth application's client id in KB_DISCORD_CLIENT_ID or\n"
		"    KB_GITHUB_CLIENT_ID; the redirect then goes to\n"
		"    API_URL/auth/cli/{provider}.\n"
		"\n"
		"    The CLI id is a credential: anyone who has it can submit as you.\n"
		"    Copy ~/.popcorn.yaml (or set KB_CLI_ID) to use it elsewhere.\n"
		"\n"
		"OPTIONS\n"
		"    --reset\n"
		"        Replace the CLI id of an account that already has one (the\n"
		"        state sent to the provider says is_reset: true); the old id\n"
		"        stops working. The current id (the config file's or\n"
		"        KB_CLI_ID) goes with the request, as the proof of which\n"
		"        account moves: without it there is nothing to reset.\n"
		"    --no-wait\n"
		"        Print the URL and exit 0 without waiting (the id is saved\n"
		"        only where the file has none).\n"
		"    --timeout SECONDS\n"
		"        How long to wait for the sign-in (default 600).\n"
		"    --json\n"
		"        Print {\"provider\", \"cli_id\", \"authorize_url\", \"config_path\",\n"
		"        \"is_reset\", \"confirmed\"} on stdout; the URL goes to stderr.\n"
		"\n"
		"ENVIRONMENT\n"
		"    KB_DISCORD_CLIENT_ID, KB_GITHUB_CLIENT_ID\n"
		"        OAuth client ids, used only when the server sends no URL.\n"
		"\n"
		"EXIT STATUS\n"
		"    0 registered (or --no-wait); 2 usage error or the config file\n"
		"    cannot be written; 3 API or network error, or the sign-in did not\n"
		"    finish in time; 130 interrupted.\n",
};

/* ---- kb join CODE ---- */

static int run_join(struct kb_cli *c, int argc, char **argv)
{
	static const struct option longopts[] = {KB_COMMON_LONGOPTS,
						 {NULL, 0, NULL, 0}};
	const char *msg;
	json_t *body, *j;
	int opt, ec;

	kb_cli_getopt_reset(argv, "kb join");
	while ((opt = getopt_long(argc, argv, "hq", longopts, NULL)) != -1) {
		int done = -1;
		if (kb_cli_common_opt(c, &kb_cmd_join, opt, &done) && done >= 0)
			return done;
	}
	if (argc - optind != 1 || !*argv[optind])
		return kb_cli_usage("join",
				    "needs the invite code (kb join CODE)");
	if (!kb_cli_api(c, 1, &ec))
		return ec;
	body = json_pack("{s:s}", "code", argv[optind]);
	if (!body) {
		kb_cli_err("join: the code is not valid text");
		return KB_EXIT_USAGE;
	}
	j = kb_cli_get_json(c, "POST", "/user/join", body, &ec);
	json_decref(body);
	if (!j)
		return ec;
	if (c->json) {
		kb_cli_print_json(j);
	} else {
		const json_t *lbs = json_object_get(j, "leaderboards");
		msg = json_string_value(json_object_get(j, "message"));
		if (!msg)
			msg = json_string_value(json_object_get(j, "detail"));
		printf("%s\n", msg ? msg : "Joined.");
		if (json_array_size(lbs) > 0) {
			const json_t *v;
			size_t i;
			printf("Leaderboards now open to you:");
			json_array_foreach(lbs, i, v)
				printf(" %s", json_string_value(v)
						      ? json_string_value(v)
						      : "?");
			printf("\n");
		}
	}
	json_decref(j);
	return KB_EXIT_OK;
}

const struct kb_cmd kb_cmd_join = {
	.name = "join",
	.summary = "redeem an invite code for closed leaderboards",
	.run = run_join,
	.help = "NAME\n"
		"    kb join - redeem an invite code\n"
		"\n"
		"SYNOPSIS\n"
		"    kb join [--json] CODE\n"
		"\n"
		"DESCRIPTION\n"
		"    Sends the invite code to the server (POST /user/join with the JSON\n"
		"    body {\"code\": CODE}, as your CLI id), which opens the\n"
		"    leaderboards or competition the code belongs to for your account.\n"
		"    Prints the server's message and, if it lists them, the leaderboards.\n"
		"\n"
		"OPTIONS\n"
		"    --json   Print the server's answer as JSON.\n"
		"\n"
		"EXIT STATUS\n"
		"    0 joined; 2 usage error or no CLI id; 3 API or network error (an\n"
		"    unknown or used-up code is an HTTP 4xx from the server).\n",
};
