/* The gateway's side of sealed runs (issue 14), one attack per test, each
 * against a real kb-gateway: what a submitter could learn of a board's
 * secret (the seed a ranked run gets, the secret run's outcome details,
 * its stage times), an OAuth login finished in a victim's browser, the
 * load one client address or one user can put on a public gateway, and a
 * board re-created under a deleted board's name. */
#include <arpa/inet.h>
#include <check.h>
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/seed.h"
#include "fake_oauth.h"
#include "gw_env.h"
#include "gw_login.h"
#include "kb_check_main.h"
#include "kb_kafka.h"
#include "kb_util.h"

#define CODE                                                                   \
	"float custom_kernel(const float *d, unsigned long n) { return 0; }\n"
#define CODE2                                                                  \
	"float custom_kernel(const float *d, unsigned long n) { return 1; }\n"

static struct gw_env E;

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* extra_env of the gateway: a then b (both NULL-terminated, either NULL). */
static const char *env_buf[40];
static const char *const *env_join(const char *const *a, const char *const *b)
{
	int n = 0;

	for (int i = 0; a && a[i] && n < 39; i++)
		env_buf[n++] = a[i];
	for (int i = 0; b && b[i] && n < 39; i++)
		env_buf[n++] = b[i];
	env_buf[n] = NULL;
	return env_buf;
}

static long long redis_int(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	redisReply *r = redisvCommand(E.rc, fmt, ap);
	va_end(ap);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(r->type, REDIS_REPLY_INTEGER);
	long long v = r->integer;
	freeReplyObject(r);
	return v;
}

/* ---- secret seeds ---- */

/* Reads kb.submissions.CPU until the Submissions of the n ids came. */
static void consume(const long *ids, Kb__Submission **out, int n)
{
	const char *topics[] = {"kb.submissions.CPU"};
	char err[256], group[64];
	int found = 0;

	snprintf(group, sizeof(group), "gw-sec-%d", getpid());
	kb_consumer *c = kb_consumer_new(E.brokers, group, topics, 1, NULL, err,
					 sizeof(err));
	ck_assert_msg(c != NULL, "consumer: %s", err);
	for (int i = 0; i < n; i++)
		out[i] = NULL;
	for (double end = kb_mono_s() + 60; kb_mono_s() < end && found < n;) {
		kb_message m;
		if (kb_consumer_poll(c, 200, &m) != 1)
			continue;
		Kb__Submission *s =
			kb__submission__unpack(NULL, m.value_len, m.value);
		ck_assert_ptr_nonnull(s);
		for (int i = 0; i < n; i++)
			if ((long)s->id == ids[i] && !out[i]) {
				out[i] = s;
				found++;
				s = NULL;
				break;
			}
		if (s)
			kb__submission__free_unpacked(s, NULL);
		kb_message_release(&m);
	}
	kb_consumer_destroy(c);
	ck_assert_msg(found == n,
		      "only %d of %d Submissions on kb.submissions.CPU", found,
		      n);
}

START_TEST(seeds_per_submission)
{
	char cli[80], uid[40];
	uint64_t board;
	long ids[3];
	Kb__Submission *s[3];

	gw_env_up(&E, 1, GW_ADMIN_TOKEN);
	gw_create_user(&E, "alice", cli, uid);
	board = strtoull(E.seeds[0], NULL, 10);
	ids[0] = gw_accepted(gw_submit(
		&E, "/submission/gw_sum_cpu/CPU/leaderboard", cli, CODE));
	ids[1] = gw_accepted(gw_submit(
		&E, "/submission/gw_sum_cpu/CPU/leaderboard", cli, CODE));
	ids[2] = gw_accepted(
		gw_submit(&E, "/submission/gw_sum_cpu/CPU/test", cli, CODE));
	consume(ids, s, 3);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(s[i]->has_secret_seed, 1);
		ck_assert_msg(s[i]->secret_seed != board,
			      "Submission %ld carries the board's own secret",
			      ids[i]);
		ck_assert_msg(s[i]->secret_seed ==
				      kb_gw_seed_derive(board, "gw_sum_cpu",
							(uint64_t)ids[i]),
			      "Submission %ld: seed is not the derived one",
			      ids[i]);
	}
	ck_assert(s[0]->secret_seed != s[1]->secret_seed);
	/* Unranked runs get no secret at all. */
	ck_assert_int_eq(s[2]->has_secret_seed, 0);
	ck_assert(s[2]->secret_seed == 0);
	for (int i = 0; i < 3; i++)
		kb__submission__free_unpacked(s[i], NULL);
	gw_stop_clean(&E);
}
END_TEST

