/* Conformance with popcorn-cli (issue 17.6): every request the CLI makes
 * for a submission, replayed against a real kb-gateway with the real
 * kb-ranker folding the Results a worker would send (produced into Kafka
 * here), and for each outcome what the CLI concludes from the answers.
 *
 * What the CLI concludes is its own logic (popcorn-cli src/service/mod.rs,
 * submit_solution_background and leaderboard_completion_error, with the
 * public-run failure check of popcorn-cli#76), restated in popcorn() below:
 * a job status "failed", "timed_out" or "hacked" is an error naming the
 * job's error; a finished leaderboard submission needs a passed public
 * ranked run with a score and a passed secret run on the same gpu; a
 * finished test or benchmark submission whose public run of that mode did
 * not pass is an error. Outcomes: passed, failed test, compile error,
 * ranked, not ranked, suspect, timeout; then the streaming result event,
 * hosted profiling (POST /profile/{lb}/{gpu} with its form fields) and
 * names sent in lower case. */
#include <check.h>
#include <fcntl.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "gw_env.h"
#include "kb_check_main.h"
#include "kb_kafka.h"
#include "kb_util.h"

#define CODE                                                                   \
	"float custom_kernel(const float *d, unsigned long n) { return 0; }\n"
#define CONSUMER_EXTRA                                                         \
	"KB_CONSUMER_EXTRA=session.timeout.ms=4000,heartbeat.interval.ms=250"

static struct gw_env E;
static pid_t ranker;
static char cli[80], uid[40];

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static void up(void)
{
	static const char *const env[] = {"KB_PROBLEMS=" KB_GW_TEST_PROBLEMS
					  ":" KB_GW_TEST_DIR
					  "/conform/conform.yaml",
					  CONSUMER_EXTRA, NULL};
	char brokers[200], redis[200];

	E.extra_env = env;
	gw_env_up(&E, 1, GW_ADMIN_TOKEN);
	gw_wait_consumer(&E);
	snprintf(brokers, sizeof(brokers), "KB_KAFKA_BROKERS=%s", E.brokers);
	snprintf(redis, sizeof(redis), "KB_REDIS_URL=%s", E.redis.url);
	char *argv[] = {KB_BINARY_DIR "/ranker/kb-ranker", NULL};
	char *renv[] = {brokers, redis, CONSUMER_EXTRA, "KB_LOG_LEVEL=debug",
			NULL};
	ranker = kb_test_spawn(argv, renv, "/tmp/kb-test-conform-ranker.log");
	ck_assert_int_gt(ranker, 0);
	gw_create_user(&E, "ann", cli, uid);
}

/* ---- what the worker sends ---- */

enum outcome {
	O_PASSED,
	O_FAILED_TEST,
	O_COMPILE_ERROR,
	O_RANKED,
	O_NOT_RANKED,
	O_SUSPECT,
	O_TIMEOUT,
};

struct built {
	Kb__Result r;
	Kb__CompileResult comp;
	Kb__RunResult runs[3], *rp[3];
	Kb__KeyValue kv[3][4], *kvp[3][4];
};

static void set_run(struct built *b, int i, const char *key, int passed,
		    const char *count_key)
{
	Kb__RunResult *rr = &b->runs[i];

	kb__run_result__init(rr);
	rr->key = (char *)key;
	rr->passed = passed;
	rr->success = 1;
	rr->duration_s = 0.5;
	rr->stdout = (char *)"out of the run\n";
	rr->stderr = passed ? (char *)"" : (char *)"Traceback: mismatch at 3\n";
	for (int k = 0; k < 3; k++) {
		kb__key_value__init(&b->kv[i][k]);
		b->kvp[i][k] = &b->kv[i][k];
	}
	b->kv[i][0].key = (char *)count_key;
	b->kv[i][0].value = (char *)"1";
	b->kv[i][1].key = strcmp(count_key, "test-count") == 0
				  ? (char *)"test.0.status"
				  : (char *)"benchmark.0.mean";
	b->kv[i][1].value = strcmp(count_key, "test-count") == 0
				    ? (char *)(passed ? "pass" : "fail")
				    : (char *)"1500";
	b->kv[i][2].key = (char *)"check";
	b->kv[i][2].value = (char *)(passed ? "pass" : "fail");
	rr->result = b->kvp[i];
	rr->n_result = 3;
	b->rp[i] = rr;
}

