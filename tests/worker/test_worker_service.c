/* The worker's Kafka loop against kb-devbroker and a redis-server:
 * results before commits, dead letters, draining on SIGTERM, tasks by
 * reference, and the lease that runs each job once. */
#include <check.h>
#include <dirent.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "jobdir.h"
#include "kb_budget.h"
#include "kb_kafka.h"
#include "kb_lease.h"
#include "kb_log.h"
#include "kb_redis.h"
#include "kb_sandbox.h"
#include "kb_task.h"
#include "kb_taskstore.h"
#include "kb_testenv.h"
#include "kb_util.h"
#include "pbutil.h"
#include "submission.h"
#include "worker_fixture.h"
#include "kb_check_main.h"

#define WORKER KB_BINARY_DIR "/worker/kb-worker"
#define PROBLEMS KB_SOURCE_DIR "/problems"
#define TOPIC "kb.submissions.CPU"

static const char *fast_group[] = {"session.timeout.ms", "6000",
				   "heartbeat.interval.ms", "250", NULL};

static struct kb_test_server broker, redis;
static redisContext *rc;
static kb_producer *producer;
static kb_consumer *results; /* kb.results, a group of its own */
static char *workdir, logpath[4200];
static char env_brokers[256], env_workdir[4200], env_isolate[32];
static char env_redis[256];
static pid_t worker;

static void setup(void)
{
	struct kb_sandbox_caps caps;
	char err[512] = "", group[64];
	const char *topics[] = {KB_TOPIC_RESULTS};

	ck_assert_int_eq(kb_test_devbroker_start(&broker), 0);
	ck_assert_int_eq(kb_test_redis_start(&redis), 0);
	rc = kb_redis_connect(redis.url, 5000, err, sizeof(err));
	ck_assert_msg(rc != NULL, "%s", err);
	snprintf(env_redis, sizeof(env_redis), "KB_REDIS_URL=%s", redis.url);
	producer = kb_producer_new(broker.url, "test", NULL, err, sizeof(err));
	ck_assert_msg(producer != NULL, "%s", err);
	snprintf(group, sizeof(group), "test-results-%d", (int)getpid());
	results = kb_consumer_new(broker.url, group, topics, 1, fast_group, err,
				  sizeof(err));
	ck_assert_msg(results != NULL, "%s", err);
	workdir = wf_tmpdir();
	snprintf(logpath, sizeof(logpath), "%s.log", workdir);
	snprintf(env_brokers, sizeof(env_brokers), "KB_KAFKA_BROKERS=%s",
		 broker.url);
	snprintf(env_workdir, sizeof(env_workdir), "KB_WORKDIR=%s", workdir);
	snprintf(env_isolate, sizeof(env_isolate), "KB_SANDBOX_ISOLATE=%d",
		 kb_sandbox_probe(&caps, err, sizeof(err)) == 0 &&
			 caps.isolate_ok);
}

static void teardown(void)
{
	if (worker > 0)
		kb_test_stop(worker, 5000);
	kb_consumer_destroy(results);
	kb_producer_destroy(producer);
	redisFree(rc);
	kb_test_server_stop(&broker);
	kb_test_server_stop(&redis);
	kb_jobdir_remove(workdir);
	if (!getenv("KB_TEST_KEEP_LOGS"))
		unlink(logpath);
	else
		fprintf(stderr, "worker log: %s\n", logpath);
	free(workdir);
}

static pid_t start_worker(const char *grace)
{
	char *argv[] = {WORKER, NULL};
	char env_grace[64];
	char *env[] = {env_brokers, env_workdir, env_isolate, env_redis,
		       "KB_GPU=CPU", "KB_LEASE_TTL_S=3",
		       "KB_WORKER_NAME=test-worker", "KB_LOG_LEVEL=debug",
		       "KB_CONSUMER_EXTRA=session.timeout.ms=6000,"
		       "heartbeat.interval.ms=250",
		       "KB_JOB_ATTEMPTS=2", "KB_HEARTBEAT_S=1",
		       /* the board it serves; the start-up checks stay short */
		       "KB_PROBLEMS=" PROBLEMS "/cpu.yaml", env_grace, NULL};
	pid_t pid;

	snprintf(env_grace, sizeof(env_grace), "KB_DRAIN_GRACE_S=%s", grace);
	pid = kb_test_spawn(argv, env, logpath);
	ck_assert_int_gt(pid, 0);
	/* Its start-up checks build and run examples first: on a loaded
	 * machine that can take a while, so the wait is long and ends early
	 * only if the worker exits. */
	ck_assert_msg(kb_test_wait_log(pid, logpath, "consuming " TOPIC, 120000,
				       NULL, 0) == 0,
		      "worker exited or did not start; see %s", logpath);
	return pid;
}

