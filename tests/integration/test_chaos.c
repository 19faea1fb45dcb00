/* test_chaos: every accepted submission runs exactly once, through a
 * backlog and while every service but the broker is SIGKILLed and
 * restarted (docs/internals.md "Every job runs once").
 *
 * Real processes on loopback: kb-devbroker, a redis-server with an
 * append-only file synced on every write, kb-gateway, kb-ranker and two
 * CPU workers. KB_CHAOS_SUBMISSIONS (default 150) test-mode submissions
 * of vectorsum_cpu, half of them failing, are queued before any worker
 * runs: in the old event format (the task's files in every event, about
 * 78 KB) that backlog was past the dev broker's 5 MiB per partition. Then
 * the workers start, and while they drain the queue a worker, the
 * gateway, the ranker, Redis and the other worker are SIGKILLed and
 * restarted in turn. The dev broker is not killed: it keeps nothing
 * across a restart, by design (a real cluster is replicated).
 *
 * Asserted: every event is small; every accepted id ends "done" (none
 * stuck, none failed); each has exactly one Result on kb.results and one
 * completed evaluation; a second start happens only for jobs whose
 * worker was killed while running them; nothing is "given up". Budgets,
 * not assertions, for the times (kb_budget.h).
 *
 * lost_messages_are_republished: one partition, and a backlog of large
 * submissions past its 5 MiB: the broker deletes the oldest; the
 * gateway's reconciler publishes them again and every one ends "done".
 */
#include <check.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kb.pb-c.h"
#include "kb_budget.h"
#include "kb_kafka.h"
#include "kb_redis.h"
#include "kb_util.h"
#include "platform.h"
#include "kb_check_main.h"

#define OK_CODE KB_SOURCE_DIR "/problems/vectorsum_cpu/submission_ok.c"
#define WRONG_CODE KB_SOURCE_DIR "/problems/vectorsum_cpu/submission_wrong.c"
#define MAX_SUBS 20000
#define SMALL_EVENT 4096

static const char *const chaos_env[] = {"KB_PROBLEMS=" KB_SOURCE_DIR
					"/problems/cpu.yaml",
					"KB_MAX_QUEUED_PER_GPU=0",
					"KB_SELFTEST=0",
					"KB_PYTHON_READY=0",
					"KB_LOG_LEVEL=info",
					"KB_RECONCILE_S=2",
					"KB_RECONCILE_GRACE_S=20",
					"KB_LEASE_TTL_S=6",
					NULL};

static struct platform P;
static long ids[MAX_SUBS];
static int nids;

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static int n_submissions(void)
{
	const char *v = getenv("KB_CHAOS_SUBMISSIONS");
	long n = v ? strtol(v, NULL, 10) : 150;

	return n < 1 ? 1 : n > MAX_SUBS ? MAX_SUBS : (int)n;
}

static void start(int durable)
{
	struct platform_opts o = {
		.no_worker = 1, .durable_redis = durable, .env = chaos_env};

	ck_assert_msg(platform_start_opts(&P, &o) == 0,
		      "platform did not start");
	nids = 0;
}

static void teardown(void)
{
	platform_stop(&P);
}

/* Redis again after a restart of its own. */
static void reconnect(void)
{
	char err[256];

	if (P.rc)
		redisFree(P.rc);
	P.rc = NULL;
	for (int i = 0; i < 200 && !P.rc; i++) {
		P.rc = kb_redis_connect(P.redis.url, 2000, err, sizeof(err));
		if (!P.rc)
			sleep_ms(100);
	}
	ck_assert_msg(P.rc != NULL, "redis: %s", err);
}

/* How many of the ids are "done" (and *failed "failed"). */
static int count_done(int *failed)
{
	int done = 0;

	*failed = 0;
	for (int i = 0; i < nids; i++)
		redisAppendCommand(P.rc, "HGET kb:sub:%ld status", ids[i]);
	for (int i = 0; i < nids; i++) {
		redisReply *r = NULL;

		if (redisGetReply(P.rc, (void **)&r) != REDIS_OK) {
			reconnect();
			return -1;
		}
		if (r->type == REDIS_REPLY_STRING) {
			done += strcmp(r->str, "done") == 0;
			*failed += strcmp(r->str, "failed") == 0;
		}
		freeReplyObject(r);
	}
	return done;
}

/* Waits until at least want ids are done, up to timeout_s. */
static int wait_done_count(int want, double timeout_s)
{
	const double until = kb_mono_s() + timeout_s;
	int done = 0, failed;

	while (kb_mono_s() < until) {
		done = count_done(&failed);
		if (done >= want || done + failed >= nids)
			break;
		sleep_ms(200);
	}
	return done;
}

static void sigkill(pid_t pid)
{
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	for (int i = 0; i < P.nworkers; i++)
		if (P.workers[i] == pid)
			P.workers[i] = 0;
}