static void build(struct built *b, uint64_t id, enum outcome o)
{
	Kb__Result *r = &b->r;

	memset(b, 0, sizeof(*b));
	kb__result__init(r);
	kb__compile_result__init(&b->comp);
	r->submission_id = id;
	r->leaderboard = (char *)"PMPP_Sum";
	r->gpu = (char *)"CPU";
	r->user_id = uid;
	r->compile = &b->comp;
	r->runs = b->rp;
	b->comp.success = 1;
	b->comp.command = (char *)"cc -O3 submission.c";
	r->verdict = KB__VERDICT__VERDICT_PASSED;
	r->mode = KB__MODE__MODE_TEST;
	switch (o) {
	case O_PASSED:
		set_run(b, 0, "test", 1, "test-count");
		r->n_runs = 1;
		break;
	case O_FAILED_TEST:
		set_run(b, 0, "test", 0, "test-count");
		r->n_runs = 1;
		r->verdict = KB__VERDICT__VERDICT_FAILED;
		break;
	case O_COMPILE_ERROR:
		b->comp.success = 0;
		b->comp.exit_code = 1;
		b->comp.stderr =
			(char *)"submission.c:1:7: error: expected ';'\n";
		r->verdict = KB__VERDICT__VERDICT_COMPILE_ERROR;
		break;
	case O_TIMEOUT:
		set_run(b, 0, "test", 0, "test-count");
		b->runs[0].success = 0;
		b->runs[0].timed_out = 1;
		b->runs[0].duration_s = 60;
		r->n_runs = 1;
		r->verdict = KB__VERDICT__VERDICT_TIMEOUT;
		break;
	case O_RANKED:
	case O_NOT_RANKED:
	case O_SUSPECT:
		r->mode = KB__MODE__MODE_LEADERBOARD;
		set_run(b, 0, "test", 1, "test-count");
		set_run(b, 1, "leaderboard", 1, "benchmark-count");
		set_run(b, 2, "private", o != O_NOT_RANKED, "benchmark-count");
		r->n_runs = 3;
		r->has_score = o == O_RANKED;
		r->score = 1.5e-6;
		if (o == O_NOT_RANKED)
			r->verdict = KB__VERDICT__VERDICT_FAILED;
		if (o == O_SUSPECT) {
			r->verdict = KB__VERDICT__VERDICT_SUSPECT;
			r->error =
				(char *)"benchmark 0: 1.5 µs is below the device's floor";
		}
		break;
	}
}

/* ---- what popcorn-cli does and concludes ---- */

static int has_run(const json_t *runs, const char *mode, int secret, int passed,
		   int scored, const char *gpu)
{
	size_t i;
	json_t *r;

	json_array_foreach(runs, i, r)
	{
		if (strcmp(json_string_value(json_object_get(r, "mode")),
			   mode) == 0 &&
		    json_is_true(json_object_get(r, "secret")) == secret &&
		    json_is_true(json_object_get(r, "passed")) == passed &&
		    (!scored || json_is_number(json_object_get(r, "score"))) &&
		    strcasecmp(json_string_value(json_object_get(r, "runner")),
			       gpu) == 0)
			return 1;
	}
	return 0;
}

/* Returns 0 when the CLI reports success, else 1 with its message. */
static int popcorn(const json_t *d, const char *mode, const char *gpu,
		   char *msg, size_t size)
{
	const json_t *job = json_object_get(d, "job");
	const char *st = json_string_value(json_object_get(job, "status"));
	const char *err = json_string_value(json_object_get(job, "error"));
	json_int_t id = json_integer_value(json_object_get(d, "id"));
	const json_t *runs = json_object_get(d, "runs");
	size_t i;
	json_t *r;

	msg[0] = '\0';
	if (st && (!strcmp(st, "failed") || !strcmp(st, "timed_out") ||
		   !strcmp(st, "hacked"))) {
		snprintf(msg, size, "Submission %lld %s: %s", (long long)id, st,
			 err ? err : "No error details were provided");
		return 1;
	}
	ck_assert(json_is_true(json_object_get(d, "done")));
	if (strcmp(mode, "leaderboard") == 0) {
		if (has_run(runs, "leaderboard", 0, 1, 1, gpu) &&
		    has_run(runs, "leaderboard", 1, 1, 0, gpu) &&
		    !has_run(runs, "leaderboard", 1, 0, 0, gpu))
			return 0;
		snprintf(msg, size, "Submission %lld: not on the leaderboard",
			 (long long)id);
		return 1;
	}
	json_array_foreach(runs, i, r)
	{
		if (!json_is_true(json_object_get(r, "secret")) &&
		    strcmp(json_string_value(json_object_get(r, "mode")),
			   mode) == 0 &&
		    !json_is_true(json_object_get(r, "passed"))) {
			snprintf(msg, size, "public %s run failed", mode);
			return 1;
		}
	}
	return 0;
}