/* ---- the secret run's side channel ---- */

static void produce_stage(uint64_t id, Kb__Stage stage, int64_t elapsed_ms,
			  const char *worker)
{
	Kb__Progress pr = KB__PROGRESS__INIT;
	Kb__ResultEvent ev = KB__RESULT_EVENT__INIT;

	pr.stage = stage;
	pr.message = "working";
	pr.elapsed_ms = elapsed_ms;
	pr.worker = (char *)worker;
	ev.submission_id = id;
	ev.gpu = "CPU";
	ev.event_case = KB__RESULT_EVENT__EVENT_PROGRESS;
	ev.progress = &pr;
	gw_produce_event(&E, &ev);
}

/* A ranked Result whose secret run failed in a way that must not show:
 * its duration, exit status, timeout and signal. */
static uint8_t *secret_failure(uint64_t id, size_t *len)
{
	Kb__Result res = KB__RESULT__INIT;
	Kb__RunResult runs[2], *rp[2] = {&runs[0], &runs[1]};
	Kb__RunResult init = KB__RUN_RESULT__INIT;

	runs[0] = runs[1] = init;
	runs[0].key = "leaderboard";
	runs[0].success = runs[0].passed = 1;
	runs[0].duration_s = 0.5;
	runs[1].key = "private";
	runs[1].duration_s = 7.25;
	runs[1].exit_code = 113;
	runs[1].timed_out = 1;
	runs[1].signal = 9;
	res.submission_id = id;
	res.leaderboard = "gw_sum_cpu";
	res.gpu = "CPU";
	res.mode = KB__MODE__MODE_LEADERBOARD;
	res.user_id = "u";
	res.n_runs = 2;
	res.runs = rp;
	res.verdict = KB__VERDICT__VERDICT_FAILED;
	res.worker = "worker-1";
	*len = kb__result__get_packed_size(&res);
	uint8_t *buf = malloc(*len);
	kb__result__pack(&res, buf);
	return buf;
}

static void assert_private_run_hidden(json_t *run, const char *where)
{
	ck_assert_msg(json_is_object(run), "%s: no private run", where);
	json_t *d = json_object_get(run, "duration");
	ck_assert_msg(!d || json_is_null(d) || json_number_value(d) == 0,
		      "%s: the secret run's duration shows", where);
	json_t *x = json_object_get(run, "exit_code");
	ck_assert_msg(!x || json_is_null(x) || json_integer_value(x) == 0,
		      "%s: the secret run's exit code shows", where);
	ck_assert_msg(!json_is_true(json_object_get(run, "timed_out")),
		      "%s: the secret run's timeout shows", where);
	ck_assert(json_is_false(json_object_get(run, "passed")));
}