/* Lines of every worker log (w*.log) that contain needle, by id. */
static void count_lines(const char *needle, int *per_index)
{
	char cmd[512], line[1024];
	FILE *f;

	memset(per_index, 0, sizeof(int) * (size_t)nids);
	snprintf(cmd, sizeof(cmd), "cat %s/w*.log", P.dir);
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		const char *at = strstr(line, needle);
		long id;

		if (!at)
			continue;
		id = strtol(at + strlen(needle), NULL, 10);
		for (int i = 0; i < nids; i++)
			if (ids[i] == id)
				per_index[i]++;
	}
	pclose(f);
}

static int worker_logs_say(const char *needle)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "grep -q '%s' %s/w*.log", needle, P.dir);
	return system(cmd) == 0;
}

/* Results per id on kb.results, read from the start by a group of its
 * own, until every id has one and nothing more came for a while. */
static void count_results_all(int *per_index)
{
	const char *topics[] = {KB_TOPIC_RESULTS};
	char group[64], err[256];
	double quiet_until = kb_mono_s() + 60;
	kb_consumer *c;
	int seen = 0;

	memset(per_index, 0, sizeof(int) * (size_t)nids);
	snprintf(group, sizeof(group), "chaos-results-%d", (int)getpid());
	c = kb_consumer_new(P.broker.url, group, topics, 1, NULL, err,
			    sizeof(err));
	ck_assert_msg(c != NULL, "%s", err);
	while (kb_mono_s() < quiet_until) {
		kb_message m;
		Kb__ResultEvent *ev;

		if (kb_consumer_poll(c, 200, &m) != 1)
			continue;
		ev = kb__result_event__unpack(NULL, m.value_len, m.value);
		if (ev && ev->event_case == KB__RESULT_EVENT__EVENT_RESULT)
			for (int i = 0; i < nids; i++)
				if ((uint64_t)ids[i] == ev->submission_id &&
				    per_index[i]++ == 0 && ++seen == nids)
					/* All in: a duplicate would follow
					 * soon, if any. */
					quiet_until = kb_mono_s() + 5;
		if (ev)
			kb__result_event__free_unpacked(ev, NULL);
		kb_message_release(&m);
	}
	kb_consumer_destroy(c);
}

/* The largest Submission event on kb.submissions.CPU. */
static size_t largest_event(int want)
{
	const char *topics[] = {"kb.submissions.CPU"};
	char group[64], err[256];
	const double until = kb_mono_s() + 60;
	size_t largest = 0;
	int n = 0;
	kb_consumer *c;

	snprintf(group, sizeof(group), "chaos-sizes-%d", (int)getpid());
	c = kb_consumer_new(P.broker.url, group, topics, 1, NULL, err,
			    sizeof(err));
	ck_assert_msg(c != NULL, "%s", err);
	while (n < want && kb_mono_s() < until) {
		kb_message m;

		if (kb_consumer_poll(c, 200, &m) != 1)
			continue;
		if (m.value_len > largest)
			largest = m.value_len;
		n++;
		kb_message_release(&m);
	}
	kb_consumer_destroy(c);
	ck_assert_int_eq(n, want);
	return largest;
}

static void submit_all(int n, const char *ok, const char *wrong)
{
	for (int i = 0; i < n; i++) {
		long id =
			submit(&P, "vectorsum_cpu", "test", i % 2 ? wrong : ok);

		ck_assert_msg(id > 0, "submission %d refused", i);
		ids[nids++] = id;
	}
}

/* Every id: one completed evaluation, one Result, no give-up; a second
 * start only where a worker was killed mid-job (at most kills). */
static void assert_once(int kills)
{
	int *done = calloc((size_t)nids, sizeof(int));
	int *started = calloc((size_t)nids, sizeof(int));
	int *results = calloc((size_t)nids, sizeof(int));
	int restarted = 0;

	count_lines("job done sub=", done);
	count_lines("job start sub=", started);
	count_results_all(results);
	for (int i = 0; i < nids; i++) {
		ck_assert_msg(done[i] == 1,
			      "sub %ld evaluated %d times; logs in %s", ids[i],
			      done[i], P.dir);
		ck_assert_msg(results[i] == 1,
			      "sub %ld has %d Results; logs in %s", ids[i],
			      results[i], P.dir);
		ck_assert_msg(started[i] >= 1 && started[i] <= 2,
			      "sub %ld started %d times; logs in %s", ids[i],
			      started[i], P.dir);
		restarted += started[i] - 1;
	}
	ck_assert_msg(restarted <= kills,
		      "%d jobs started twice, %d workers "
		      "killed; logs in %s",
		      restarted, kills, P.dir);
	ck_assert_msg(!worker_logs_say("given up"),
		      "a job was given up; logs in %s", P.dir);
	free(done);
	free(started);
	free(results);
}

