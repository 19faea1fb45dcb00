/* popcorn-cli's exact request sequences against kb-gateway, with a fake
 * OAuth provider (fake_oauth.h) standing in for Discord and GitHub:
 *   registration   GET /auth/init?provider=P, the browser on the start
 *                  page (authorize_url + state), the provider's redirect
 *                  to GET /auth/cli/P?code&state (state = base64url JSON)
 *   browsing       GET /leaderboards, GET /gpus/{lb}
 *   submitting     POST /{lb}/{gpu}/{mode} (server-sent events), and
 *                  POST /submission/{lb}/{gpu}/{mode} + polling
 *                  GET /user/submissions/{id}
 *   listing        GET /user/submissions?leaderboard=X&limit=N
 *   joining        POST /user/join {"code"}
 * Each answer is checked for the fields popcorn-cli reads. */
#include <check.h>
#include <microhttpd.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_oauth.h"
#include "gw_env.h"
#include "gw_login.h"
#include "kb_util.h"
#include "kb_check_main.h"

#define CODE                                                                   \
	"#!POPCORN leaderboard gw_sum_cpu\n"                                   \
	"float custom_kernel(const float *d, unsigned long n) { return 0; }\n"

static struct gw_env E;
static struct gw_login L;

/* ---- popcorn-cli's steps ---- */

/* /auth/init, then the browser on the URL the CLI printed. */
static void auth_init(const char *provider, char *cli_id, size_t size)
{
	gw_login_begin(&E, provider, NULL, 0, &L);
	snprintf(cli_id, size, "%s", L.cli_id);
}

/* The provider's redirect back to the browser that began the last login. */
static struct gw_resp auth_cli(const char *provider, const char *code)
{
	return gw_login_finish(&E, provider, code, L.state, L.cookie);
}