START_TEST(secret_run_side_channel)
{
	char cli[80], uid[40], path[64], *body = NULL;
	size_t len;

	gw_env_up(&E, 1, GW_ADMIN_TOKEN);
	gw_wait_consumer(&E);
	gw_create_user(&E, "alice", cli, uid);
	struct gw_sse *s =
		gw_sse_start(&E, "/gw_sum_cpu/CPU/leaderboard", cli, CODE);
	ck_assert(gw_sse_wait(s, "event: status", 15000) == 0);
	uint64_t id = gw_sse_id(s);
	/* gw_wait_consumer saw the gateway's consumer read: said once is
	 * enough. */
	produce_stage(id, KB__STAGE__STAGE_RANKED_RUN, 1111, "worker-1");
	ck_assert_msg(gw_sse_wait(s, "\"stage\":\"ranked_run\"", 20000) == 0,
		      "no ranked_run event");
	/* The worker says when its secret run starts: nobody else may hear.
	 * (Another worker name, to see when the gateway has read it.) */
	produce_stage(id, KB__STAGE__STAGE_SECRET_RUN, 4321, "worker-2");
	for (int waited = 0;; waited += 100) {
		struct gw_resp q =
			gw_req(&E, "GET", "/runner_queue/CPU", NULL, NULL, 0);
		ck_assert_int_eq(q.code, 200);
		ck_assert_msg(!strstr(q.body, "secret"),
			      "runner_queue shows the secret run: %s", q.body);
		int read = strstr(q.body, "worker-2") != NULL;
		gw_resp_free(&q);
		if (read)
			break;
		ck_assert_msg(waited < 15000,
			      "the secret run's event never arrived");
		sleep_ms(100);
	}
	uint8_t *buf = secret_failure(id, &len);
	Kb__Result *r = kb__result__unpack(NULL, len, buf);
	gw_produce_result(&E, id, "CPU", r);
	kb__result__free_unpacked(r, NULL);
	ck_assert_int_eq(gw_sse_finish(s, &body, NULL), 200);
	ck_assert_msg(!strstr(body, "secret_run") && !strstr(body, "4321"),
		      "the stream shows the secret run's start: %s", body);
	const char *p = strstr(body, "event: result\ndata: ");
	ck_assert_msg(p != NULL, "%s", body);
	p += strlen("event: result\ndata: ");
	json_t *res = json_loadb(p, strcspn(p, "\n"), 0, NULL);
	ck_assert_ptr_nonnull(res);
	json_t *full = json_array_get(json_object_get(res, "results"), 0);
	assert_private_run_hidden(
		json_object_get(json_object_get(json_object_get(full, "runs"),
						"private"),
				"run"),
		"SSE result");
	const char *report = json_string_value(
		json_array_get(json_object_get(res, "reports"), 0));
	ck_assert_ptr_nonnull(report);
	ck_assert_msg(!strstr(report, "7.25") && !strstr(report, "113") &&
			      !strstr(report, "signal"),
		      "report: %s", report);
	json_decref(res);
	free(body);

	/* The stored result, as the owner polls it. */
	gw_redis_do(&E, "SET kb:res:%" PRIu64 ":CPU %b", id, buf, len);
	gw_redis_do(&E,
		    "HSET kb:sub:%" PRIu64
		    " status done verdict failed done_ms 1",
		    id);
	free(buf);
	snprintf(path, sizeof(path), "/user/submissions/%" PRIu64, id);
	json_t *j = gw_expect_json(gw_req_cli(&E, "GET", path, cli, NULL), 200,
				   "poll");
	json_t *row, *secret = NULL;
	size_t i;
	json_array_foreach(
		json_object_get(j, "runs"), i,
		row) if (json_is_true(json_object_get(row, "secret")))
		secret = row;
	assert_private_run_hidden(secret, "GET /user/submissions/{id}");
	report = json_string_value(json_object_get(j, "report"));
	ck_assert_msg(report && !strstr(report, "7.25"), "report: %s", report);
	json_decref(j);
	gw_stop_clean(&E);
}
END_TEST

/* ---- logins (OAuth) ---- */

static long auth_status(const char *cli)
{
	struct gw_resp r =
		gw_req_cli(&E, "GET", "/user/submissions", cli, NULL);
	long code = r.code;
	gw_resp_free(&r);
	return code;
}

/* A gateway with the fake provider; more settings override the rest (the
 * tests here make more logins from one address than the default rate). */
static struct fake_oauth *oauth_up(const char *const *more)
{
	static const char *const no_rate[] = {"KB_AUTH_RATE_PER_MIN=0", NULL};
	const char *env[40];
	int n = 0;
	struct fake_oauth *f = fake_oauth_start();

	for (const char *const *v = env_join(fake_oauth_env(f), no_rate); *v;
	     v++)
		env[n++] = *v;
	env[n] = NULL;
	E.extra_env = env_join(env, more);
	gw_env_up(&E, 1, GW_ADMIN_TOKEN);
	return f;
}