START_TEST(chaos_every_job_once)
{
	const int n = n_submissions();
	const double t0 = kb_mono_s();
	pid_t w1, w2;
	int failed, step = n / 6 > 0 ? n / 6 : 1, kills = 0;
	size_t largest;
	char cmd[512];
	double t_drain;

	start(1);
	submit_all(n, OK_CODE, WRONG_CODE);
	kb_budget("chaos: backlog queued through HTTP", kb_mono_s() - t0,
		  n * 0.1 + 30, "s");
	largest = largest_event(n);
	kb_budget("chaos: largest Submission event", (double)largest,
		  SMALL_EVENT, "bytes");
	ck_assert_msg(largest < SMALL_EVENT, "events are not small");
	t_drain = kb_mono_s();
	w1 = platform_start_worker(&P, "w1");
	w2 = platform_start_worker(&P, "w2");

	/* A worker, most likely in the middle of a job. */
	wait_done_count(step, 300);
	sigkill(w1);
	kills++;
	w1 = platform_start_worker(&P, "w1-again");
	/* The gateway (its reconciler and its events). */
	wait_done_count(2 * step, 300);
	sigkill(P.gateway);
	ck_assert_int_eq(platform_restart_gateway(&P, "gateway-again"), 0);
	/* The ranker, with Results in flight. */
	wait_done_count(3 * step, 300);
	sigkill(P.ranker);
	P.ranker = platform_start_ranker(&P, "ranker-again");
	/* Redis: leases, records and tasks come back from its file. */
	wait_done_count(4 * step, 300);
	sigkill(P.redis.pid);
	P.redis.pid = 0;
	ck_assert_int_eq(kb_test_redis_restart(&P.redis), 0);
	reconnect();
	/* The other worker. */
	wait_done_count(5 * step, 300);
	sigkill(w2);
	kills++;
	w2 = platform_start_worker(&P, "w2-again");

	wait_done_count(n, 600);
	ck_assert_msg(count_done(&failed) == n,
		      "%d of %d done, %d failed; logs "
		      "in %s",
		      count_done(&failed), n, failed, P.dir);
	kb_budget("chaos: backlog drained with five kills",
		  kb_mono_s() - t_drain, n * 2.0 + 60, "s");
	assert_once(kills);
	/* Nothing was lost (eight partitions hold the backlog), so nothing
	 * may have been published twice. */
	snprintf(cmd, sizeof(cmd), "grep -q 're-published' %s/gateway*.log",
		 P.dir);
	ck_assert_msg(system(cmd) != 0,
		      "a message in the log was re-published; "
		      "logs in %s",
		      P.dir);
	(void)w1;
	(void)w2;
}
END_TEST

/* A file of vectorsum_cpu's correct code with an incompressible comment
 * of about bytes bytes. Returns its malloc'd path. */
static char *big_submission(size_t bytes)
{
	char *path, *code;
	size_t len;
	FILE *f;

	ck_assert_int_eq(kb_read_file(OK_CODE, SIZE_MAX, &code, &len), 0);
	ck_assert_int_gt(asprintf(&path, "%s/big.c", P.dir), 0);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fwrite(code, 1, len, f);
	fputs("\n/*", f);
	for (size_t i = 0; i < bytes; i += 64) {
		char hex[65];

		kb_random_hex(hex, 32);
		fputs(hex, f);
		fputc(i % 1024 == 0 ? '\n' : ' ', f);
	}
	fputs("*/\n", f);
	fclose(f);
	free(code);
	return path;
}

START_TEST(lost_messages_are_republished)
{
	char *big;
	char cmd[512];

	setenv("KB_DEVBROKER_PARTITIONS", "1", 1);
	start(0);
	big = big_submission(256 * 1024);
	/* 24 of 256 KB on one partition: the first few are deleted. */
	submit_all(24, big, big);
	ck_assert_msg(wait_done_count(1, 1) == 0, "nothing can be done yet");
	snprintf(cmd, sizeof(cmd), "grep -q 're-published' %s/gateway.log",
		 P.dir);
	for (int i = 0; i < 300 && system(cmd) != 0; i++)
		sleep_ms(200);
	ck_assert_msg(system(cmd) == 0,
		      "no submission was re-published; logs "
		      "in %s",
		      P.dir);
	platform_start_worker(&P, "w1");
	ck_assert_msg(wait_done_count(nids, 300) == nids,
		      "not all done; logs "
		      "in %s",
		      P.dir);
	assert_once(0);
	free(big);
}
END_TEST

int main(void)
{
	if (kb_util_init() < 0)
		return 1;
	Suite *s = suite_create("chaos");
	TCase *lost = tcase_create("republish"), *tc = tcase_create("chaos");

	/* CK_RUN_CASE=chaos runs the second alone (the 2,000 run). */
	tcase_add_checked_fixture(lost, NULL, teardown);
	tcase_set_timeout(lost, 600); /* hang guards; see CMakeLists.txt */
	tcase_add_test(lost, lost_messages_are_republished);
	suite_add_tcase(s, lost);
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_set_timeout(tc, 3600);
	tcase_add_test(tc, chaos_every_job_once);
	suite_add_tcase(s, tc);
	return kb_check_run(s);
}
