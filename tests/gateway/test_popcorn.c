/* popcorn-cli's exact request sequences against kb-gateway, with a fake
 * OAuth provider (a real HTTP server on loopback, libmicrohttpd) standing
 * in for Discord and GitHub:
 *   registration   GET /auth/init?provider=P, the browser's redirect to
 *                  GET /auth/cli/P?code&state (state = base64url JSON)
 *   browsing       GET /leaderboards, GET /gpus/{lb}
 *   submitting     POST /{lb}/{gpu}/{mode} (server-sent events), and
 *                  POST /submission/{lb}/{gpu}/{mode} + polling
 *                  GET /user/submissions/{id}
 *   listing        GET /user/submissions?leaderboard=X&limit=N
 *   joining        POST /user/join {"code"}
 * Each answer is checked for the fields popcorn-cli reads. */
#include <check.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gw_env.h"
#include "kb_util.h"
#include "kb_check_main.h"

#define CODE "#!POPCORN leaderboard gw_sum_cpu\n" \
	     "float custom_kernel(const float *d, unsigned long n) { return 0; }\n"

static struct gw_env E;
static struct MHD_Daemon *fake;
static int fake_port;
static char env_discord[128], env_github[128], env_github_api[128], env_redirect[128];
/* The redirect base the fake Discord expects, URL-encoded. */
static char fake_redirect[128] = "http%3A%2F%2Fapi.test";
static const char *oauth_env[] = {
	env_discord, env_github, env_github_api, env_redirect,
	"KB_OAUTH_DISCORD_CLIENT_ID=disc-id",
	"KB_OAUTH_DISCORD_CLIENT_SECRET=disc-secret-XYZ",
	"KB_OAUTH_GITHUB_CLIENT_ID=gh-id",
	"KB_OAUTH_GITHUB_CLIENT_SECRET=gh-secret-XYZ",
	NULL,
};

/* ---- the fake provider ---- */

struct fake_req {
	char body[4096];
	size_t len;
};

static enum MHD_Result answer(struct MHD_Connection *c, unsigned status,
			      const char *json)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(
		strlen(json), (void *)json, MHD_RESPMEM_MUST_COPY);
	MHD_add_response_header(r, "Content-Type", "application/json");
	enum MHD_Result ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static int form_has(const char *body, const char *kv)
{
	size_t n = strlen(kv);
	for (const char *p = body; (p = strstr(p, kv)); p++)
		if ((p == body || p[-1] == '&') && (p[n] == '&' || p[n] == '\0'))
			return 1;
	return 0;
}

static enum MHD_Result fake_handler(void *cls, struct MHD_Connection *c,
				    const char *url, const char *method,
				    const char *version, const char *data,
				    size_t *data_size, void **con_cls)
{
	struct fake_req *fr = *con_cls;
	char redirect[256];

	(void)cls;
	(void)version;
	if (!fr) {
		*con_cls = calloc(1, sizeof(*fr));
		return MHD_YES;
	}
	if (*data_size) {
		size_t n = *data_size;
		if (fr->len + n < sizeof(fr->body)) {
			memcpy(fr->body + fr->len, data, n);
			fr->len += n;
		}
		*data_size = 0;
		return MHD_YES;
	}
	const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
	if (strcmp(method, "POST") == 0 && strcmp(url, "/api/oauth2/token") == 0) {
		snprintf(redirect, sizeof(redirect), "redirect_uri=%s%%2Fauth%%2Fcli%%2Fdiscord",
			 fake_redirect);
		if (form_has(fr->body, "client_id=disc-id") &&
		    form_has(fr->body, "client_secret=disc-secret-XYZ") &&
		    form_has(fr->body, "grant_type=authorization_code") &&
		    form_has(fr->body, redirect) &&
		    (form_has(fr->body, "code=good-code") || form_has(fr->body, "code=good-code-2")))
			return answer(c, 200, "{\"access_token\":\"tok-discord-SECRET\","
					      "\"token_type\":\"Bearer\"}");
		return answer(c, 400, "{\"error\":\"invalid_grant\"}");
	}
	if (strcmp(method, "GET") == 0 && strcmp(url, "/api/users/@me") == 0) {
		if (auth && strcmp(auth, "Bearer tok-discord-SECRET") == 0)
			return answer(c, 200, "{\"id\":\"80351110224678912\","
					      "\"username\":\"nelly\"}");
		return answer(c, 401, "{\"message\":\"401: Unauthorized\"}");
	}
	if (strcmp(method, "POST") == 0 && strcmp(url, "/login/oauth/access_token") == 0) {
		const char *accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept");
		if (accept && strstr(accept, "application/json") &&
		    form_has(fr->body, "client_id=gh-id") &&
		    form_has(fr->body, "client_secret=gh-secret-XYZ") &&
		    form_has(fr->body, "code=gh-code"))
			return answer(c, 200, "{\"access_token\":\"tok-gh-SECRET\"}");
		return answer(c, 200, "{\"error\":\"bad_verification_code\"}");
	}
	if (strcmp(method, "GET") == 0 && strcmp(url, "/user") == 0) {
		if (auth && strcmp(auth, "Bearer tok-gh-SECRET") == 0)
			return answer(c, 200, "{\"id\":583231,\"login\":\"octocat\"}");
		return answer(c, 401, "{\"message\":\"Bad credentials\"}");
	}
	return answer(c, 404, "{}");
}

