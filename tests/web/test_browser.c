/* The web leaderboard and /metrics against the whole platform: the real
 * kb-gateway, kb-ranker and a CPU kb-worker (with /metrics listeners), a
 * throwaway redis-server and kb-devbroker (tests/integration/platform.c).
 *
 * browser: runs tests/web/browser/browser.cjs (playwright-core driving
 * Debian's Chromium, headless): the index lists the boards; a ranked CPU
 * submission appears on the board page without a reload; the plot
 * renders; signed in with the CLI id, the user's submissions and reports
 * show, and a submission from the page shows its progress and verdict; the
 * user page shows the best entry and its history; the board fits a phone.
 * Issue 35 item 7: medals, the leader's line above the record, the
 * plot's choices without a reload (and as a plain form without
 * JavaScript), the reference tab, the Markdown description, a queued
 * submission's pending view, the index's order and its notice of gpus
 * without a worker, the plot's text at 400 px; code linked and shown
 * only on a board past its deadline (tests/web/past.yaml).
 * Screenshots go to <build>/tests/web/screenshots.
 *
 * metrics: GET /metrics of each service shows the families operators
 * need, with the counts of the jobs this suite ran.
 *
 * One platform, one test: kb_testenv stops every process it started when
 * the process that started them exits, so a platform cannot outlive the
 * forked test that made it.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kb_check_main.h"
#include "platform.h"

static struct platform P;
static int started;

static void print_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[1024];

	while (f && fgets(line, sizeof(line), f))
		fputs(line, stderr);
	if (f)
		fclose(f);
}

static void browser(void)
{
	char log[256], env_api[128], env_cli[200], env_src[600], env_shots[600],
		env_path[600];
	char *argv[] = {"/usr/bin/env", "node",
			KB_SOURCE_DIR "/tests/web/browser/browser.cjs", NULL};
	int status = 0;

	ck_assert_msg(started, "platform did not start; logs in %s", P.dir);
	ck_assert_msg(
		access(KB_WEB_NODE_MODULES "/playwright-core/package.json",
		       R_OK) == 0,
		"playwright-core is not installed in " KB_WEB_NODE_MODULES
		" (the build runs tests/web/browser/install.sh: see its output)");
	ck_assert_msg(
		access("/usr/bin/chromium", X_OK) == 0,
		"/usr/bin/chromium is missing (scripts/deps.sh installs it)");
	snprintf(log, sizeof(log), "%s/browser.log", P.dir);
	snprintf(env_api, sizeof(env_api), "KB_API=%s", P.api);
	snprintf(env_cli, sizeof(env_cli), "KB_CLI_ID=%s", P.cli_id);
	snprintf(env_src, sizeof(env_src), "KB_SOURCE_DIR=%s", KB_SOURCE_DIR);
	snprintf(env_shots, sizeof(env_shots), "KB_SHOTS=%s", KB_WEB_SHOTS);
	snprintf(env_path, sizeof(env_path), "NODE_PATH=%s",
		 KB_WEB_NODE_MODULES);
	char env_admin[] = "KB_ADMIN_TOKEN=" PLATFORM_ADMIN_TOKEN;
	char *env[] = {env_api,  env_cli,   env_src, env_shots,
		       env_path, env_admin, NULL};
	pid_t pid = kb_test_spawn(argv, env, log);
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	print_file(log);
	ck_assert_msg(
		WIFEXITED(status) && WEXITSTATUS(status) == 0,
		"browser checks failed (status %d); log %s, screenshots in " KB_WEB_SHOTS
		", service logs in %s",
		status, log, P.dir);
}

/* The value of the first sample line that starts with prefix, or -1. */
static double sample(const char *text, const char *prefix)
{
	size_t n = strlen(prefix);

	for (const char *p = text; p && *p;) {
		if (strncmp(p, prefix, n) == 0) {
			const char *sp = strchr(p + n, ' ');
			return sp ? strtod(sp + 1, NULL) : -1;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -1;
}

static char *scrape(int port)
{
	char url[96], *body = NULL;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", port);
	ck_assert_int_eq(http_get(url, NULL, &body), 200);
	return body;
}

#define HAS(text, prefix)                                                      \
	ck_assert_msg(sample(text, prefix) >= 0, "no %s in:\n%.3000s", prefix, \
		      text)
#define AT_LEAST(text, prefix, v)                                              \
	ck_assert_msg(sample(text, prefix) >= (v), "%s < %g in:\n%.3000s",     \
		      prefix, (double)(v), text)

/* The standard process metrics and build info of one service. */
static void process_metrics(const char *text, const char *service)
{
	char info[96];

	AT_LEAST(text, "process_start_time_seconds", 1e9);
	AT_LEAST(text, "process_resident_memory_bytes", 1);
	AT_LEAST(text, "process_open_fds", 1);
	snprintf(info, sizeof(info),
		 "kb_build_info{service=\"%s\",revision=", service);
	ck_assert_msg(sample(text, info) == 1, "no %s in:\n%.3000s", info,
		      text);
	/* Histogram bounds in their shortest form. */
	ck_assert_msg(!strstr(text, "000000000"), "a long number in:\n%.3000s",
		      text);
}

static void metrics_of_every_service(void)
{
	/* A job of our own, so the counters below have something to count
	 * whatever the browser test did. */
	long id = submit(&P, "vectorsum_cpu", "test",
			 KB_SOURCE_DIR
			 "/problems/vectorsum_cpu/submission_ok.c");
	ck_assert_int_gt(id, 0);
	json_t *done = wait_done(&P, id, 120000);
	ck_assert_ptr_nonnull(done);
	json_decref(done);

	char *gw = scrape(P.gateway_metrics_port);
	AT_LEAST(
		gw,
		"kb_gateway_http_requests_total{route=\"submit\",code=\"202\"}",
		1);
	AT_LEAST(
		gw,
		"kb_gateway_http_request_duration_seconds_count{route=\"health\"}",
		1);
	HAS(gw,
	    "kb_gateway_http_request_duration_seconds_bucket{route=\"submit\",le=\"+Inf\"}");
	AT_LEAST(
		gw,
		"kb_gateway_submissions_total{result=\"accepted\",reason=\"\"}",
		1);
	HAS(gw, "kb_gateway_sse_clients{kind=\"board\"}");
	HAS(gw, "kb_gateway_sse_clients{kind=\"submission\"}");
	HAS(gw, "kb_queue_depth{gpu=\"CPU\"}");
	HAS(gw, "kb_queue_running{gpu=\"CPU\"}");
	AT_LEAST(gw, "kb_gateway_workers_seen{gpu=\"CPU\",state=\"idle\"}", 0);
	/* The scrape comes through the metrics listener: not an API request
	 * in flight (it read -1 when it was taken off as one). */
	AT_LEAST(gw, "kb_gateway_requests_in_flight", 0);
	ck_assert_ptr_nonnull(
		strstr(gw, "# TYPE kb_kafka_producer_errors_total counter"));
	process_metrics(gw, "gateway");
	free(gw);

	/* The group's lag is -1 (unknown) until the ranker has joined and
	 * read it; after a fold it has joined, and it reads an unknown lag
	 * again every second (LAG_UNKNOWN_S), so it is known within a few. */
	char *rk = scrape(P.ranker_metrics_port);
	for (int i = 0; i < 100 && sample(rk, "kb_ranker_consumer_lag") < 0;
	     i++) {
		free(rk);
		usleep(100 * 1000);
		rk = scrape(P.ranker_metrics_port);
	}
	ck_assert_msg(
		sample(rk, "kb_ranker_folds_total{outcome=\"new\"}") +
				sample(rk,
				       "kb_ranker_folds_total{outcome=\"personal_best\"}") >=
			1,
		"no fold counted:\n%s", rk);
	HAS(rk, "kb_ranker_folds_total{outcome=\"duplicate\"}");
	HAS(rk, "kb_ranker_consumer_lag");
	AT_LEAST(rk, "kb_ranker_progress_total", 1);
	HAS(rk, "kb_ranker_fold_seconds_count");
	ck_assert_ptr_nonnull(
		strstr(rk, "# TYPE kb_kafka_consumer_errors_total counter"));
	process_metrics(rk, "ranker");
	free(rk);

	char *wk = scrape(P.worker_metrics_port);
	AT_LEAST(
		wk,
		"kb_worker_jobs_total{gpu=\"CPU\",verdict=\"passed\",fault=\"none\"}",
		1);
	AT_LEAST(
		wk,
		"kb_worker_job_phase_seconds_count{gpu=\"CPU\",phase=\"build\"}",
		1);
	AT_LEAST(wk,
		 "kb_worker_job_phase_seconds_count{gpu=\"CPU\",phase=\"run\"}",
		 1);
	ck_assert_msg(sample(wk, "kb_worker_serving{gpu=\"CPU\"}") == 1, "%s",
		      wk);
	ck_assert_msg(sample(wk, "kb_worker_jobs_in_flight{gpu=\"CPU\"}") == 0,
		      "%s", wk);
	ck_assert_ptr_nonnull(
		strstr(wk, "# TYPE kb_worker_sandbox_kills_total counter"));
	/* A CPU worker has no NVML device: its telemetry is absent, not 0. */
	ck_assert_ptr_null(strstr(wk, "kb_worker_device_temperature_celsius{"));
	process_metrics(wk, "worker");
	free(wk);
}

START_TEST(web_and_metrics)
{
	/* Each page the browser opens holds an event stream a while: more
	 * than the default four per address. A board past its deadline
	 * (tests/web/past.yaml) for the code links. */
	static const char *const env[] = {
		"KB_WEB_STREAMS_PER_IP=32",
		"KB_PROBLEMS=" KB_SOURCE_DIR "/problems/cpu.yaml:" KB_SOURCE_DIR
		"/problems/pmpp_py.yaml:" KB_SOURCE_DIR "/tests/web/past.yaml",
		NULL};
	struct platform_opts o = {.metrics = 1, .env = env};

	started = platform_start_opts(&P, &o) == 0;
	browser();
	metrics_of_every_service();
	platform_stop(&P);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("web_browser");
	TCase *tc = tcase_create("platform");

	tcase_set_timeout(tc, 420);
	tcase_add_test(tc, web_and_metrics);
	suite_add_tcase(s, tc);
	return kb_check_run(s);
}