static void send_bytes(const char *topic, const char *key, const void *buf,
		       size_t len)
{
	char err[512] = "";

	ck_assert_msg(kb_producer_send(producer, topic, key, strlen(key), buf,
				       len, 5000, err, sizeof(err)) == 0,
		      "%s", err);
}

/* A Submission of vectorsum_cpu in test mode with code, as an older
 * gateway made them (the task's files in the event). */
static Kb__Submission *build(uint64_t id, const char *code,
			     unsigned test_timeout)
{
	struct kb_task t;
	struct kb_submission_args a = {.id = id,
				       .user_id = "u1",
				       .user_name = "alice",
				       .gpu = "CPU",
				       .mode = KB__MODE__MODE_TEST,
				       .file_name = "s.c",
				       .code = code,
				       .code_len = strlen(code),
				       .submitted_at_ms = kb_now_ms()};
	char err[512];
	Kb__Submission *s;

	ck_assert_int_eq(kb_task_load_dir(PROBLEMS "/vectorsum_cpu",
					  "vectorsum_cpu", &t, err,
					  sizeof(err)),
			 0);
	s = kb_submission_build(&t, &a, err, sizeof(err));
	ck_assert_msg(s != NULL, "%s", err);
	if (test_timeout)
		s->task->test_timeout = test_timeout;
	kb_task_clear(&t);
	return s;
}

static void send_sub(Kb__Submission *s)
{
	char key[24];
	uint8_t *buf;
	size_t len;

	len = kb__submission__get_packed_size(s);
	buf = kb__xcalloc(1, len);
	kb__submission__pack(s, buf);
	snprintf(key, sizeof(key), "%" PRIu64, s->id);
	send_bytes(TOPIC, key, buf, len);
	free(buf);
	kb__submission__free_unpacked(s, NULL);
}

/* Publishes a Submission of vectorsum_cpu in test mode with code. */
static void submit(uint64_t id, const char *code, unsigned test_timeout)
{
	send_sub(build(id, code, test_timeout));
}

/* The same as a gateway makes it now: the task by reference, stored in
 * Redis (unless store is 0) with its submission file empty. */
static void submit_by_ref(uint64_t id, const char *code, int store,
			  unsigned test_timeout)
{
	Kb__Submission *s = build(id, code, test_timeout);
	Kb__Task *t = s->task;
	char ref[65], err[256];
	uint8_t *buf;
	size_t len;

	for (size_t i = 0; i < t->n_files; i++)
		if (strcmp(t->files[i]->name, "submission.c") == 0) {
			free(t->files[i]->content.data);
			t->files[i]->content.data = NULL;
			t->files[i]->content.len = 0;
		}
	t->submission_file = kb__xstrdup("submission.c");
	len = kb__task__get_packed_size(t);
	buf = kb__xcalloc(1, len);
	kb__task__pack(t, buf);
	kb_taskstore_ref(buf, len, ref);
	if (store)
		ck_assert_msg(kb_taskstore_put(rc, buf, len, ref, err,
					       sizeof(err)) == 0,
			      "%s", err);
	free(buf);
	kb__task__free_unpacked(t, NULL);
	s->task = NULL;
	s->task_ref = kb__xstrdup(ref);
	send_sub(s);
}

/* Collects kb.results events for id until its Result arrives or
 * timeout_s passes. Returns the Result (or NULL); *nprogress counts the
 * Progress events before it, *first_stage is the first one's stage. */