static void fake_done(void *cls, struct MHD_Connection *c, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)c;
	(void)toe;
	free(*con_cls);
	*con_cls = NULL;
}

static void fake_up(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET};

	/* Port 0: the kernel picks a free one, read back from the daemon. */
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fake = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0,
				NULL, NULL, fake_handler, NULL,
				MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&a,
				MHD_OPTION_NOTIFY_COMPLETED, fake_done, NULL,
				MHD_OPTION_END);
	ck_assert_ptr_nonnull(fake);
	fake_port = MHD_get_daemon_info(fake, MHD_DAEMON_INFO_BIND_PORT)->port;
	ck_assert_int_gt(fake_port, 0);
	snprintf(env_discord, sizeof(env_discord),
		 "KB_OAUTH_DISCORD_BASE=http://127.0.0.1:%d", fake_port);
	snprintf(env_github, sizeof(env_github),
		 "KB_OAUTH_GITHUB_BASE=http://127.0.0.1:%d", fake_port);
	snprintf(env_github_api, sizeof(env_github_api),
		 "KB_OAUTH_GITHUB_API_BASE=http://127.0.0.1:%d", fake_port);
	snprintf(env_redirect, sizeof(env_redirect),
		 "KB_OAUTH_REDIRECT_BASE=http://api.test");
}

/* ---- popcorn-cli's steps ---- */

/* base64_url::encode of the state JSON (no padding), as popcorn-cli. */
static void state_of(const char *cli_id, int reset, char *out, size_t size)
{
	char json[256];
	snprintf(json, sizeof(json), "{\"cli_id\":\"%s\",\"is_reset\":%s}", cli_id,
		 reset ? "true" : "false");
	sodium_bin2base64(out, size, (const unsigned char *)json, strlen(json),
			  sodium_base64_VARIANT_URLSAFE_NO_PADDING);
}

static void auth_init(const char *provider, char *cli_id, size_t size)
{
	char path[64];
	snprintf(path, sizeof(path), "/auth/init?provider=%s", provider);
	json_t *j = gw_expect_json(gw_req(&E, "GET", path, NULL, NULL, 0), 200, "auth/init");
	const char *state = json_string_value(json_object_get(j, "state"));
	ck_assert_ptr_nonnull(state);
	ck_assert_uint_eq(strlen(state), 36); /* a UUID */
	snprintf(cli_id, size, "%s", state);
	json_decref(j);
}

static struct gw_resp auth_cli(const char *provider, const char *code,
			       const char *cli_id, int reset)
{
	char state[512], path[800];
	state_of(cli_id, reset, state, sizeof(state));
	snprintf(path, sizeof(path), "/auth/cli/%s?code=%s&state=%s", provider, code, state);
	return gw_req(&E, "GET", path, NULL, NULL, 0);
}

