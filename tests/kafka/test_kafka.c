/* kb_kafka and kb-devbroker against a real kb-devbroker process.
 *
 * Every test starts its own broker (a fresh, empty cluster), so tests share
 * nothing. Timings that matter to the platform (group join, takeover after
 * a member is killed, produce-to-consume latency, how long calls wait for
 * a broker that is down) are budgets (kb_budget.h): printed as
 * "measure: ..." lines, judged by bench/budgets.sh on a quiet machine and
 * never by make test, where load can stretch any of them.
 *
 * KB_TEST_SESSION_MS / KB_TEST_HEARTBEAT_MS override the consumer settings
 * the tests use, for measuring other values.
 */
#include <check.h>
#include <errno.h>
#include <librdkafka/rdkafka.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kb_budget.h"
#include "kb_kafka.h"
#include "kb_log.h"
#include "kb_testenv.h"
#include "kb_check_main.h"

/* Fast takeover on the mock broker (see devbroker/main.c): the dev and
 * test setting for every consumer. */
static char session_ms[16] = "4000";
static char heartbeat_ms[16] = "250";
static const char *fast_group[] = {"session.timeout.ms", session_ms,
				   "heartbeat.interval.ms", heartbeat_ms, NULL};

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* One partition per topic: these cases follow offsets on partition 0
 * (the dev broker's default is eight). */
static void start_broker(struct kb_test_server *b)
{
	setenv("KB_DEVBROKER_PARTITIONS", "1", 1);
	ck_assert_int_eq(kb_test_devbroker_start(b), 0);
}

static kb_producer *new_producer(const char *url, const char *const *extra)
{
	char err[512] = "";
	kb_producer *p =
		kb_producer_new(url, "test-producer", extra, err, sizeof(err));
	ck_assert_msg(p != NULL, "kb_producer_new: %s", err);
	return p;
}

static kb_consumer *new_consumer(const char *url, const char *group,
				 const char *topic)
{
	char err[512] = "";
	const char *topics[] = {topic};
	kb_consumer *c = kb_consumer_new(url, group, topics, 1, fast_group, err,
					 sizeof(err));
	ck_assert_msg(c != NULL, "kb_consumer_new: %s", err);
	return c;
}

static void send_ok(kb_producer *p, const char *topic, const char *key,
		    const void *val, size_t len)
{
	char err[512] = "";
	int rc = kb_producer_send(p, topic, key, strlen(key), val, len, 5000,
				  err, sizeof(err));
	ck_assert_msg(rc == 0, "kb_producer_send(%s): %d %s", topic, rc, err);
}

/* Polls until a message arrives or timeout_ms pass; returns poll's code. */
static int poll_one(kb_consumer *c, int timeout_ms, kb_message *m)
{
	int64_t end = mono_ms() + timeout_ms;
	int rc = 0;

	while (mono_ms() < end) {
		rc = kb_consumer_poll(c, 100, m);
		if (rc != 0)
			return rc;
	}
	return rc;
}

static void expect_msg(kb_consumer *c, int timeout_ms, const char *topic,
		       int64_t offset, const char *key, kb_message *m)
{
	int rc = poll_one(c, timeout_ms, m);
	ck_assert_msg(rc == 1, "expected %s@%lld within %d ms, poll gave %d",
		      key, (long long)offset, timeout_ms, rc);
	ck_assert_str_eq(m->topic, topic);
	ck_assert_int_eq(m->partition, 0);
	ck_assert_int_eq(m->offset, offset);
	ck_assert_uint_eq(m->key_len, strlen(key));
	ck_assert_msg(memcmp(m->key, key, m->key_len) == 0, "key %.*s, want %s",
		      (int)m->key_len, (const char *)m->key, key);
}

START_TEST(topic_names)
{
	char buf[300];
	char long_gpu[260];

	ck_assert_int_eq(kb_topic_submissions(buf, sizeof(buf), "H100"), 0);
	ck_assert_str_eq(buf, "kb.submissions.H100");
	ck_assert_int_eq(kb_topic_submissions(buf, 20, "H100"), 0);
	ck_assert_int_eq(kb_topic_submissions(buf, 19, "H100"), -ENAMETOOLONG);
	memset(long_gpu, 'A', sizeof(long_gpu) - 1);
	long_gpu[sizeof(long_gpu) - 1] = '\0';
	ck_assert_int_eq(kb_topic_submissions(buf, sizeof(buf), long_gpu),
			 -ENAMETOOLONG);
	ck_assert_int_eq(kb_topic_submissions(buf, sizeof(buf), ""), -EINVAL);
	ck_assert_int_eq(kb_topic_submissions(buf, sizeof(buf), "a/b"),
			 -EINVAL);
	ck_assert_int_eq(kb_topic_submissions(buf, sizeof(buf), "H 100"),
			 -EINVAL);
}
END_TEST

START_TEST(round_trip_and_latency)
{
	struct kb_test_server b;
	kb_message m;
	static const char val[] = {'a', '\0', 'b', (char)0xff};
	int64_t lat[21];
	const int nlat = 21;

	start_broker(&b);
	kb_producer *p = new_producer(b.url, NULL);
	send_ok(p, KB_TOPIC_RESULTS, "42", val, sizeof(val));
	ck_assert_int_eq(kb_producer_send_async(p, KB_TOPIC_RESULTS, "43", 2,
						"second", 6),
			 0);
	ck_assert_int_eq(kb_producer_flush(p, 5000), 0);

	int64_t t0 = mono_ms();
	kb_consumer *c = new_consumer(b.url, "t-roundtrip", KB_TOPIC_RESULTS);
	expect_msg(c, 60000, KB_TOPIC_RESULTS, 0, "42", &m);
	fprintf(stderr, "measure: new group join to first message %lld ms\n",
		(long long)(mono_ms() - t0));
	ck_assert_uint_eq(m.value_len, sizeof(val));
	ck_assert(memcmp(m.value, val, sizeof(val)) == 0);
	kb_message_release(&m);
	ck_assert_ptr_null(m.impl);
	expect_msg(c, 30000, KB_TOPIC_RESULTS, 1, "43", &m);
	ck_assert_uint_eq(m.value_len, 6);
	ck_assert(memcmp(m.value, "second", 6) == 0);
	kb_message_release(&m);

	/* A warm consumer: acknowledged send, then receive. */
	for (int i = 0; i < nlat; i++) {
		int64_t t = mono_ms();
		send_ok(p, KB_TOPIC_RESULTS, "lat", "x", 1);
		expect_msg(c, 30000, KB_TOPIC_RESULTS, 2 + i, "lat", &m);
		lat[i] = mono_ms() - t;
		kb_message_release(&m);
	}
	for (int i = 1; i < nlat; i++) /* insertion sort */
		for (int j = i; j > 0 && lat[j - 1] > lat[j]; j--) {
			int64_t tmp = lat[j];
			lat[j] = lat[j - 1];
			lat[j - 1] = tmp;
		}
	fprintf(stderr,
		"measure: send(acked)+consume latency p50 %lld ms max %lld ms\n",
		(long long)lat[nlat / 2], (long long)lat[nlat - 1]);
	/* The platform's whole POST-to-Result budget is 20 ms at p50. */
	kb_budget("kafka send(acked)+consume latency p50",
		  (double)lat[nlat / 2], 60, "ms");

	kb_consumer_destroy(c);
	kb_producer_destroy(p);
	kb_test_server_stop(&b);
}
END_TEST

START_TEST(commit_semantics_and_lag)
{
	struct kb_test_server b;
	kb_message m;
	char err[512] = "";
	const char *topic = "kb.submissions.CPU";

	start_broker(&b);
	kb_producer *p = new_producer(b.url, NULL);
	send_ok(p, topic, "k0", "v0", 2);
	send_ok(p, topic, "k1", "v1", 2);
	kb_producer_destroy(p);

	kb_consumer *a = new_consumer(b.url, "t-commit", topic);
	expect_msg(a, 60000, topic, 0, "k0", &m);
	ck_assert_int_eq(kb_consumer_lag(a), 2); /* nothing committed yet */
	ck_assert_msg(kb_consumer_commit(a, &m, err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert_int_eq(kb_consumer_lag(a), 1);
	kb_message_release(&m);
	expect_msg(a, 30000, topic, 1, "k1", &m);
	kb_message_release(&m); /* not committed: must come back */
	ck_assert_int_eq(kb_consumer_commit(a, &m, err, sizeof(err)), -EINVAL);
	kb_consumer_destroy(a);

	/* A new member of the same group starts after the committed k0. */
	kb_consumer *b2 = new_consumer(b.url, "t-commit", topic);
	expect_msg(b2, 60000, topic, 1, "k1", &m);
	ck_assert_msg(kb_consumer_commit(b2, &m, err, sizeof(err)) == 0, "%s",
		      err);
	kb_message_release(&m);
	ck_assert_int_eq(kb_consumer_lag(b2), 0);
	kb_consumer_destroy(b2);
	kb_test_server_stop(&b);
}
END_TEST

/* A mark (the message's own offset, with metadata) survives the member
 * that made it: the next member of the group starts at the message again
 * and reads the mark. */
START_TEST(mark_survives_the_member)
{
	struct kb_test_server b;
	kb_message m;
	char err[512] = "", meta[64];
	int64_t off;
	const char *topic = "kb.submissions.CPU";

	start_broker(&b);
	kb_producer *p = new_producer(b.url, NULL);
	send_ok(p, topic, "k0", "v0", 2);
	kb_producer_destroy(p);

	kb_consumer *a = new_consumer(b.url, "t-mark", topic);
	expect_msg(a, 60000, topic, 0, "k0", &m);
	ck_assert_msg(kb_consumer_committed(a, &m, &off, meta, sizeof(meta),
					    5000, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_lt(off, 0);
	ck_assert_str_eq(meta, "");
	ck_assert_msg(kb_consumer_mark(a, &m, "kb-attempt 42 1", err,
				       sizeof(err)) == 0,
		      "%s", err);
	kb_message_release(&m);
	kb_consumer_destroy(a);

	kb_consumer *b2 = new_consumer(b.url, "t-mark", topic);
	expect_msg(b2, 60000, topic, 0, "k0", &m);
	ck_assert_msg(kb_consumer_committed(b2, &m, &off, meta, sizeof(meta),
					    5000, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(off, 0);
	ck_assert_str_eq(meta, "kb-attempt 42 1");
	/* A real commit moves past it, without metadata. */
	ck_assert_msg(kb_consumer_commit(b2, &m, err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert_msg(kb_consumer_committed(b2, &m, &off, meta, sizeof(meta),
					    5000, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(off, 1);
	ck_assert_str_eq(meta, "");
	kb_message_release(&m);
	kb_consumer_destroy(b2);
	kb_test_server_stop(&b);
}
END_TEST

/* ---- takeover after SIGKILL, with group members in child processes ---- */

struct report {
	int who;
	int64_t offset;
	int64_t at_ms; /* CLOCK_MONOTONIC is system-wide */
};

static void member_main(int who, const char *url, const char *group,
			const char *topic, int wfd)
{
	char err[512];
	const char *topics[] = {topic};
	kb_consumer *c;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	c = kb_consumer_new(url, group, topics, 1, fast_group, err,
			    sizeof(err));
	if (!c) {
		fprintf(stderr, "member %d: %s\n", who, err);
		_exit(2);
	}
	for (;;) {
		kb_message m;
		int rc = kb_consumer_poll(c, 100, &m);
		if (rc < 0)
			_exit(3);
		if (rc == 1) {
			/* Never committed, so every new owner reads it again. */
			struct report r = {who, m.offset, mono_ms()};
			if (write(wfd, &r, sizeof(r)) != sizeof(r))
				_exit(4);
			kb_message_release(&m);
		}
	}
}

/* Reads one report within timeout_ms; 0 if one came. */
static int read_report(int fd, int timeout_ms, struct report *r)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};

	if (poll(&pfd, 1, timeout_ms) != 1)
		return -1;
	return read(fd, r, sizeof(*r)) == sizeof(*r) ? 0 : -1;
}

START_TEST(takeover_after_sigkill)
{
	struct kb_test_server b;
	const char *topic = "kb.submissions.H100";
	const char *group = "t-takeover";
	struct report r;
	pid_t pid[2];
	int fds[2];

	start_broker(&b);
	kb_producer *p = new_producer(b.url, NULL);
	send_ok(p, topic, "job", "payload", 7);
	/* No librdkafka threads may be running when we fork. */
	kb_producer_destroy(p);
	ck_assert_int_eq(pipe(fds), 0);

	/* Both members start together, so both are in the group's first
	 * generation; whichever gets the partition reads the message. */
	int64_t t0 = mono_ms();
	for (int i = 0; i < 2; i++) {
		pid[i] = fork();
		ck_assert_int_ge(pid[i], 0);
		if (pid[i] == 0)
			member_main(i, b.url, group, topic, fds[1]);
	}
	ck_assert_msg(read_report(fds[0], 60000, &r) == 0, "no member got it");
	ck_assert_int_eq(r.offset, 0);
	fprintf(stderr, "measure: two members join to first message %lld ms\n",
		(long long)(r.at_ms - t0));
	int owner = r.who;
	/* Should a member have missed the first generation, the next
	 * rebalance may move the partition: wait for quiet. */
	while (read_report(fds[0], 1500, &r) == 0)
		owner = r.who;

	int64_t tk = mono_ms();
	kill(pid[owner], SIGKILL);
	waitpid(pid[owner], NULL, 0);
	ck_assert_msg(read_report(fds[0], 60000, &r) == 0,
		      "member %d did not take over", 1 - owner);
	int64_t takeover = r.at_ms - tk;
	fprintf(stderr,
		"measure: takeover after SIGKILL %lld ms (session.timeout.ms=%s "
		"heartbeat.interval.ms=%s)\n",
		(long long)takeover, session_ms, heartbeat_ms);
	ck_assert_int_eq(r.who, 1 - owner);
	ck_assert_int_eq(r.offset, 0);
	kb_budget("kafka takeover after SIGKILL", (double)takeover,
		  4 * atoi(session_ms) + 2000, "ms");

	kill(pid[1 - owner], SIGKILL);
	waitpid(pid[1 - owner], NULL, 0);
	close(fds[0]);
	close(fds[1]);
	kb_test_server_stop(&b);
}
END_TEST

START_TEST(unreachable_broker_times_out)
{
	char url[64], err[512] = "";
	const char *short_life[] = {"message.timeout.ms", "1500", NULL};
	int dead_fd, port = kb_test_refused_port(&dead_fd);

	ck_assert_int_gt(port, 0);
	snprintf(url, sizeof(url), "127.0.0.1:%d", port);
	kb_producer *p = new_producer(url, short_life);

	int64_t t = mono_ms();
	int rc = kb_producer_send(p, KB_TOPIC_RESULTS, "1", 1, "v", 1, 400, err,
				  sizeof(err));
	int64_t dt = mono_ms() - t;
	ck_assert_int_eq(rc, -ETIMEDOUT);
	ck_assert_msg(err[0] != '\0', "no error text");
	ck_assert_int_ge(dt, 350);
	kb_budget("kafka send to a dead broker, 400 ms wait", (double)dt, 1400,
		  "ms");

	/* Waiting longer than message.timeout.ms gives librdkafka's verdict. */
	err[0] = '\0';
	t = mono_ms();
	rc = kb_producer_send(p, KB_TOPIC_RESULTS, "2", 1, "v", 1, 10000, err,
			      sizeof(err));
	dt = mono_ms() - t;
	ck_assert_msg(rc == -EIO, "rc %d err %s", rc, err);
	ck_assert_msg(strstr(err, "timed out") != NULL, "err: %s", err);
	kb_budget("kafka send to a dead broker, librdkafka's verdict",
		  (double)dt, 4000, "ms");

	t = mono_ms();
	kb_producer_destroy(p);
	kb_budget("kafka producer destroy, broker dead",
		  (double)(mono_ms() - t), 3000, "ms");

	/* A consumer with no broker: polls return 0, nothing hangs. */
	kb_consumer *c = new_consumer(url, "t-nobroker", KB_TOPIC_RESULTS);
	kb_message m;
	t = mono_ms();
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(kb_consumer_poll(c, 200, &m), 0);
	kb_budget("kafka three 200 ms polls, broker dead",
		  (double)(mono_ms() - t), 1500, "ms");
	ck_assert_int_eq(kb_consumer_lag(c), -1);
	t = mono_ms();
	kb_consumer_destroy(c);
	kb_budget("kafka consumer destroy, broker dead",
		  (double)(mono_ms() - t), 5000, "ms");
	close(dead_fd);
}
END_TEST

START_TEST(bad_settings_are_errors)
{
	char err[512] = "";
	const char *bad[] = {"no.such.setting", "1", NULL};
	const char *topics[] = {"t"};

	ck_assert_ptr_null(
		kb_producer_new("127.0.0.1:1", "x", bad, err, sizeof(err)));
	ck_assert_msg(strstr(err, "no.such.setting") != NULL, "err: %s", err);
	err[0] = '\0';
	ck_assert_ptr_null(kb_consumer_new("127.0.0.1:1", "g", topics, 1, bad,
					   err, sizeof(err)));
	ck_assert_msg(strstr(err, "no.such.setting") != NULL, "err: %s", err);
	err[0] = '\0';
	ck_assert_ptr_null(kb_consumer_new("127.0.0.1:1", "", topics, 1, NULL,
					   err, sizeof(err)));
	ck_assert_msg(err[0] != '\0', "no error text");
	kb_producer_destroy(NULL);
	kb_consumer_destroy(NULL);
}
END_TEST

/* ---- kb-devbroker itself ------------------------------------------------ */

/* Waits up to timeout_ms for pid to exit; returns its status or -1. */
static int wait_exit(pid_t pid, int timeout_ms)
{
	int status;

	for (int waited = 0; waited < timeout_ms; waited += 20) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return status;
		sleep_ms(20);
	}
	return -1;
}

static int topic_partitions(const char *bootstrap, const char *topic)
{
	char err[256];
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	const struct rd_kafka_metadata *md = NULL;
	int n = -1;

	rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, err,
			  sizeof(err));
	rd_kafka_t *rk =
		rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
	ck_assert_ptr_nonnull(rk);
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
	if (rd_kafka_metadata(rk, 0, rkt, &md, 5000) ==
		    RD_KAFKA_RESP_ERR_NO_ERROR &&
	    md->topic_cnt == 1 && !md->topics[0].err)
		n = md->topics[0].partition_cnt;
	if (md)
		rd_kafka_metadata_destroy(md);
	rd_kafka_topic_destroy(rkt);
	rd_kafka_destroy(rk);
	return n;
}

START_TEST(devbroker_port_topics_and_exit)
{
	char log[128], line[512], want[128], env_port[64];
	char *argv[] = {KB_BINARY_DIR "/devbroker/kb-devbroker", NULL};
	char env_b[] = "KB_DEVBROKER_BROKERS=2";
	char env_p[] = "KB_DEVBROKER_PARTITIONS=3";
	char env_g[] = "KB_DEVBROKER_GPUS= X9 ,H100";
	pid_t pid = -1;
	int port = 0;

	snprintf(log, sizeof(log), "/tmp/kb-test-devbroker-port-%d.log",
		 getpid());
	for (int attempt = 0; attempt < 10 && pid < 0; attempt++) {
		/* Told its port: one outside the kernel's ephemeral range,
		 * retried when taken (kb_test_fixed_port). */
		port = kb_test_fixed_port();
		snprintf(env_port, sizeof(env_port), "KB_DEVBROKER_PORT=%d",
			 port);
		char *env[] = {env_b, env_p, env_g, env_port, NULL};
		unlink(log);
		pid = kb_test_spawn(argv, env, log);
		ck_assert_int_gt(pid, 0);
		if (kb_test_wait_file(log, "bootstrap=", 10000, line,
				      sizeof(line)) != 0) {
			kb_test_stop(pid, 1000); /* port+1 was taken: retry */
			pid = -1;
		}
	}
	ck_assert_msg(pid > 0, "kb-devbroker never printed bootstrap (log %s)",
		      log);
	/* The only "bootstrap=" in stdout and stderr, alone on its line. */
	snprintf(want, sizeof(want), "bootstrap=127.0.0.1:%d,127.0.0.1:%d",
		 port, port + 1);
	ck_assert_str_eq(line, want);
	const char *bs = want + strlen("bootstrap=");
	ck_assert_int_eq(topic_partitions(bs, "kb.submissions.X9"), 3);
	ck_assert_int_eq(topic_partitions(bs, "kb.submissions.MI300"), 3);
	ck_assert_int_eq(topic_partitions(bs, KB_TOPIC_DLQ), 3);
	kill(pid, SIGTERM);
	int status = wait_exit(pid, 30000);
	ck_assert_msg(status >= 0, "kb-devbroker ignored SIGTERM");
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "kb-devbroker exit status %d", status);
	unlink(log);
}
END_TEST

START_TEST(devbroker_rejects_bad_config)
{
	char *argv[] = {KB_BINARY_DIR "/devbroker/kb-devbroker", NULL};
	char bad_gpu[] = "KB_DEVBROKER_GPUS=ok,no/slash";
	char bad_parts[] = "KB_DEVBROKER_PARTITIONS=0";
	char *cases[] = {bad_gpu, bad_parts};
	char log[128];

	snprintf(log, sizeof(log), "/tmp/kb-test-devbroker-bad-%d.log",
		 getpid());
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *env[] = {cases[i], NULL};
		unlink(log);
		pid_t pid = kb_test_spawn(argv, env, log);
		ck_assert_int_gt(pid, 0);
		int status = wait_exit(pid, 30000);
		ck_assert_msg(status >= 0, "%s: kb-devbroker did not exit",
			      cases[i]);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) != 0,
			      "%s: exit status %d", cases[i], status);
		ck_assert_msg(kb_test_wait_file(log, "bootstrap=", 0, NULL,
						0) != 0,
			      "%s: printed a bootstrap line", cases[i]);
	}
	unlink(log);
}
END_TEST

int main(void)
{
	const char *s = getenv("KB_TEST_SESSION_MS");
	const char *h = getenv("KB_TEST_HEARTBEAT_MS");

	if (s && *s)
		snprintf(session_ms, sizeof(session_ms), "%s", s);
	if (h && *h)
		snprintf(heartbeat_ms, sizeof(heartbeat_ms), "%s", h);
	kb_log_init("test-kafka", KB_LOG_WARN, 0);

	Suite *suite = suite_create("kafka");
	TCase *pure = tcase_create("pure");
	tcase_add_test(pure, topic_names);
	tcase_add_test(pure, bad_settings_are_errors);
	suite_add_tcase(suite, pure);

	TCase *broker = tcase_create("devbroker");
	tcase_set_timeout(broker, 240); /* ctest's 300 s is the hang guard */
	tcase_add_test(broker, round_trip_and_latency);
	tcase_add_test(broker, commit_semantics_and_lag);
	tcase_add_test(broker, mark_survives_the_member);
	tcase_add_test(broker, takeover_after_sigkill);
	tcase_add_test(broker, unreachable_broker_times_out);
	tcase_add_test(broker, devbroker_port_topics_and_exit);
	tcase_add_test(broker, devbroker_rejects_bad_config);
	suite_add_tcase(suite, broker);

	return kb_check_run(suite);
}