static Kb__Result *await_result(uint64_t id, double timeout_s, int *nprogress,
				int *first_stage)
{
	const double until = kb_mono_s() + timeout_s;

	*nprogress = 0;
	while (kb_mono_s() < until) {
		kb_message m;
		Kb__ResultEvent *ev;
		Kb__Result *r = NULL;

		if (kb_consumer_poll(results, 200, &m) != 1)
			continue;
		ev = kb__result_event__unpack(NULL, m.value_len, m.value);
		ck_assert_ptr_nonnull(ev);
		if (ev->submission_id == id) {
			char key[24];

			snprintf(key, sizeof(key), "%" PRIu64, id);
			ck_assert_uint_eq(m.key_len, strlen(key));
			ck_assert_int_eq(memcmp(m.key, key, m.key_len), 0);
			if (ev->event_case ==
			    KB__RESULT_EVENT__EVENT_PROGRESS) {
				if ((*nprogress)++ == 0)
					*first_stage = ev->progress->stage;
			} else if (ev->event_case ==
				   KB__RESULT_EVENT__EVENT_RESULT) {
				r = ev->result;
				ev->result = NULL;
				ev->event_case =
					KB__RESULT_EVENT__EVENT__NOT_SET;
			}
		}
		kb__result_event__free_unpacked(ev, NULL);
		kb_message_release(&m);
		if (r)
			return r;
	}
	return NULL;
}

/* Joins the worker's own group (the worker being stopped) and returns the
 * key of the first message it is given: the first uncommitted one. */
static char *first_uncommitted(double timeout_s)
{
	const char *topics[] = {TOPIC};
	char err[512] = "", *key = NULL;
	kb_consumer *c = kb_consumer_new(broker.url, "kb-worker.CPU", topics, 1,
					 fast_group, err, sizeof(err));
	const double until = kb_mono_s() + timeout_s;

	ck_assert_msg(c != NULL, "%s", err);
	while (!key && kb_mono_s() < until) {
		kb_message m;

		if (kb_consumer_poll(c, 200, &m) != 1)
			continue;
		key = kb__xstrndup(m.key, m.key_len);
		kb_message_release(&m);
	}
	kb_consumer_destroy(c);
	return key;
}

static int processes_in_workdir(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d))) {
		char link[300], target[4200];
		ssize_t len;

		snprintf(link, sizeof(link), "/proc/%s/cwd", e->d_name);
		len = readlink(link, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = '\0';
		n += strncmp(target, workdir, strlen(workdir)) == 0;
	}
	if (d)
		closedir(d);
	return n;
}

/* Waits for pid to exit by itself; SIGKILL after timeout_s. */
static int wait_exit(pid_t pid, double timeout_s)
{
	const double until = kb_mono_s() + timeout_s;
	int st = -1;

	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (kb_mono_s() > until) {
			kill(-pid, SIGKILL);
			waitpid(pid, &st, 0);
			break;
		}
		usleep(50000);
	}
	return st;
}

static const char *ok_code(void)
{
	static char *code;
	size_t len;

	if (!code)
		ck_assert_int_eq(kb_read_file(PROBLEMS
					      "/vectorsum_cpu/submission_ok.c",
					      SIZE_MAX, &code, &len),
				 0);
	return code;
}

static const char loop_code[] =
	"#include <stddef.h>\n"
	"float custom_kernel(const float *d, size_t n)\n"
	"{\n\tvolatile int spin = 1;\n\twhile (spin)\n\t\t;\n\treturn 0;\n}\n";

/* Waits up to timeout_s for a heartbeat of test-worker (a Progress with
 * submission 0) that names busy_with; returns how many it saw. */
static int await_heartbeat(uint64_t busy_with, double timeout_s)
{
	const double until = kb_mono_s() + timeout_s;
	int n = 0;

	while (kb_mono_s() < until) {
		kb_message m;
		Kb__ResultEvent *ev;
		int match = 0;

		if (kb_consumer_poll(results, 200, &m) != 1)
			continue;
		ev = kb__result_event__unpack(NULL, m.value_len, m.value);
		ck_assert_ptr_nonnull(ev);
		if (ev->submission_id == 0 &&
		    ev->event_case == KB__RESULT_EVENT__EVENT_PROGRESS) {
			ck_assert_str_eq(ev->gpu, "CPU");
			ck_assert_str_eq(ev->progress->worker, "test-worker");
			n++;
			match = ev->progress->busy_with == busy_with;
		}
		kb__result_event__free_unpacked(ev, NULL);
		kb_message_release(&m);
		if (match)
			return n;
	}
	return -n - 1;
}

/* A consuming worker says so while idle, and names its job while busy
 * (KB_HEARTBEAT_S=1 here), so gateways know it before any job. */