/* Submits as popcorn-cli does (leaderboard lower-cased), lets the
 * "worker" answer, and polls until done. Returns the last poll. */
static json_t *submit_and_poll(enum outcome o, const char *mode)
{
	char path[128];
	struct built b;

	snprintf(path, sizeof(path), "/submission/pmpp_sum/CPU/%s", mode);
	json_t *a =
		gw_expect_json(gw_submit(&E, path, cli, CODE), 202, "submit");
	uint64_t id = (uint64_t)json_integer_value(
		json_object_get(json_object_get(a, "details"), "id"));
	json_decref(a);
	snprintf(path, sizeof(path), "/user/submissions/%" PRIu64, id);
	json_t *d = gw_expect_json(gw_req_cli(&E, "GET", path, cli, NULL), 200,
				   "poll");
	ck_assert_str_eq(json_string_value(json_object_get(
				 json_object_get(d, "job"), "status")),
			 "pending");
	json_decref(d);
	build(&b, id, o);
	gw_produce_result(&E, id, "CPU", &b.r);
	/* Polls until the ranker has folded it (no judgment of how long). */
	for (int n = 0;; n++) {
		d = gw_expect_json(gw_req_cli(&E, "GET", path, cli, NULL), 200,
				   "poll");
		if (json_is_true(json_object_get(d, "done")))
			return d;
		json_decref(d);
		ck_assert_msg(n < 3000, "submission %" PRIu64 " never finished",
			      id);
		sleep_ms(20);
	}
}

static const char *job_of(const json_t *d)
{
	return json_string_value(
		json_object_get(json_object_get(d, "job"), "status"));
}