START_TEST(login_takeover)
{
	struct gw_login atk, mine;
	char victim_cli[] = "victim-cli-0123456789abcdef";

	struct fake_oauth *f = oauth_up(NULL);
	/* Nelly has an account with a CLI id. */
	gw_redis_do(
		&E,
		"HSET kb:user:%s name nelly cli_id %s created_ms 1 banned 0 provider discord",
		FAKE_OAUTH_NELLY, victim_cli);
	gw_redis_do(&E, "SET kb:cli:%s %s", victim_cli, FAKE_OAUTH_NELLY);
	gw_redis_do(&E, "SADD kb:users %s", FAKE_OAUTH_NELLY);
	ck_assert_int_eq(auth_status(victim_cli), 200);

	/* Mallory starts a reset login and sends nelly the provider's link:
	 * her browser comes back with a code for her account and mallory's
	 * state, but without the cookie of the browser that started it. */
	gw_login_begin(&E, "discord", NULL, 1, &atk);
	struct gw_resp r =
		gw_login_finish(&E, "discord", "good-code", atk.state, NULL);
	ck_assert_msg(
		r.code >= 400 && r.code < 500,
		"a login finished in another browser was accepted: HTTP %ld %s",
		r.code, r.body);
	gw_resp_free(&r);
	ck_assert_int_eq(auth_status(atk.cli_id), 401);
	ck_assert_int_eq(auth_status(victim_cli), 200);

	/* Mallory sends nelly the start page itself. Her browser then holds
	 * a cookie of its own, but a reset needs the old CLI id, which only
	 * nelly has; and without reset an account that has a CLI id keeps it. */
	for (int reset = 1; reset >= 0; reset--) {
		gw_login_begin(&E, "discord", NULL, reset, &atk);
		r = gw_login_finish(&E, "discord", "good-code", atk.state,
				    atk.cookie);
		ck_assert_msg(r.code == (reset ? 403 : 409),
			      "reset=%d: HTTP %ld %s", reset, r.code, r.body);
		gw_resp_free(&r);
		ck_assert_int_eq(auth_status(atk.cli_id), 401);
		ck_assert_int_eq(auth_status(victim_cli), 200);
	}

	/* Mallory proves her own identity: a reset of nelly's account still
	 * needs nelly's old CLI id, not any valid one. */
	gw_redis_do(
		&E,
		"HSET kb:user:%s name mallory cli_id mallory-cli-0123456789 created_ms 1 "
		"banned 0",
		FAKE_OAUTH_MALLORY);
	gw_redis_do(&E, "SET kb:cli:mallory-cli-0123456789 %s",
		    FAKE_OAUTH_MALLORY);
	gw_login_begin(&E, "discord", "mallory-cli-0123456789", 1, &atk);
	r = gw_login_finish(&E, "discord", "good-code", atk.state, atk.cookie);
	ck_assert_msg(r.code == 403,
		      "reset with another account's id: HTTP %ld %s", r.code,
		      r.body);
	gw_resp_free(&r);
	ck_assert_int_eq(auth_status(victim_cli), 200);

	/* Nelly's own reset, with her old id, works; then the old id is dead. */
	gw_login_begin(&E, "discord", victim_cli, 1, &mine);
	json_t *j = gw_expect_json(gw_login_finish(&E, "discord", "good-code",
						   mine.state, mine.cookie),
				   200, "nelly's reset");
	ck_assert(json_is_true(json_object_get(j, "is_reset")));
	json_decref(j);
	ck_assert_int_eq(auth_status(mine.cli_id), 200);
	ck_assert_int_eq(auth_status(victim_cli), 401);
	/* A state is good for one callback only. */
	r = gw_login_finish(&E, "discord", "good-code", mine.state,
			    mine.cookie);
	ck_assert_int_ge(r.code, 400);
	gw_resp_free(&r);

	/* A lost id: an admin takes the account's away, and a plain login
	 * then links a new one. */
	json_decref(gw_expect_json(
		gw_req_admin(&E, "DELETE",
			     "/admin/users/" FAKE_OAUTH_NELLY "/cli-id", NULL),
		200, "clear the CLI id"));
	ck_assert_int_eq(auth_status(mine.cli_id), 401);
	gw_login_begin(&E, "discord", NULL, 0, &mine);
	json_decref(gw_expect_json(gw_login_finish(&E, "discord", "good-code",
						   mine.state, mine.cookie),
				   200, "login after the clear"));
	ck_assert_int_eq(auth_status(mine.cli_id), 200);
	gw_expect_error(gw_req_admin(&E, "DELETE", "/admin/users/nobody/cli-id",
				     NULL),
			404, "clear a missing user");
	gw_stop_clean(&E);
	fake_oauth_stop(f);
}
END_TEST