START_TEST(popcorn_cli_session)
{
	char cli[64], cli2[64], gh_cli[64];
	json_t *j;

	fake_up();
	E.extra_env = oauth_env;
	gw_env_up(&E, 1, GW_ADMIN_TOKEN);
	gw_wait_consumer(&E);

	/* Registration through Discord. */
	auth_init("discord", cli, sizeof(cli));
	gw_expect_error(gw_req_cli(&E, "GET", "/user/submissions", cli, NULL), 401,
			"CLI id before login");
	j = gw_expect_json(auth_cli("discord", "good-code", cli, 0), 200, "auth/cli");
	ck_assert_str_eq(json_string_value(json_object_get(j, "status")), "success");
	ck_assert_str_eq(json_string_value(json_object_get(j, "user_id")),
			 "discord-80351110224678912");
	ck_assert_str_eq(json_string_value(json_object_get(j, "user_name")), "nelly");
	ck_assert(json_is_false(json_object_get(j, "is_reset")));
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(j, "message")),
				     "discord"));
	json_decref(j);
	/* The same CLI id cannot be linked twice. */
	gw_expect_error(auth_cli("discord", "good-code", cli, 0), 400, "state reused");

	/* Browsing. */
	j = gw_expect_json(gw_req_cli(&E, "GET", "/leaderboards", cli, NULL), 200, "boards");
	json_t *lb;
	size_t i;
	json_array_foreach(j, i, lb) {
		ck_assert(json_is_object(json_object_get(lb, "task")));
		ck_assert(json_is_string(json_object_get(lb, "name")));
		ck_assert(json_is_string(json_object_get(lb, "description")));
	}
	json_decref(j);
	struct gw_resp r = gw_req_cli(&E, "GET", "/gpus/gw_sum_cpu", cli, NULL);
	ck_assert_int_eq(r.code, 200);
	ck_assert_str_eq(r.body, "[\"CPU\"]");
	gw_resp_free(&r);

	/* Submitting with the streaming endpoint (the "worker" answers). */
	struct gw_sse *s = gw_sse_start(&E, "/gw_sum_cpu/CPU/test", cli, CODE);
	ck_assert(gw_sse_wait(s, "event: status", 15000) == 0);
	uint64_t id = gw_sse_id(s);
	gw_produce_progress(&E, id, "CPU", KB__STAGE__STAGE_TESTING, "worker-1");
	{
		Kb__Result res = KB__RESULT__INIT;
		Kb__RunResult run = KB__RUN_RESULT__INIT, *rp[1] = {&run};
		Kb__KeyValue kv[3] = {KB__KEY_VALUE__INIT, KB__KEY_VALUE__INIT,
				      KB__KEY_VALUE__INIT};
		Kb__KeyValue *kvp[3] = {&kv[0], &kv[1], &kv[2]};
		Kb__ResultEvent ev = KB__RESULT_EVENT__INIT;
		kv[0].key = "test-count"; kv[0].value = "1";
		kv[1].key = "test.0.spec"; kv[1].value = "size: 16; seed: 1";
		kv[2].key = "test.0.status"; kv[2].value = "pass";
		run.key = "test";
		run.success = run.passed = 1;
		run.stdout = "hello from the test run\n";
		run.n_result = 3;
		run.result = kvp;
		res.submission_id = id;
		res.leaderboard = "gw_sum_cpu";
		res.gpu = "CPU";
		res.mode = KB__MODE__MODE_TEST;
		res.user_id = "discord-80351110224678912";
		res.n_runs = 1;
		res.runs = rp;
		res.verdict = KB__VERDICT__VERDICT_PASSED;
		ev.submission_id = id;
		ev.gpu = "CPU";
		ev.event_case = KB__RESULT_EVENT__EVENT_RESULT;
		ev.result = &res;
		gw_produce_event(&E, &ev);

		/* What the ranker will have written by the time the CLI polls. */
		size_t len = kb__result__get_packed_size(&res);
		uint8_t *buf = malloc(len);
		kb__result__pack(&res, buf);
		redisReply *rr = redisCommand(E.rc, "SET kb:res:%llu:CPU %b",
					      (unsigned long long)id, buf, len);
		freeReplyObject(rr);
		rr = redisCommand(E.rc, "HSET kb:sub:%llu status done stage done verdict passed "
				  "done_ms 1", (unsigned long long)id);
		freeReplyObject(rr);
		free(buf);
	}
	char *body = NULL;
	ck_assert_int_eq(gw_sse_finish(s, &body, NULL), 200);
	/* popcorn-cli: "status" data's "message"; "result" data's
	 * results[i].runs[<mode>].run.stdout and "reports". */
	const char *p = strstr(body, "event: result\ndata: ");
	ck_assert_msg(p != NULL, "%s", body);
	p += strlen("event: result\ndata: ");
	json_t *res = json_loadb(p, strcspn(p, "\n"), 0, NULL);
	ck_assert_ptr_nonnull(res);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(json_object_get(
		json_object_get(json_array_get(json_object_get(res, "results"), 0), "runs"),
		"test"), "run"), "stdout")), "hello from the test run\n");
	ck_assert(json_is_array(json_object_get(res, "reports")));
	json_decref(res);
	p = strstr(body, "event: status\ndata: ");
	ck_assert_ptr_nonnull(p);
	res = json_loadb(p + 20, strcspn(p + 20, "\n"), 0, NULL);
	ck_assert(json_is_string(json_object_get(res, "message")));
	json_decref(res);
	free(body);

	/* Polling it, as popcorn-cli's background submission does. */
	char path[64];
	snprintf(path, sizeof(path), "/user/submissions/%llu", (unsigned long long)id);
	j = gw_expect_json(gw_req_cli(&E, "GET", path, cli, NULL), 200, "poll");
	ck_assert_int_eq(json_integer_value(json_object_get(j, "id")), (json_int_t)id);
	ck_assert(json_is_integer(json_object_get(j, "leaderboard_id")));
	ck_assert_str_eq(json_string_value(json_object_get(j, "leaderboard_name")), "gw_sum_cpu");
	ck_assert_str_eq(json_string_value(json_object_get(j, "file_name")), "submission.c");
	ck_assert_str_eq(json_string_value(json_object_get(j, "user_id")),
			 "discord-80351110224678912");
	ck_assert(json_is_string(json_object_get(j, "submission_time")));
	ck_assert(json_is_true(json_object_get(j, "done")));
	ck_assert_str_eq(json_string_value(json_object_get(j, "code")), CODE);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "job"), "status")),
			 "succeeded");
	json_t *run0 = json_array_get(json_object_get(j, "runs"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(run0, "mode")), "test");
	ck_assert(json_is_false(json_object_get(run0, "secret")));
	ck_assert_str_eq(json_string_value(json_object_get(run0, "runner")), "CPU");
	ck_assert(json_is_true(json_object_get(run0, "passed")));
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(run0, "result"),
							   "test.0.status")), "pass");
	ck_assert(json_object_get(j, "runner_queue") != NULL);
	json_decref(j);

	/* The background endpoint: 202, then a pending poll. */
	j = gw_expect_json(gw_submit(&E, "/submission/gw_sum_cpu/CPU/test", cli, CODE), 202,
			   "background");
	ck_assert_str_eq(json_string_value(json_object_get(j, "status")), "accepted");
	json_int_t id2 = json_integer_value(json_object_get(json_object_get(j, "details"), "id"));
	json_decref(j);
	snprintf(path, sizeof(path), "/user/submissions/%lld", (long long)id2);
	j = gw_expect_json(gw_req_cli(&E, "GET", path, cli, NULL), 200, "pending poll");
	ck_assert(json_is_false(json_object_get(j, "done")));
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "job"), "status")),
			 "pending");
	json_decref(j);

	/* Listing, as `popcorn submissions list`. */
	j = gw_expect_json(gw_req_cli(&E, "GET", "/user/submissions?leaderboard=gw_sum_cpu&limit=10",
				      cli, NULL), 200, "list");
	ck_assert_uint_eq(json_array_size(j), 2);
	json_t *it = json_array_get(j, 1);
	ck_assert_int_eq(json_integer_value(json_object_get(it, "id")), (json_int_t)id);
	ck_assert(json_is_true(json_object_get(it, "done")));
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(
		json_object_get(it, "runs"), 0), "gpu_type")), "CPU");
	json_decref(j);

	/* Joining a closed board with an invite. */
	j = gw_expect_json(gw_req_admin(&E, "POST", "/admin/invites",
					"{\"leaderboard\":\"gw_gpu_only\",\"count\":1}"), 200, "invite");
	char body2[128];
	snprintf(body2, sizeof(body2), "{\"code\":\"%s\"}",
		 json_string_value(json_array_get(json_object_get(j, "codes"), 0)));
	json_decref(j);
	j = gw_expect_json(gw_req_cli(&E, "POST", "/user/join", cli, body2), 200, "join");
	ck_assert_str_eq(json_string_value(json_object_get(j, "status")), "ok");
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(j, "leaderboards"), 0)),
			 "gw_gpu_only");
	json_decref(j);

	/* Logging in again with reset moves the account to a new CLI id. */
	gw_expect_error(auth_cli("discord", "good-code-2", "never-issued", 0), 400,
			"CLI id not from /auth/init");
	auth_init("discord", cli2, sizeof(cli2));
	gw_expect_error(auth_cli("discord", "good-code-2", cli2, 0), 409, "second account");
	auth_init("discord", cli2, sizeof(cli2));
	j = gw_expect_json(auth_cli("discord", "good-code-2", cli2, 1), 200, "reset");
	ck_assert(json_is_true(json_object_get(j, "is_reset")));
	json_decref(j);
	gw_expect_error(gw_req_cli(&E, "GET", path, cli, NULL), 401, "old CLI id");
	j = gw_expect_json(gw_req_cli(&E, "GET", path, cli2, NULL), 200, "new CLI id");
	json_decref(j);

	/* GitHub: a user of its own. */
	auth_init("github", gh_cli, sizeof(gh_cli));
	gw_expect_error(auth_cli("github", "wrong", gh_cli, 0), 401, "code refused");
	auth_init("github", gh_cli, sizeof(gh_cli));
	gw_expect_error(auth_cli("discord", "good-code", gh_cli, 0), 400, "other provider");
	j = gw_expect_json(auth_cli("github", "gh-code", gh_cli, 0), 200, "github");
	ck_assert_str_eq(json_string_value(json_object_get(j, "user_id")), "github-583231");
	ck_assert_str_eq(json_string_value(json_object_get(j, "user_name")), "octocat");
	json_decref(j);
	j = gw_expect_json(gw_req_cli(&E, "GET", "/user/submissions", gh_cli, NULL), 200,
			   "github user's list");
	ck_assert_uint_eq(json_array_size(j), 0);
	json_decref(j);

	/* Bad requests. */
	gw_expect_error(gw_req(&E, "GET", "/auth/init?provider=gitlab", NULL, NULL, 0), 400,
			"provider");
	gw_expect_error(gw_req(&E, "GET", "/auth/init", NULL, NULL, 0), 400, "no provider");
	gw_expect_error(gw_req(&E, "GET", "/auth/cli/discord?state=x", NULL, NULL, 0), 400,
			"no code");
	gw_expect_error(gw_req(&E, "GET", "/auth/cli/discord?code=x&state=%25%25", NULL, NULL, 0),
			400, "bad state");
	gw_expect_error(gw_req(&E, "GET", "/auth/cli/gitlab?code=x&state=x", NULL, NULL, 0), 400,
			"bad provider");

	int status = gw_env_stop_gateway(&E);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	gw_assert_log_clean(&E);
	/* Codes, tokens and client secrets never reach the log. */
	char *log = NULL;
	size_t len = 0;
	ck_assert_int_eq(kb_read_file(E.log, 64 << 20, &log, &len), 0);
	const char *never[] = {"secret-XYZ", "tok-discord-SECRET", "tok-gh-SECRET",
			       "good-code", "gh-code", cli, cli2};
	for (size_t k = 0; k < sizeof(never) / sizeof(never[0]); k++)
		ck_assert_msg(!strstr(log, never[k]), "log holds %s", never[k]);
	free(log);
	MHD_stop_daemon(fake);
}
END_TEST