START_TEST(outcomes)
{
	char msg[512];
	json_t *d, *run, *diag;

	up();
	/* Passed: success, with the owner's diagnostics. */
	d = submit_and_poll(O_PASSED, "test");
	ck_assert_int_eq(popcorn(d, "test", "CPU", msg, sizeof(msg)), 0);
	ck_assert_str_eq(job_of(d), "succeeded");
	ck_assert_str_eq(
		json_string_value(json_object_get(d, "leaderboard_name")),
		"PMPP_Sum");
	run = json_array_get(json_object_get(d, "runs"), 0);
	diag = json_object_get(run, "diagnostics");
	ck_assert_str_eq(json_string_value(json_object_get(diag, "stdout")),
			 "out of the run\n");
	ck_assert(json_is_true(json_object_get(diag, "success")));
	ck_assert_str_eq(
		json_string_value(json_object_get(
			json_object_get(diag, "compilation"), "command")),
		"cc -O3 submission.c");
	json_decref(d);

	/* A failed test: failed, with the run's stderr in its diagnostics. */
	d = submit_and_poll(O_FAILED_TEST, "test");
	ck_assert_int_eq(popcorn(d, "test", "CPU", msg, sizeof(msg)), 1);
	ck_assert_str_eq(job_of(d), "failed");
	ck_assert_msg(strstr(msg, "failed: the test run failed"), "%s", msg);
	diag = json_object_get(json_array_get(json_object_get(d, "runs"), 0),
			       "diagnostics");
	ck_assert_str_eq(json_string_value(json_object_get(diag, "stderr")),
			 "Traceback: mismatch at 3\n");
	json_decref(d);

	/* A compile error: failed, and a run that did not pass, holding the
	 * compiler's output. */
	d = submit_and_poll(O_COMPILE_ERROR, "test");
	ck_assert_int_eq(popcorn(d, "test", "CPU", msg, sizeof(msg)), 1);
	ck_assert_msg(
		strstr(msg,
		       "failed: compilation failed: submission.c:1:7: error: "
		       "expected ';'"),
		"%s", msg);
	ck_assert_uint_eq(json_array_size(json_object_get(d, "runs")), 1);
	run = json_array_get(json_object_get(d, "runs"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(run, "mode")),
			 "test");
	ck_assert(json_is_false(json_object_get(run, "passed")));
	ck_assert_str_eq(
		json_string_value(json_object_get(
			json_object_get(json_object_get(run, "diagnostics"),
					"compilation"),
			"stderr")),
		"submission.c:1:7: error: expected ';'\n");
	json_decref(d);

	/* Ranked: success, the public score and the secret pass on CPU. */
	d = submit_and_poll(O_RANKED, "leaderboard");
	ck_assert_int_eq(popcorn(d, "leaderboard", "cpu", msg, sizeof(msg)), 0);
	ck_assert_str_eq(job_of(d), "succeeded");
	/* The secret and ranked runs stay redacted: no diagnostics. */
	size_t i;
	json_array_foreach(json_object_get(d, "runs"), i, run) ck_assert(
		!!json_object_get(run, "diagnostics") ==
		!strcmp(json_string_value(json_object_get(run, "mode")),
			"test"));
	json_decref(d);

	/* Not ranked: failed, with upstream's words. */
	d = submit_and_poll(O_NOT_RANKED, "leaderboard");
	ck_assert_int_eq(popcorn(d, "leaderboard", "CPU", msg, sizeof(msg)), 1);
	ck_assert_msg(
		strstr(msg,
		       "failed: secret validation failed on CPU; it will not appear "
		       "on the leaderboard"),
		"%s", msg);
	json_decref(d);

	/* Suspect: hacked. */
	d = submit_and_poll(O_SUSPECT, "leaderboard");
	ck_assert_int_eq(popcorn(d, "leaderboard", "CPU", msg, sizeof(msg)), 1);
	ck_assert_msg(
		strstr(msg,
		       "hacked: benchmark 0: 1.5 µs is below the device's floor"),
		"%s", msg);
	json_decref(d);

	/* Timeout: timed_out. */
	d = submit_and_poll(O_TIMEOUT, "test");
	ck_assert_int_eq(popcorn(d, "test", "CPU", msg, sizeof(msg)), 1);
	ck_assert_msg(strstr(msg,
			     "timed_out: the test run timed out after 60 s"),
		      "%s", msg);
	json_decref(d);

	/* The list says the same, newest first. */
	static const char *const want[] = {"timed_out", "hacked", "failed",
					   "succeeded", "failed", "failed",
					   "succeeded"};
	d = gw_expect_json(gw_req_cli(&E, "GET",
				      "/user/submissions?leaderboard=pmpp_sum",
				      cli, NULL),
			   200, "list");
	ck_assert_uint_eq(json_array_size(d), 7);
	for (i = 0; i < 7; i++)
		ck_assert_str_eq(job_of(json_array_get(d, i)), want[i]);
	json_decref(d);
	gw_stop_clean(&E);
}
END_TEST

/* The streaming endpoint's result event carries the same job; names in
 * lower case reach the board and gpu of their canonical spelling. */
START_TEST(stream_and_names)
{
	char *body = NULL;
	struct built b;

	up();
	struct gw_resp r = gw_req(&E, "GET", "/gpus/pmpp_sum", NULL, NULL, 0);
	ck_assert_int_eq(r.code, 200);
	ck_assert_str_eq(r.body, "[\"CPU\",\"H100\"]");
	gw_resp_free(&r);
	json_decref(gw_expect_json(
		gw_req(&E, "GET", "/submissions/PMPP_SUM/cpu", NULL, NULL, 0),
		200, "ranking"));
	gw_expect_error(gw_req(&E, "GET", "/gpus/pmpp_summ", NULL, NULL, 0),
			404, "unknown");

	struct gw_sse *s = gw_sse_start(&E, "/pmpp_sum/cpu/test", cli, CODE);
	ck_assert(gw_sse_wait(s, "event: status", 15000) == 0);
	uint64_t id = gw_sse_id(s);
	build(&b, id, O_FAILED_TEST);
	gw_produce_result(&E, id, "CPU", &b.r);
	ck_assert_int_eq(gw_sse_finish(s, &body, NULL), 200);
	const char *p = strstr(body, "event: result\ndata: ");
	ck_assert_msg(p != NULL, "%s", body);
	p += strlen("event: result\ndata: ");
	json_t *res = json_loadb(p, strcspn(p, "\n"), 0, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(
				 json_object_get(res, "job"), "status")),
			 "failed");
	ck_assert_str_eq(json_string_value(json_object_get(res, "gpu")), "CPU");
	json_decref(res);
	free(body);

	/* Recorded under the canonical spelling. */
	char path[64];
	snprintf(path, sizeof(path), "/user/submissions/%" PRIu64, id);
	json_t *d = gw_expect_json(gw_req_cli(&E, "GET", path, cli, NULL), 200,
				   "poll");
	ck_assert_str_eq(
		json_string_value(json_object_get(d, "leaderboard_name")),
		"PMPP_Sum");
	ck_assert_str_eq(json_string_value(json_object_get(d, "gpu")), "CPU");
	json_decref(d);
	gw_stop_clean(&E);
}
END_TEST