START_TEST(login_checked_before_provider)
{
	struct gw_login l;
	char state[300];

	struct fake_oauth *f = oauth_up(NULL);
	/* An id /auth/init never issued: refused before the provider hears
	 * anything. */
	gw_login_state("never-issued-0123", 0, state, sizeof(state));
	struct gw_resp r = gw_login_finish(&E, "discord", "good-code", state,
					   "kb_login_x=nonce");
	ck_assert_int_ge(r.code, 400);
	gw_resp_free(&r);
	/* An issued one, in a browser without the start page's cookie or
	 * with another: the same. */
	gw_login_begin(&E, "discord", NULL, 0, &l);
	r = gw_login_finish(&E, "discord", "good-code", l.state, NULL);
	ck_assert_int_ge(r.code, 400);
	gw_resp_free(&r);
	r = gw_login_finish(&E, "discord", "good-code", l.state,
			    "kb_login_x=0000");
	ck_assert_int_ge(r.code, 400);
	gw_resp_free(&r);
	ck_assert_msg(fake_oauth_token_calls(f) == 0,
		      "the provider was called %ld times for refused logins",
		      fake_oauth_token_calls(f));
	gw_stop_clean(&E);
	fake_oauth_stop(f);
}
END_TEST

START_TEST(auth_off_without_provider)
{
	gw_env_up(&E, 0, NULL);
	for (int i = 0; i < 20; i++) {
		struct gw_resp r = gw_req(&E, "GET",
					  "/auth/init?provider=discord", NULL,
					  NULL, 0);
		ck_assert_msg(r.code == 404 || r.code == 503, "HTTP %ld %s",
			      r.code, r.body);
		gw_resp_free(&r);
	}
	ck_assert_int_eq(gw_count_keys(&E, "kb:clipending:*"), 0);
	struct gw_resp r = gw_req(&E, "GET",
				  "/auth/cli/discord?code=x&state=eyJ9", NULL,
				  NULL, 0);
	ck_assert_msg(r.code == 404 || r.code == 503, "HTTP %ld %s", r.code,
		      r.body);
	gw_resp_free(&r);
	gw_stop_clean(&E);
}
END_TEST

START_TEST(auth_rate_limited_per_address)
{
	const char *const more[] = {"KB_AUTH_RATE_PER_MIN=5", NULL};
	long codes[8];

	struct fake_oauth *f = oauth_up(more);
	for (int i = 0; i < 8; i++) {
		struct gw_resp r = gw_req(&E, "GET",
					  "/auth/init?provider=discord", NULL,
					  NULL, 0);
		codes[i] = r.code;
		if (r.code == 429)
			ck_assert_ptr_nonnull(strstr(r.headers, "Retry-After"));
		gw_resp_free(&r);
	}
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(codes[i], 200);
	for (int i = 5; i < 8; i++)
		ck_assert_msg(codes[i] == 429,
			      "request %d from one address: HTTP %ld", i,
			      codes[i]);
	ck_assert_int_eq(gw_count_keys(&E, "kb:clipending:*"), 5);
	gw_stop_clean(&E);
	fake_oauth_stop(f);
}
END_TEST

/* A login that waits on a slow provider in a thread of its own. */
struct slow_login {
	struct gw_login l;
	long code;
	pthread_t th;
};

static void *slow_login_main(void *arg)
{
	struct slow_login *s = arg;
	struct gw_resp r = gw_login_finish(&E, "discord", "mallory-code",
					   s->l.state, s->l.cookie);
	s->code = r.code;
	gw_resp_free(&r);
	return NULL;
}

START_TEST(logins_cannot_delay_submissions)
{
	/* One thread for Kafka deliveries: a login that took it would hold
	 * every submission behind the provider. */
	/* The provider's answer is awaited 60 s, longer than the fake holds
	 * it (30 s) and than the submission may take (25 s): a submission
	 * held behind the logins cannot get through by their timing out. */
	const char *const more[] = {"KB_POOL_THREADS=1",
				    "KB_AUTH_POOL_THREADS=1",
				    "KB_OAUTH_TIMEOUT_MS=60000", NULL};
	struct slow_login s[3];
	char cli[80], uid[40];

	struct fake_oauth *f = oauth_up(more);
	gw_create_user(&E, "alice", cli, uid);
	fake_oauth_hold(f, 1);
	for (int i = 0; i < 3; i++) {
		gw_login_begin(&E, "discord", NULL, 0, &s[i].l);
		ck_assert_int_eq(pthread_create(&s[i].th, NULL, slow_login_main,
						&s[i]),
				 0);
	}
	for (int waited = 0; fake_oauth_token_calls(f) < 1; waited += 20) {
		ck_assert_msg(waited < 30000, "no login reached the provider");
		sleep_ms(20);
	}
	/* The provider holds every login; a submission goes through. */
	CURL *c = curl_easy_init();
	curl_mime *mime = curl_mime_init(c);
	curl_mimepart *part = curl_mime_addpart(mime);
	struct curl_slist *h = NULL;
	char url[200], hdr[160];
	long code = 0;
	curl_mime_name(part, "file");
	curl_mime_filename(part, "submission.c");
	curl_mime_data(part, CODE, CURL_ZERO_TERMINATED);
	snprintf(hdr, sizeof(hdr), "X-Popcorn-Cli-Id: %s", cli);
	h = curl_slist_append(h, hdr);
	snprintf(url, sizeof(url), "%s/submission/gw_sum_cpu/CPU/test", E.api);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_MIMEPOST, mime);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 25000L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, fwrite);
	FILE *devnull = fopen("/dev/null", "w");
	curl_easy_setopt(c, CURLOPT_WRITEDATA, devnull);
	CURLcode cr = curl_easy_perform(c);
	if (cr == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	fclose(devnull);
	curl_mime_free(mime);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	ck_assert_msg(cr == CURLE_OK && code == 202,
		      "a submission waited for the logins: %s, HTTP %ld",
		      curl_easy_strerror(cr), code);
	fake_oauth_hold(f, 0);
	for (int i = 0; i < 3; i++)
		pthread_join(s[i].th, NULL);
	gw_stop_clean(&E);
	fake_oauth_stop(f);
}
END_TEST