START_TEST(oauth_not_configured)
{
	char cli[64];

	gw_env_up(&E, 0, NULL);
	auth_init("discord", cli, sizeof(cli));
	gw_expect_error(auth_cli("discord", "any", cli, 0), 503, "not configured");
	int status = gw_env_stop_gateway(&E);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}
END_TEST

/* KB_OAUTH_REDIRECT_BASE unset: the default names the port the gateway
 * bound, also when KB_HTTP_PORT=0 had it pick one (not ":0"). */
START_TEST(default_redirect_names_the_bound_port)
{
	static const char *env[] = {
		env_discord, env_github, env_github_api,
		"KB_OAUTH_DISCORD_CLIENT_ID=disc-id",
		"KB_OAUTH_DISCORD_CLIENT_SECRET=disc-secret-XYZ", NULL};
	char cli[64];

	fake_up();
	E.extra_env = env;
	gw_env_up(&E, 0, NULL);
	snprintf(fake_redirect, sizeof(fake_redirect),
		 "http%%3A%%2F%%2F127.0.0.1%%3A%d", E.port);
	auth_init("discord", cli, sizeof(cli));
	json_decref(gw_expect_json(auth_cli("discord", "good-code", cli, 0), 200,
				   "auth/cli with the default redirect base"));
	int status = gw_env_stop_gateway(&E);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	MHD_stop_daemon(fake);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gateway_popcorn");
	TCase *tc = tcase_create("popcorn");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, popcorn_cli_session);
	tcase_add_test(tc, oauth_not_configured);
	tcase_add_test(tc, default_redirect_names_the_bound_port);
	suite_add_tcase(s, tc);
	return kb_check_run(s);
}