/* Takes the next Submission off kb.submissions.H100. */
static Kb__Submission *next_submission(kb_consumer *c)
{
	kb_message m;

	for (int n = 0; n < 300; n++) {
		if (kb_consumer_poll(c, 200, &m) != 1)
			continue;
		Kb__Submission *s =
			kb__submission__unpack(NULL, m.value_len, m.value);
		kb_message_release(&m);
		return s;
	}
	ck_abort_msg("no Submission on kb.submissions.H100");
	return NULL;
}

/* popcorn-cli's hosted profiling: its form fields reach the worker in
 * Submission.profile; the profile comes back as upstream's
 * runs["profile.N"].profile with the trace in base64. */
START_TEST(profile_route)
{
	static const char *const fields[] = {"benchmark_index",
					     "0",
					     "ncu_kernel_name",
					     "regex:sum.*",
					     "ncu_kernel_name_base",
					     "demangled",
					     "ncu_launch_count",
					     "2",
					     NULL};
	static const char *const bad[][3] = {
		{"benchmark_index", "1",
		 "benchmark_index must be between 0 and 0"},
		{"ncu_launch_count", "0",
		 "ncu_launch_count must be an integer >= 1"},
		{"benchmark_index", "-1",
		 "benchmark_index must be an integer >= 0"},
		{"ncu_kernel_name_base", "weird",
		 "ncu_kernel_name_base must be function"},
		{"ncu_kernel_name", "", "ncu_kernel_name must contain 1..1024"},
	};
	const char *topics[] = {"kb.submissions.H100"};
	char err[256], *body = NULL;

	up();
	kb_consumer *c = kb_consumer_new(E.brokers, "conform-profile", topics,
					 1, NULL, err, sizeof(err));
	ck_assert_msg(c != NULL, "%s", err);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *f[] = {bad[i][0], bad[i][1], NULL};
		struct gw_sse *s = gw_sse_start_form(
			&E, "/profile/pmpp_sum/h100", cli, CODE, f);
		ck_assert_int_eq(gw_sse_finish(s, &body, NULL), 400);
		ck_assert_msg(strstr(body, bad[i][2]), "%s: %s", bad[i][0],
			      body);
		free(body);
	}
	gw_expect_error(gw_submit(&E, "/profile/pmpp_sum/A100", cli, CODE), 404,
			"gpu");

	struct gw_sse *s = gw_sse_start_form(&E, "/profile/pmpp_sum/h100", cli,
					     CODE, fields);
	Kb__Submission *sub = next_submission(c);
	ck_assert_int_eq(sub->mode, KB__MODE__MODE_PROFILE);
	ck_assert_str_eq(sub->leaderboard, "PMPP_Sum");
	ck_assert_str_eq(sub->gpu, "H100");
	ck_assert_ptr_nonnull(sub->profile);
	ck_assert(sub->profile->has_benchmark_index);
	ck_assert_uint_eq(sub->profile->benchmark_index, 0);
	ck_assert_str_eq(sub->profile->ncu_kernel_name, "regex:sum.*");
	ck_assert_str_eq(sub->profile->ncu_kernel_name_base, "demangled");
	ck_assert_uint_eq(sub->profile->ncu_launch_count, 2);
	uint64_t id = sub->id;
	kb__submission__free_unpacked(sub, NULL);

	struct built b;
	Kb__Profile prof = KB__PROFILE__INIT;
	static const uint8_t zip[] = "PK\x03\x04 report";
	build(&b, id, O_PASSED);
	b.r.gpu = (char *)"H100";
	b.r.mode = KB__MODE__MODE_PROFILE;
	set_run(&b, 0, "profile.0", 1, "benchmark-count");
	prof.profiler = (char *)"Nsight Compute";
	prof.trace.data = (uint8_t *)zip;
	prof.trace.len = sizeof(zip) - 1;
	prof.summary = (char *)"GPU Speed Of Light Throughput: DRAM 91.2%";
	b.runs[0].profile = &prof;
	gw_produce_result(&E, id, "H100", &b.r);
	ck_assert_int_eq(gw_sse_finish(s, &body, NULL), 200);
	const char *p = strstr(body, "event: result\ndata: ");
	ck_assert_msg(p != NULL, "%s", body);
	p += strlen("event: result\ndata: ");
	json_t *res = json_loadb(p, strcspn(p, "\n"), 0, NULL);
	/* popcorn-cli: runs whose key starts with "profile", their
	 * profile.profiler, profile.trace (base64 of the zip) and the
	 * reports. */
	json_t *full = json_array_get(json_object_get(res, "results"), 0);
	json_t *pr = json_object_get(
		json_object_get(json_object_get(full, "runs"), "profile.0"),
		"profile");
	ck_assert_str_eq(json_string_value(json_object_get(pr, "profiler")),
			 "Nsight Compute");
	ck_assert_str_eq(json_string_value(json_object_get(pr, "trace")),
			 "UEsDBCByZXBvcnQ=");
	ck_assert(json_is_null(json_object_get(pr, "download_url")));
	ck_assert_msg(strstr(json_string_value(json_array_get(
				     json_object_get(res, "reports"), 0)),
			     "GPU Speed Of Light Throughput: DRAM 91.2%"),
		      "%s", p);
	ck_assert_str_eq(json_string_value(json_object_get(
				 json_object_get(res, "job"), "status")),
			 "succeeded");
	json_decref(res);
	free(body);
	kb_consumer_destroy(c);
	gw_stop_clean(&E);
}
END_TEST