/* ---- one user's load ---- */

START_TEST(queued_jobs_capped)
{
	const char *const more[] = {"KB_MAX_QUEUED_PER_GPU=3", NULL};
	char cli[80], uid[40], bob[80], bob_id[40];
	long ids[3];

	E.extra_env = more;
	gw_env_up(&E, 1, GW_ADMIN_TOKEN);
	gw_create_user(&E, "alice", cli, uid);
	gw_create_user(&E, "bob", bob, bob_id);
	for (int i = 0; i < 3; i++)
		ids[i] = gw_accepted(gw_submit(
			&E, "/submission/gw_sum_cpu/CPU/test", cli, CODE));
	struct gw_resp r = gw_submit(
		&E, "/submission/gw_sum_cpu/CPU/leaderboard", cli, CODE);
	ck_assert_msg(r.code == 429, "a 4th unfinished job: HTTP %ld %s",
		      r.code, r.body);
	json_t *j = gw_json(&r);
	const char *detail = json_string_value(json_object_get(j, "detail"));
	ck_assert_msg(detail && strstr(detail, "3") && strstr(detail, "CPU"),
		      "%s", r.body);
	json_decref(j);
	gw_resp_free(&r);
	/* Other users are not held up. */
	gw_accepted(
		gw_submit(&E, "/submission/gw_sum_cpu/CPU/test", bob, CODE));
	/* A finished job frees its slot; so does a failed one. */
	gw_redis_do(&E, "HSET kb:sub:%ld status done", ids[0]);
	gw_accepted(
		gw_submit(&E, "/submission/gw_sum_cpu/CPU/test", cli, CODE));
	gw_expect_error(gw_submit(&E, "/submission/gw_sum_cpu/CPU/test", cli,
				  CODE),
			429, "full again");
	gw_redis_do(&E, "HSET kb:sub:%ld status failed", ids[1]);
	gw_accepted(
		gw_submit(&E, "/submission/gw_sum_cpu/CPU/test", cli, CODE));
	gw_stop_clean(&E);
}
END_TEST

START_TEST(streams_capped_per_user)
{
	const char *const more[] = {"KB_SSE_MAX_PER_USER=2", NULL};
	char cli[80], uid[40], *body = NULL;
	struct gw_sse *s[3];

	E.extra_env = more;
	gw_env_up(&E, 1, GW_ADMIN_TOKEN);
	gw_create_user(&E, "alice", cli, uid);
	for (int i = 0; i < 2; i++) {
		s[i] = gw_sse_start(&E, "/gw_sum_cpu/CPU/test", cli, CODE);
		ck_assert(gw_sse_wait(s[i], "event: status", 15000) == 0);
	}
	s[2] = gw_sse_start(&E, "/gw_sum_cpu/CPU/test", cli, CODE);
	long code = gw_sse_finish(s[2], &body, NULL);
	ck_assert_msg(code == 429, "a third stream: HTTP %ld %s", code, body);
	free(body);
	/* Its submission was refused before it was made. */
	ck_assert_int_eq(gw_count_keys(&E, "kb:sub:*"), 2);
	gw_stop_clean(&E); /* ends the two open streams */
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(gw_sse_finish(s[i], &body, NULL), 200);
		free(body);
	}
}
END_TEST