START_TEST(test_heartbeats)
{
	int nprog = 0, first = -1;
	Kb__Result *r;

	worker = start_worker("20");
	ck_assert_msg(await_heartbeat(0, 10) > 0, "no idle heartbeat; see %s",
		      logpath);
	ck_assert_msg(await_heartbeat(0, 3) > 0,
		      "one idle heartbeat only; see %s", logpath);
	submit(8, ok_code(), 0);
	ck_assert_msg(await_heartbeat(8, 60) > 0, "no busy heartbeat; see %s",
		      logpath);
	r = await_result(8, 90, &nprog, &first);
	ck_assert_msg(r != NULL, "no result; see %s", logpath);
	kb__result__free_unpacked(r, NULL);
	ck_assert_msg(await_heartbeat(0, 10) > 0, "not idle again; see %s",
		      logpath);
}
END_TEST

START_TEST(test_result_then_commit)
{
	int nprog = 0, first = -1, st;
	Kb__Result *r;
	char *key;

	worker = start_worker("20");
	send_bytes(TOPIC, "garbage", "\xff\xff\xff\xff", 4);
	submit(7, ok_code(), 0);
	r = await_result(7, 90, &nprog, &first);
	ck_assert_msg(r != NULL, "no result; see %s", logpath);
	ck_assert_int_eq(r->verdict, KB__VERDICT__VERDICT_PASSED);
	ck_assert_str_eq(r->worker, "test-worker");
	ck_assert_str_eq(r->gpu, "CPU");
	ck_assert_uint_eq(r->n_runs, 1);
	ck_assert_int_ge(nprog, 3); /* running, compiling, testing */
	ck_assert_int_eq(first, KB__STAGE__STAGE_QUEUED);
	kb__result__free_unpacked(r, NULL);
	ck_assert(kb_test_wait_file(logpath, "job done sub=7 gpu=CPU", 60000,
				    NULL, 0) == 0);
	ck_assert(kb_test_wait_file(logpath, "dead letter", 60000, NULL, 0) ==
		  0);
	st = kb_test_stop(worker, 15000);
	worker = 0;
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
	/* Both the dead letter and the job were committed: the group's next
	 * message is one sent now. */
	send_bytes(TOPIC, "marker", "x", 1);
	key = first_uncommitted(30);
	ck_assert_msg(key && strcmp(key, "marker") == 0, "first: %s",
		      key ? key : "(none)");
	free(key);
}
END_TEST

/* SIGTERM in the middle of a job that outlasts the grace period: the job
 * is abandoned (no Result, processes killed, offset uncommitted) and the
 * worker exits soon after the grace period. */
START_TEST(test_drain_abandons)
{
	int nprog = 0, first = -1, st;
	double t0;
	char *key;

	worker = start_worker("2");
	submit(8, loop_code, 120);
	/* Wait until the harness is running. */
	for (int i = 0; i < 300 && processes_in_workdir() == 0; i++)
		usleep(100000);
	ck_assert_int_gt(processes_in_workdir(), 0);
	t0 = kb_mono_s();
	/* SIGTERM, and SIGKILL only after 100 s, well before the job's own
	 * 120 s limit: exiting 0 by itself proves the worker abandoned the
	 * job rather than waited for it, whatever the load. Exiting soon
	 * after the 2 s grace period is a budget. */
	st = kb_test_stop(worker, 100000);
	worker = 0;
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
	kb_budget("worker drain: exit after SIGTERM, 2 s grace, job abandoned",
		  kb_mono_s() - t0, 2 + 6, "s");
	ck_assert(kb_test_wait_file(logpath, "abandoning sub=8", 1, NULL, 0) ==
		  0);
	for (int i = 0; i < 300 && processes_in_workdir() > 0; i++)
		usleep(100000);
	ck_assert_int_eq(processes_in_workdir(), 0);
	ck_assert_ptr_null(await_result(8, 2, &nprog, &first));
	key = first_uncommitted(30);
	ck_assert_msg(key && strcmp(key, "8") == 0, "first: %s",
		      key ? key : "(none)");
	free(key);
}
END_TEST

/* SIGTERM while a short job runs: it is finished and published. */
START_TEST(test_drain_finishes)
{
	int nprog = 0, first = -1, st;
	Kb__Result *r;

	worker = start_worker("30");
	submit(9, ok_code(), 0);
	ck_assert(kb_test_wait_file(logpath, "job start sub=9", 30000, NULL,
				    0) == 0);
	kill(worker, SIGTERM);
	r = await_result(9, 60, &nprog, &first);
	ck_assert_msg(r != NULL, "no result; see %s", logpath);
	ck_assert_int_eq(r->verdict, KB__VERDICT__VERDICT_PASSED);
	kb__result__free_unpacked(r, NULL);
	/* One signal only: a second one would exit at once. */
	st = wait_exit(worker, 60);
	worker = 0;
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
	ck_assert(kb_test_wait_file(logpath, "worker stopped", 1, NULL, 0) ==
		  0);
}
END_TEST