/* ---- POST /admin/update-problems ---- */

/* A real HTTP server on loopback serving one file. */
static enum MHD_Result serve_file(void *cls, struct MHD_Connection *c,
				  const char *url, const char *method,
				  const char *version, const char *data,
				  size_t *size, void **state)
{
	const char *path = cls;
	struct MHD_Response *resp;
	struct stat st;
	int fd;
	enum MHD_Result ret;

	(void)method, (void)version, (void)data, (void)size, (void)state;
	if (strcmp(url, "/repo.tar.gz") != 0 ||
	    (fd = open(path, O_RDONLY)) < 0 || fstat(fd, &st) < 0) {
		resp = MHD_create_response_from_buffer(9, (void *)"not found",
						       MHD_RESPMEM_PERSISTENT);
		ret = MHD_queue_response(c, 404, resp);
	} else {
		resp = MHD_create_response_from_fd((uint64_t)st.st_size, fd);
		ret = MHD_queue_response(c, 200, resp);
	}
	MHD_destroy_response(resp);
	return ret;
}

static void sh(const char *cmd)
{
	ck_assert_msg(system(cmd) == 0, "%s", cmd);
}

static json_t *sync_req(const char *body)
{
	json_t *j = gw_expect_json(gw_req_admin(&E, "POST",
						"/admin/update-problems", body),
				   200, body);
	ck_assert_str_eq(json_string_value(json_object_get(j, "status")), "ok");
	return j;
}

static const char *first(json_t *j, const char *list, const char *key)
{
	return json_string_value(json_object_get(
		json_array_get(json_object_get(j, list), 0), key));
}