/* ---- one client address's load ---- */

static int tcp_connect(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

/* 1 when the server answers a request on fd within 20 s (a refused
 * connection is closed at once, so the wait is only for a slow answer). */
static int answers(int fd)
{
	static const char req[] = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
	char buf[256];
	struct pollfd p = {.fd = fd, .events = POLLIN};

	if (send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) < 0)
		return 0;
	if (poll(&p, 1, 20000) != 1)
		return 0;
	ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);
	return n > 0;
}

/* Opens connections one by one, each asked to answer before the next is
 * opened, until one is refused or max are open. Returns how many were
 * served; the open ones are in fds, *n of them. */
static int serve_until_refused(int port, int *fds, int max, int *n)
{
	int served = 0;

	for (*n = 0; *n < max;) {
		fds[*n] = tcp_connect(port);
		if (!answers(fds[(*n)++]))
			break;
		served++;
	}
	return served;
}

static void close_all(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

START_TEST(connections_per_address)
{
	const char *const more[] = {"KB_HTTP_PER_IP_CONNECTIONS=4", NULL};
	int fds[6], n = 0, served = 0;

	E.extra_env = more;
	gw_env_up(&E, 0, GW_ADMIN_TOKEN);
	/* A connection closed just before (the start-up health checks) keeps
	 * its place until the pool thread that owned it sees the close, so
	 * a round can start with fewer than four places free: then the test
	 * waits and tries again. More than four served fails at once. */
	for (int waited = 0; waited < 30000; waited += 200) {
		served = serve_until_refused(E.port, fds, 6, &n);
		if (served >= 4)
			break;
		close_all(fds, n);
		n = 0;
		sleep_ms(200);
	}
	ck_assert_msg(
		served == 4,
		"%d connections from one address served at once (limit 4)",
		served);
	ck_assert_msg(n == 5, "the 5th connection was not the refused one");
	/* The served ones still are (keep-alive). */
	ck_assert(answers(fds[0]));
	close_all(fds, n);
	/* Closed ones free their places. */
	long code = 0;
	for (int waited = 0; code != 200 && waited < 30000; waited += 200) {
		struct gw_resp r = gw_req(&E, "GET", "/health", NULL, NULL, 0);
		code = r.code;
		gw_resp_free(&r);
		if (code != 200)
			sleep_ms(200);
	}
	ck_assert_int_eq(code, 200);
	gw_stop_clean(&E);
}
END_TEST

/* ---- stored code ---- */

START_TEST(unranked_code_expires)
{
	const char *const more[] = {"KB_CODE_TTL_S=86400", NULL};
	char cli[80], uid[40], sha[65], sha2[65];

	E.extra_env = more;
	gw_env_up(&E, 1, GW_ADMIN_TOKEN);
	gw_create_user(&E, "alice", cli, uid);
	kb_sha256_hex(CODE, strlen(CODE), sha);
	kb_sha256_hex(CODE2, strlen(CODE2), sha2);
	gw_accepted(
		gw_submit(&E, "/submission/gw_sum_cpu/CPU/test", cli, CODE));
	long long ttl = redis_int("TTL kb:code:%s", sha);
	ck_assert_msg(ttl > 86000 && ttl <= 86400, "TTL of a test's code: %lld",
		      ttl);
	/* Ranked code stays, also when the same code ran unranked before,
	 * and a later unranked run does not make it expire again. */
	gw_accepted(gw_submit(&E, "/submission/gw_sum_cpu/CPU/leaderboard", cli,
			      CODE));
	ck_assert_int_eq(redis_int("TTL kb:code:%s", sha), -1);
	gw_accepted(gw_submit(&E, "/submission/gw_sum_cpu/CPU/benchmark", cli,
			      CODE));
	ck_assert_int_eq(redis_int("TTL kb:code:%s", sha), -1);
	gw_accepted(gw_submit(&E, "/submission/gw_sum_cpu/CPU/leaderboard", cli,
			      CODE2));
	ck_assert_int_eq(redis_int("TTL kb:code:%s", sha2), -1);
	gw_stop_clean(&E);
}
END_TEST

/* ---- board deletion ---- */

START_TEST(deleted_board_leaves_nothing)
{
	static const char *const more[] = {
		"KB_PROBLEMS_DEV=" KB_GW_TEST_PROBLEMS, NULL};
	char cli[80], uid[40], old_seed[32], body[128];
	json_t *j;

	E.extra_env = more;
	gw_env_up(&E, 1, GW_ADMIN_TOKEN);
	gw_create_user(&E, "alice", cli, uid);
	json_decref(gw_expect_json(
		gw_req_admin(
			&E, "POST", "/admin/leaderboards",
			"{\"directory\":\"gw_sum_cpu\",\"visibility\":\"closed\"}"),
		200, "create"));
	redisReply *r =
		redisCommand(E.rc, "HGET kb:lb:gw_sum_cpu-dev secret_seed");
	ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
	snprintf(old_seed, sizeof(old_seed), "%s", r->str);
	freeReplyObject(r);
	/* Alice joins with one invite; another stays unclaimed. */
	j = gw_expect_json(
		gw_req_admin(&E, "POST", "/admin/invites",
			     "{\"leaderboard\":\"gw_sum_cpu-dev\",\"count\":2}"),
		200, "invites");
	char code0[40], code1[40];
	snprintf(code0, sizeof(code0), "%s",
		 json_string_value(
			 json_array_get(json_object_get(j, "codes"), 0)));
	snprintf(code1, sizeof(code1), "%s",
		 json_string_value(
			 json_array_get(json_object_get(j, "codes"), 1)));
	json_decref(j);
	snprintf(body, sizeof(body), "{\"code\":\"%s\"}", code0);
	json_decref(gw_expect_json(
		gw_req_cli(&E, "POST", "/user/join", cli, body), 200, "join"));
	gw_accepted(gw_submit(&E, "/submission/gw_sum_cpu-dev/CPU/test", cli,
			      CODE));

	/* Deleted, then made again under the same name. */
	json_decref(gw_expect_json(
		gw_req_admin(&E, "DELETE",
			     "/admin/leaderboards/gw_sum_cpu-dev?force=true",
			     NULL),
		200, "delete"));
	ck_assert_int_eq(gw_count_keys(&E, "kb:lbaccess:gw_sum_cpu-dev"), 0);
	json_decref(gw_expect_json(
		gw_req_admin(
			&E, "POST", "/admin/leaderboards",
			"{\"directory\":\"gw_sum_cpu\",\"visibility\":\"closed\"}"),
		200, "create again"));
	r = redisCommand(E.rc, "HGET kb:lb:gw_sum_cpu-dev secret_seed");
	ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
	ck_assert_msg(strcmp(r->str, old_seed) != 0,
		      "the new board has the old secret");
	/* The sweep of every answer looks for the new secret too. */
	snprintf(E.seeds[E.nseeds++], sizeof(E.seeds[0]), "%s", r->str);
	freeReplyObject(r);
	/* No grant of the old board reaches the new one: not alice's
	 * access, not the unclaimed invite. */
	gw_expect_error(gw_submit(&E, "/submission/gw_sum_cpu-dev/CPU/test",
				  cli, CODE),
			403, "old access");
	snprintf(body, sizeof(body), "{\"code\":\"%s\"}", code1);
	struct gw_resp jr = gw_req_cli(&E, "POST", "/user/join", cli, body);
	ck_assert_msg(jr.code >= 400, "old invite: HTTP %ld %s", jr.code,
		      jr.body);
	gw_resp_free(&jr);
	gw_expect_error(gw_submit(&E, "/submission/gw_sum_cpu-dev/CPU/test",
				  cli, CODE),
			403, "old invite");
	gw_stop_clean(&E);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gateway_security");

	if (sodium_init() < 0)
		return 1;
	TCase *tc = tcase_create("security");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, seeds_per_submission);
	tcase_add_test(tc, secret_run_side_channel);
	tcase_add_test(tc, login_takeover);
	tcase_add_test(tc, login_checked_before_provider);
	tcase_add_test(tc, auth_off_without_provider);
	tcase_add_test(tc, auth_rate_limited_per_address);
	tcase_add_test(tc, logins_cannot_delay_submissions);
	tcase_add_test(tc, queued_jobs_capped);
	tcase_add_test(tc, streams_capped_per_user);
	tcase_add_test(tc, connections_per_address);
	tcase_add_test(tc, unranked_code_expires);
	tcase_add_test(tc, deleted_board_leaves_nothing);
	suite_add_tcase(s, tc);
	return kb_check_run(s);
}