/* A job that stops every worker that runs it (here: killed mid-job) is
 * run KB_JOB_ATTEMPTS times at most, then given up with an infra_error
 * Result and committed; the directory a killed worker left is removed
 * when the next one starts. */
START_TEST(test_poison_job_given_up)
{
	int nprog = 0, first = -1, st;
	Kb__Result *r;
	char *key;

	submit(10, loop_code, 120);
	for (int attempt = 1; attempt <= 2; attempt++) {
		char line[64];

		worker = start_worker("20");
		snprintf(line, sizeof(line), "job start sub=10");
		ck_assert_msg(
			kb_test_wait_file(logpath, line, 30000, NULL, 0) == 0,
			"attempt %d did not start; see %s", attempt, logpath);
		for (int i = 0; i < 300 && processes_in_workdir() == 0; i++)
			usleep(100000);
		ck_assert_int_gt(processes_in_workdir(), 0);
		kill(-worker, SIGKILL);
		kill(worker, SIGKILL);
		waitpid(worker, &st, 0);
		worker = 0;
		/* Its sandboxed processes die with it (PDEATHSIG). */
		for (int i = 0; i < 50 && processes_in_workdir() > 0; i++)
			usleep(100000);
		ck_assert_int_eq(truncate(logpath, 0), 0);
	}
	worker = start_worker("20");
	r = await_result(10, 60, &nprog, &first);
	ck_assert_msg(r != NULL, "no result; see %s", logpath);
	ck_assert_int_eq(r->verdict, KB__VERDICT__VERDICT_INFRA_ERROR);
	ck_assert_int_eq(r->fault, KB__FAULT__FAULT_INFRA);
	ck_assert_msg(strstr(r->error, "2 workers stopped"), "%s", r->error);
	kb__result__free_unpacked(r, NULL);
	ck_assert(kb_test_wait_file(logpath, "removed 1 stale job directory", 1,
				    NULL, 0) == 0);
	st = kb_test_stop(worker, 15000);
	worker = 0;
	send_bytes(TOPIC, "marker", "x", 1);
	key = first_uncommitted(30);
	ck_assert_msg(key && strcmp(key, "marker") == 0, "first: %s",
		      key ? key : "(none)");
	free(key);
}
END_TEST

/* A Submission that names its task by reference runs with the task's
 * files from the store; one whose task the store lacks ends as the
 * platform's fault (infra_error) and is committed. */
START_TEST(test_task_by_reference)
{
	int nprog = 0, first = -1;
	Kb__Result *r;
	char *key;

	worker = start_worker("20");
	submit_by_ref(21, ok_code(), 1, 0);
	r = await_result(21, 90, &nprog, &first);
	ck_assert_msg(r != NULL, "no result; see %s", logpath);
	ck_assert_int_eq(r->verdict, KB__VERDICT__VERDICT_PASSED);
	kb__result__free_unpacked(r, NULL);
	/* Another task (its timeout differs), never stored. */
	submit_by_ref(22, ok_code(), 0, 77);
	r = await_result(22, 60, &nprog, &first);
	ck_assert_msg(r != NULL, "no result; see %s", logpath);
	ck_assert_int_eq(r->verdict, KB__VERDICT__VERDICT_INFRA_ERROR);
	ck_assert_int_eq(r->fault, KB__FAULT__FAULT_INFRA);
	ck_assert_msg(strstr(r->error, "not in the task store"), "%s",
		      r->error);
	kb__result__free_unpacked(r, NULL);
	kb_test_stop(worker, 15000);
	worker = 0;
	send_bytes(TOPIC, "marker", "x", 1);
	key = first_uncommitted(30);
	ck_assert_msg(key && strcmp(key, "marker") == 0, "first: %s",
		      key ? key : "(none)");
	free(key);
}
END_TEST

/* A job whose lease another worker holds is not started while that one
 * keeps it, and is skipped and committed once that one marks it done:
 * however often a job is delivered, it is evaluated once. */