START_TEST(popcorn_cli_session)
{
	char cli[64], cli2[64], gh_cli[64];
	json_t *j;

	struct fake_oauth *fake = fake_oauth_start();
	const char *env[16];
	int n = 0;
	for (const char *const *v = fake_oauth_env(fake); *v; v++)
		env[n++] = *v;
	env[n++] = "KB_AUTH_RATE_PER_MIN=0"; /* many logins from one address */
	env[n] = NULL;
	E.extra_env = env;
	gw_env_up(&E, 1, GW_ADMIN_TOKEN);
	gw_wait_consumer(&E);

	/* Registration through Discord. */
	auth_init("discord", cli, sizeof(cli));
	gw_expect_error(gw_req_cli(&E, "GET", "/user/submissions", cli, NULL),
			401, "CLI id before login");
	j = gw_expect_json(auth_cli("discord", "good-code"), 200, "auth/cli");
	ck_assert_str_eq(json_string_value(json_object_get(j, "status")),
			 "success");
	ck_assert_str_eq(json_string_value(json_object_get(j, "user_id")),
			 "discord-80351110224678912");
	ck_assert_str_eq(json_string_value(json_object_get(j, "user_name")),
			 "nelly");
	ck_assert(json_is_false(json_object_get(j, "is_reset")));
	ck_assert_ptr_nonnull(strstr(
		json_string_value(json_object_get(j, "message")), "discord"));
	json_decref(j);
	/* The same CLI id cannot be linked twice. */
	gw_expect_error(auth_cli("discord", "good-code"), 400, "state reused");

	/* Browsing. */
	j = gw_expect_json(gw_req_cli(&E, "GET", "/leaderboards", cli, NULL),
			   200, "boards");
	json_t *lb;
	size_t i;
	json_array_foreach(j, i, lb)
	{
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
	gw_produce_progress(&E, id, "CPU", KB__STAGE__STAGE_TESTING,
			    "worker-1");
	{
		Kb__Result res = KB__RESULT__INIT;
		Kb__RunResult run = KB__RUN_RESULT__INIT, *rp[1] = {&run};
		Kb__KeyValue kv[3] = {KB__KEY_VALUE__INIT, KB__KEY_VALUE__INIT,
				      KB__KEY_VALUE__INIT};
		Kb__KeyValue *kvp[3] = {&kv[0], &kv[1], &kv[2]};
		Kb__ResultEvent ev = KB__RESULT_EVENT__INIT;
		kv[0].key = "test-count";
		kv[0].value = "1";
		kv[1].key = "test.0.spec";
		kv[1].value = "size: 16; seed: 1";
		kv[2].key = "test.0.status";
		kv[2].value = "pass";
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
		rr = redisCommand(
			E.rc,
			"HSET kb:sub:%llu status done stage done verdict passed "
			"done_ms 1",
			(unsigned long long)id);
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
	ck_assert_str_eq(
		json_string_value(json_object_get(
			json_object_get(
				json_object_get(
					json_object_get(
						json_array_get(
							json_object_get(
								res, "results"),
							0),
						"runs"),
					"test"),
				"run"),
			"stdout")),
		"hello from the test run\n");
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
	snprintf(path, sizeof(path), "/user/submissions/%llu",
		 (unsigned long long)id);
	j = gw_expect_json(gw_req_cli(&E, "GET", path, cli, NULL), 200, "poll");
	ck_assert_int_eq(json_integer_value(json_object_get(j, "id")),
			 (json_int_t)id);
	ck_assert(json_is_integer(json_object_get(j, "leaderboard_id")));
	ck_assert_str_eq(
		json_string_value(json_object_get(j, "leaderboard_name")),
		"gw_sum_cpu");
	ck_assert_str_eq(json_string_value(json_object_get(j, "file_name")),
			 "submission.c");
	ck_assert_str_eq(json_string_value(json_object_get(j, "user_id")),
			 "discord-80351110224678912");
	ck_assert(json_is_string(json_object_get(j, "submission_time")));
	ck_assert(json_is_true(json_object_get(j, "done")));
	ck_assert_str_eq(json_string_value(json_object_get(j, "code")), CODE);
	ck_assert_str_eq(json_string_value(json_object_get(
				 json_object_get(j, "job"), "status")),
			 "succeeded");
	json_t *run0 = json_array_get(json_object_get(j, "runs"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(run0, "mode")),
			 "test");
	ck_assert(json_is_false(json_object_get(run0, "secret")));
	ck_assert_str_eq(json_string_value(json_object_get(run0, "runner")),
			 "CPU");
	ck_assert(json_is_true(json_object_get(run0, "passed")));
	ck_assert_str_eq(
		json_string_value(json_object_get(
			json_object_get(run0, "result"), "test.0.status")),
		"pass");
	ck_assert(json_object_get(j, "runner_queue") != NULL);
	json_decref(j);

	/* The background endpoint: 202, then a pending poll. */
	j = gw_expect_json(gw_submit(&E, "/submission/gw_sum_cpu/CPU/test", cli,
				     CODE),
			   202, "background");
	ck_assert_str_eq(json_string_value(json_object_get(j, "status")),
			 "accepted");
	json_int_t id2 = json_integer_value(
		json_object_get(json_object_get(j, "details"), "id"));
	json_decref(j);
	snprintf(path, sizeof(path), "/user/submissions/%lld", (long long)id2);
	j = gw_expect_json(gw_req_cli(&E, "GET", path, cli, NULL), 200,
			   "pending poll");
	ck_assert(json_is_false(json_object_get(j, "done")));
	ck_assert_str_eq(json_string_value(json_object_get(
				 json_object_get(j, "job"), "status")),
			 "pending");
	json_decref(j);

	/* Listing, as `popcorn submissions list`. */
	j = gw_expect_json(
		gw_req_cli(&E, "GET",
			   "/user/submissions?leaderboard=gw_sum_cpu&limit=10",
			   cli, NULL),
		200, "list");
	ck_assert_uint_eq(json_array_size(j), 2);
	json_t *it = json_array_get(j, 1);
	ck_assert_int_eq(json_integer_value(json_object_get(it, "id")),
			 (json_int_t)id);
	ck_assert(json_is_true(json_object_get(it, "done")));
	ck_assert_str_eq(json_string_value(json_object_get(
				 json_array_get(json_object_get(it, "runs"), 0),
				 "gpu_type")),
			 "CPU");
	json_decref(j);

	/* Joining a closed board with an invite. */
	j = gw_expect_json(
		gw_req_admin(&E, "POST", "/admin/invites",
			     "{\"leaderboard\":\"gw_gpu_only\",\"count\":1}"),
		200, "invite");
	char body2[128];
	snprintf(body2, sizeof(body2), "{\"code\":\"%s\"}",
		 json_string_value(
			 json_array_get(json_object_get(j, "codes"), 0)));
	json_decref(j);
	j = gw_expect_json(gw_req_cli(&E, "POST", "/user/join", cli, body2),
			   200, "join");
	ck_assert_str_eq(json_string_value(json_object_get(j, "status")), "ok");
	ck_assert_str_eq(json_string_value(json_array_get(
				 json_object_get(j, "leaderboards"), 0)),
			 "gw_gpu_only");
	json_decref(j);

	/* Logging in again with reset moves the account to a new CLI id. */
	char path2[300], state[300];
	gw_login_state("never-issued", 0, state, sizeof(state));
	snprintf(path2, sizeof(path2), "/auth/start/discord?state=%s", state);
	gw_expect_error(gw_req(&E, "GET", path2, NULL, NULL, 0), 400,
			"CLI id not from /auth/init");
	auth_init("discord", cli2, sizeof(cli2));
	gw_expect_error(auth_cli("discord", "good-code-2"), 409,
			"second account");
	/* A reset is asked for with the current CLI id. */
	gw_login_begin(&E, "discord", cli, 1, &L);
	snprintf(cli2, sizeof(cli2), "%s", L.cli_id);
	j = gw_expect_json(auth_cli("discord", "good-code-2"), 200, "reset");
	ck_assert(json_is_true(json_object_get(j, "is_reset")));
	json_decref(j);
	gw_expect_error(gw_req_cli(&E, "GET", path, cli, NULL), 401,
			"old CLI id");
	j = gw_expect_json(gw_req_cli(&E, "GET", path, cli2, NULL), 200,
			   "new CLI id");
	json_decref(j);

	/* GitHub: a user of its own. */
	auth_init("github", gh_cli, sizeof(gh_cli));
	gw_expect_error(auth_cli("github", "wrong"), 401, "code refused");
	auth_init("github", gh_cli, sizeof(gh_cli));
	gw_expect_error(auth_cli("discord", "good-code"), 400,
			"other provider");
	j = gw_expect_json(auth_cli("github", "gh-code"), 200, "github");
	ck_assert_str_eq(json_string_value(json_object_get(j, "user_id")),
			 "github-583231");
	ck_assert_str_eq(json_string_value(json_object_get(j, "user_name")),
			 "octocat");
	json_decref(j);
	j = gw_expect_json(gw_req_cli(&E, "GET", "/user/submissions", gh_cli,
				      NULL),
			   200, "github user's list");
	ck_assert_uint_eq(json_array_size(j), 0);
	json_decref(j);

	/* Bad requests. */
	gw_expect_error(gw_req(&E, "GET", "/auth/init?provider=gitlab", NULL,
			       NULL, 0),
			400, "provider");
	gw_expect_error(gw_req(&E, "GET", "/auth/init", NULL, NULL, 0), 400,
			"no provider");
	gw_expect_error(gw_req(&E, "GET", "/auth/cli/discord?state=x", NULL,
			       NULL, 0),
			400, "no code");
	gw_expect_error(gw_req(&E, "GET",
			       "/auth/cli/discord?code=x&state=%25%25", NULL,
			       NULL, 0),
			400, "bad state");
	gw_expect_error(gw_req(&E, "GET", "/auth/cli/gitlab?code=x&state=x",
			       NULL, NULL, 0),
			400, "bad provider");

	int status = gw_env_stop_gateway(&E);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	gw_assert_log_clean(&E);
	/* Codes, tokens and client secrets never reach the log. */
	char *log = NULL;
	size_t len = 0;
	ck_assert_int_eq(kb_read_file(E.log, 64 << 20, &log, &len), 0);
	const char *never[] = {"secret-XYZ",
			       "tok-discord-SECRET",
			       "tok-gh-SECRET",
			       "good-code",
			       "gh-code",
			       cli,
			       cli2};
	for (size_t k = 0; k < sizeof(never) / sizeof(never[0]); k++)
		ck_assert_msg(!strstr(log, never[k]), "log holds %s", never[k]);
	free(log);
	fake_oauth_stop(fake);
}
END_TEST

START_TEST(oauth_not_configured)
{
	char state[300], path[400];

	/* No provider: the login routes do not exist, and nothing is stored. */
	gw_env_up(&E, 0, NULL);
	gw_expect_error(gw_req(&E, "GET", "/auth/init?provider=discord", NULL,
			       NULL, 0),
			404, "init");
	gw_login_state("any", 0, state, sizeof(state));
	snprintf(path, sizeof(path), "/auth/cli/discord?code=any&state=%s",
		 state);
	gw_expect_error(gw_req(&E, "GET", path, NULL, NULL, 0), 404,
			"callback");
	ck_assert_int_eq(gw_count_keys(&E, "kb:clipending:*"), 0);
	int status = gw_env_stop_gateway(&E);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}
END_TEST

/* KB_OAUTH_REDIRECT_BASE unset: the default names the port the gateway
 * bound, also when KB_HTTP_PORT=0 had it pick one (not ":0"). */
START_TEST(default_redirect_names_the_bound_port)
{
	struct fake_oauth *fake = fake_oauth_start();
	const char *env[16];
	char want[96];
	int n = 0;

	for (const char *const *v = fake_oauth_env(fake); *v; v++)
		if (strncmp(*v, "KB_OAUTH_REDIRECT_BASE=", 23) != 0)
			env[n++] = *v;
	env[n] = NULL;
	E.extra_env = env;
	gw_env_up(&E, 0, NULL);
	json_t *j = gw_expect_json(
		gw_req(&E, "GET", "/auth/init?provider=discord", NULL, NULL, 0),
		200, "auth/init");
	const char *url =
		json_string_value(json_object_get(j, "authorize_url"));
	snprintf(want, sizeof(want), "http://127.0.0.1:%d/auth/start/discord",
		 E.port);
	ck_assert_int_gt(E.port, 0);
	ck_assert_str_eq(url, want);
	json_decref(j);
	int status = gw_env_stop_gateway(&E);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	fake_oauth_stop(fake);
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