START_TEST(update_problems)
{
	char dir[] = "/tmp/kb-conform-sync-XXXXXX", cmd[2048], env_dev[300],
	     body[1024];
	char archive[600];

	ck_assert_ptr_nonnull(mkdtemp(dir));
	/* A repository as upstream lays it out: <repo>-<branch>/problems/
	 * with a competition file and a problem directory. */
	snprintf(
		cmd, sizeof(cmd),
		"mkdir -p %s/dev %s/src/kernels-main/problems/vs && "
		"cp %s/gw_sum_cpu/* %s/src/kernels-main/problems/vs/ && "
		"printf 'problems:\\n  - {directory: vs, name: Synced_Sum, gpus: [CPU]}\\n"
		"  - {directory: vs, name: gw_sum_cpu, gpus: [CPU]}\\n' > "
		"%s/src/kernels-main/problems/sync.yaml && "
		"tar -czf %s/repo.tar.gz -C %s/src kernels-main",
		dir, dir, KB_GW_TEST_PROBLEMS, dir, dir, dir, dir);
	sh(cmd);
	snprintf(archive, sizeof(archive), "%s/repo.tar.gz", dir);
	struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD,
						0, NULL, NULL, serve_file,
						archive, MHD_OPTION_END);
	ck_assert_ptr_nonnull(d);
	int port = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)->port;

	snprintf(env_dev, sizeof(env_dev), "KB_PROBLEMS_DEV=%s/dev", dir);
	const char *env[] = {env_dev, NULL};
	E.extra_env = env;
	gw_env_up(&E, 1, GW_ADMIN_TOKEN);
	gw_expect_error(gw_req(&E, "POST", "/admin/update-problems", NULL, "{}",
			       2),
			401, "no token");
	gw_expect_error(gw_req_admin(&E, "POST", "/admin/update-problems",
				     "{\"branch\":\"a/b\"}"),
			400, "slash");
	gw_expect_error(gw_req_admin(&E, "POST", "/admin/update-problems",
				     "{\"force\":\"yes\"}"),
			400, "force");
	gw_expect_error(gw_req_admin(&E, "POST", "/admin/update-problems",
				     "{\"repository\":\"a b\"}"),
			400, "repository");

	/* From the archive, over HTTP: created. */
	snprintf(body, sizeof(body),
		 "{\"repository\":\"http://127.0.0.1:%d/repo.tar.gz\","
		 "\"problem_set\":\"sync\",\"visibility\":\"closed\"}",
		 port);
	json_t *j = sync_req(body);
	ck_assert_uint_eq(json_array_size(json_object_get(j, "created")), 1);
	ck_assert_str_eq(json_string_value(json_array_get(
				 json_object_get(j, "created"), 0)),
			 "Synced_Sum");
	ck_assert_uint_eq(json_array_size(json_object_get(j, "errors")), 0);
	json_decref(j);
	/* Hosted, closed as asked, under its name in any case. */
	json_decref(gw_expect_json(gw_req_admin(&E, "GET", "/gpus/synced_sum",
						NULL),
				   200, "gpus"));
	gw_expect_error(gw_req(&E, "GET", "/gpus/synced_sum", NULL, NULL, 0),
			401, "closed");

	/* Again: nothing changed. */
	j = sync_req(body);
	ck_assert_str_eq(first(j, "skipped", "reason"), "no changes");
	ck_assert_uint_eq(json_array_size(json_object_get(j, "created")), 0);
	json_decref(j);

	/* From a path on the gateway's host, with a changed source: needs
	 * force, as upstream. */
	snprintf(cmd, sizeof(cmd),
		 "echo '/* v2 */' >> %s/src/kernels-main/problems/vs/eval.c",
		 dir);
	sh(cmd);
	snprintf(body, sizeof(body), "{\"repository\":\"%s/src/kernels-main\"}",
		 dir);
	j = sync_req(body);
	ck_assert_str_eq(first(j, "skipped", "name"), "Synced_Sum");
	ck_assert_str_eq(first(j, "skipped", "reason"),
			 "significant task changes require --force");
	json_decref(j);

	/* With force: updated in place under the same name, the store's
	 * state kept (still closed); a board of the gateway's own problem
	 * sets is not changed from here. */
	snprintf(body, sizeof(body),
		 "{\"repository\":\"%s/src/kernels-main\",\"force\":true}",
		 dir);
	j = sync_req(body);
	ck_assert_uint_eq(json_array_size(json_object_get(j, "updated")), 1);
	ck_assert_str_eq(json_string_value(json_array_get(
				 json_object_get(j, "updated"), 0)),
			 "Synced_Sum");
	ck_assert_str_eq(first(j, "errors", "name"), "gw_sum_cpu");
	ck_assert_msg(strstr(first(j, "errors", "error"), "KB_PROBLEMS"), "%s",
		      first(j, "errors", "error"));
	json_decref(j);
	gw_expect_error(gw_req(&E, "GET", "/gpus/synced_sum", NULL, NULL, 0),
			401, "still closed");
	/* A new description alone needs no force; one board of the name,
	 * with the new text and the new source. */
	snprintf(cmd, sizeof(cmd),
		 "sed -i 's/^description: .*/description: \"v3 text\"/' "
		 "%s/src/kernels-main/problems/vs/task.yml",
		 dir);
	sh(cmd);
	snprintf(body, sizeof(body), "{\"repository\":\"%s/src/kernels-main\"}",
		 dir);
	j = sync_req(body);
	ck_assert_str_eq(json_string_value(json_array_get(
				 json_object_get(j, "updated"), 0)),
			 "Synced_Sum");
	json_decref(j);
	j = gw_expect_json(gw_req_admin(&E, "GET", "/leaderboards", NULL), 200,
			   "list");
	int seen = 0;
	for (size_t i = 0; i < json_array_size(j); i++) {
		json_t *b = json_array_get(j, i);
		if (strcmp(json_string_value(json_object_get(b, "name")),
			   "Synced_Sum"))
			continue;
		seen++;
		ck_assert_str_eq(
			json_string_value(json_object_get(b, "description")),
			"v3 text");
		ck_assert_str_eq(
			json_string_value(json_object_get(b, "visibility")),
			"closed");
		char *task = json_dumps(json_object_get(b, "task"), 0);
		ck_assert_msg(strstr(task, "v2"), "%s", task);
		free(task);
	}
	ck_assert_int_eq(seen, 1);
	json_decref(j);
	j = sync_req(body);
	ck_assert_str_eq(first(j, "skipped", "reason"), "no changes");
	json_decref(j);

	/* Another gateway's update: kb:lbdyn names another directory; this
	 * gateway's sync (every 2 s) swaps its board for that one. */
	redisReply *rr = redisCommand(E.rc, "HGET kb:lbdyn Synced_Sum");
	ck_assert(rr && rr->type == REDIS_REPLY_STRING);
	snprintf(cmd, sizeof(cmd),
		 "cp -r %s/dev/%s %s/dev/elsewhere && sed -i 's/^description: "
		 ".*/description: \"v4 elsewhere\"/' %s/dev/elsewhere/task.yml",
		 dir, rr->str, dir, dir);
	freeReplyObject(rr);
	sh(cmd);
	rr = redisCommand(E.rc, "HSET kb:lbdyn Synced_Sum elsewhere");
	ck_assert(rr && rr->type == REDIS_REPLY_INTEGER);
	freeReplyObject(rr);
	int swapped = 0;
	/* The sync runs every 2 s; a loaded machine gets a minute. */
	for (double end = kb_mono_s() + 60; !swapped && kb_mono_s() < end;) {
		usleep(100 * 1000);
		j = gw_expect_json(gw_req_admin(&E, "GET", "/leaderboards",
						NULL),
				   200, "list");
		seen = 0;
		for (size_t i = 0; i < json_array_size(j); i++) {
			json_t *b = json_array_get(j, i);
			if (strcmp(json_string_value(json_object_get(b, "name")),
				   "Synced_Sum") == 0) {
				seen++;
				swapped =
					strcmp(json_string_value(json_object_get(
						       b, "description")),
					       "v4 elsewhere") == 0;
			}
		}
		ck_assert_int_eq(seen, 1);
		json_decref(j);
	}
	ck_assert_msg(swapped, "the board was not swapped for kb:lbdyn's");
	gw_expect_error(gw_req(&E, "GET", "/gpus/synced_sum", NULL, NULL, 0),
			401, "closed after the swap");

	/* An unknown set names the ones there are; a missing archive is an
	 * error of the download. */
	snprintf(body, sizeof(body),
		 "{\"repository\":\"%s/src/kernels-main\","
		 "\"problem_set\":\"nope\"}",
		 dir);
	j = sync_req(body);
	ck_assert_str_eq(first(j, "errors", "name"), "nope");
	ck_assert_str_eq(first(j, "errors", "error"),
			 "Problem set not found. Available: [\"sync\"]");
	json_decref(j);
	/* The set's file name means the set. */
	snprintf(body, sizeof(body),
		 "{\"repository\":\"%s/src/kernels-main\","
		 "\"problem_set\":\"sync.yaml\"}",
		 dir);
	j = sync_req(body);
	ck_assert_uint_eq(json_array_size(json_object_get(j, "errors")), 0);
	json_decref(j);
	snprintf(body, sizeof(body),
		 "{\"repository\":\"http://127.0.0.1:%d/none.tar.gz\"}", port);
	j = sync_req(body);
	ck_assert_str_eq(first(j, "errors", "name"), "download");
	json_decref(j);
	gw_stop_clean(&E);
	MHD_stop_daemon(d);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	sh(cmd);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gateway_conform");
	TCase *tc = tcase_create("conform");

	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, outcomes);
	tcase_add_test(tc, stream_and_names);
	tcase_add_test(tc, profile_route);
	tcase_add_test(tc, update_problems);
	suite_add_tcase(s, tc);
	return kb_check_run(s);
}