START_TEST(test_lease_held_elsewhere)
{
	struct kb_lease_take lt;
	int nprog = 0, first = -1, waited = 0;
	char err[256], *key;

	worker = start_worker("20");
	ck_assert_int_eq(kb_lease_take(rc, 23, "other-worker/1/x", 4000, 3, &lt,
				       err, sizeof(err)),
			 0);
	ck_assert_int_eq(lt.verdict, KB_LEASE_TAKEN);
	submit(23, ok_code(), 0);
	/* Held (renewed) until the worker says it waits, and then well
	 * past the worker's own lease ttl of 3 s. */
	for (int i = 0; i < 240 && !waited; i++) {
		ck_assert_int_eq(kb_lease_renew(rc, 23, "other-worker/1/x",
						4000, err, sizeof(err)),
				 1);
		waited = kb_test_wait_file(logpath,
					   "job sub=23 waits: "
					   "other-worker/1/x is running it",
					   500, NULL, 0) == 0;
	}
	ck_assert_msg(waited, "the worker did not wait; see %s", logpath);
	for (int i = 0; i < 16; i++) {
		ck_assert_int_eq(kb_lease_renew(rc, 23, "other-worker/1/x",
						4000, err, sizeof(err)),
				 1);
		usleep(500000);
	}
	ck_assert_msg(kb_test_wait_file(logpath, "job start sub=23", 1, NULL,
					0) != 0,
		      "started a job another worker runs; see %s", logpath);
	ck_assert_int_eq(kb_lease_finish(rc, 23, "other-worker/1/x", 3600, err,
					 sizeof(err)),
			 1);
	ck_assert_msg(kb_test_wait_file(logpath,
					"job sub=23 was evaluated "
					"already",
					30000, NULL, 0) == 0,
		      "see %s", logpath);
	ck_assert_ptr_null(await_result(23, 2, &nprog, &first));
	ck_assert_msg(kb_test_wait_file(logpath, "job start sub=23", 1, NULL,
					0) != 0,
		      "see %s", logpath);
	kb_test_stop(worker, 15000);
	worker = 0;
	send_bytes(TOPIC, "marker", "x", 1);
	key = first_uncommitted(30);
	ck_assert_msg(key && strcmp(key, "marker") == 0, "first: %s",
		      key ? key : "(none)");
	free(key);
}
END_TEST

/* A worker that published its Result and was killed before it marked
 * the lease done: the lease runs out like a crash's, but the ranker has
 * the Result, so the next worker does not evaluate the job again (it
 * marks it done and commits it). Without the check it would start it. */
START_TEST(test_folded_result_not_rerun)
{
	struct kb_lease_take lt;
	int nprog = 0, first = -1;
	char err[256], *key;
	redisReply *r;

	ck_assert_int_eq(kb_lease_take(rc, 24, "gone-worker/1/x", 300, 3, &lt,
				       err, sizeof(err)),
			 0);
	ck_assert_int_eq(lt.verdict, KB_LEASE_TAKEN);
	r = redisCommand(rc, "SET kb:res:24:CPU folded");
	ck_assert_ptr_nonnull(r);
	freeReplyObject(r);
	usleep(600000); /* the lease runs out, unrenewed */
	worker = start_worker("20");
	submit(24, ok_code(), 0);
	ck_assert_msg(kb_test_wait_file(logpath,
					"job sub=24: the worker that "
					"stopped while running it had "
					"published its Result",
					60000, NULL, 0) == 0,
		      "see %s", logpath);
	ck_assert_ptr_null(await_result(24, 2, &nprog, &first));
	ck_assert_msg(kb_test_wait_file(logpath, "job start sub=24", 1, NULL,
					0) != 0,
		      "evaluated again; see %s", logpath);
	kb_test_stop(worker, 15000);
	worker = 0;
	send_bytes(TOPIC, "marker", "x", 1);
	key = first_uncommitted(30);
	ck_assert_msg(key && strcmp(key, "marker") == 0, "first: %s",
		      key ? key : "(none)");
	free(key);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("worker_service");
	TCase *tc = tcase_create("service");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_result_then_commit);
	tcase_add_test(tc, test_heartbeats);
	tcase_add_test(tc, test_drain_abandons);
	tcase_add_test(tc, test_folded_result_not_rerun);
	tcase_add_test(tc, test_drain_finishes);
	tcase_add_test(tc, test_poison_job_given_up);
	tcase_add_test(tc, test_task_by_reference);
	tcase_add_test(tc, test_lease_held_elsewhere);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	kb_log_init("worker-test", KB_LOG_WARN, 0);
	return kb_check_run(suite());
}
