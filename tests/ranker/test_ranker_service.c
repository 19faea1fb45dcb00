/* The kb-ranker binary against kb-devbroker and a throwaway redis-server:
 * ResultEvents produced to kb.results end up in Redis; duplicates change
 * nothing; garbage goes to kb.dlq without stopping the ranker; a Redis
 * outage delays folding but loses nothing; SIGTERM drains. */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kb.pb-c.h"
#include "kb_kafka.h"
#include "kb_redis.h"
#include "kb_testenv.h"
#include "kb_util.h"
#include "ranker_fixture.h"
#include "kb_check_main.h"

#define RANK "kb:rank:vectorsum_cpu:CPU"
#define WAIT_MS 30000 /* the first consumer-group join alone takes 3 s */

static struct kb_test_server R, B;
static redisContext *rc;
static kb_producer *prod;
static pid_t ranker;
static char logpath[256];
static char env_brokers[256], env_redis[256];
static char *ranker_env[] = {
	env_brokers,
	env_redis,
	"KB_LOG_LEVEL=debug",
	"KB_CONSUMER_EXTRA=session.timeout.ms=6000,heartbeat.interval.ms=500",
	"KB_RANKER_BACKOFF_MAX_MS=300",
	NULL};

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static void redis_reconnect(void)
{
	char err[256];

	if (rc)
		redisFree(rc);
	rc = kb_redis_connect(R.url, 2000, err, sizeof(err));
	ck_assert_msg(rc != NULL, "connect %s: %s", R.url, err);
}

static void setup(void)
{
	char err[256];

	ck_assert_msg(kb_test_redis_start(&R) == 0,
		      "redis-server did not start");
	ck_assert_msg(kb_test_devbroker_start(&B) == 0,
		      "kb-devbroker did not start");
	redis_reconnect();
	prod = kb_producer_new(B.url, "test-ranker-service", NULL, err,
			       sizeof(err));
	ck_assert_msg(prod != NULL, "producer: %s", err);

	snprintf(env_brokers, sizeof(env_brokers), "KB_KAFKA_BROKERS=%s",
		 B.url);
	snprintf(env_redis, sizeof(env_redis), "KB_REDIS_URL=%s", R.url);
	snprintf(logpath, sizeof(logpath), "/tmp/kb-test-ranker-%d.log",
		 getpid());
	unlink(logpath);
	char *argv[] = {KB_BINARY_DIR "/ranker/kb-ranker", NULL};
	ranker = kb_test_spawn(argv, ranker_env, logpath);
	ck_assert_int_gt(ranker, 0);
}

static void teardown(void)
{
	if (ranker > 0)
		kb_test_stop(ranker, 5000);
	ranker = 0;
	kb_producer_destroy(prod);
	prod = NULL;
	if (rc)
		redisFree(rc);
	rc = NULL;
	kb_test_server_stop(&B);
	kb_test_server_stop(&R);
}

static void produce(const char *key, const void *value, size_t len)
{
	char err[256];

	ck_assert_msg(kb_producer_send(prod, KB_TOPIC_RESULTS, key, strlen(key),
				       value, len, 5000, err, sizeof(err)) == 0,
		      "produce: %s", err);
}

static void produce_result(const struct fx_result *f)
{
	char key[32];
	size_t len;
	uint8_t *buf = fx_pack_event(f, &len);

	snprintf(key, sizeof(key), "%llu",
		 (unsigned long long)f->ev.submission_id);
	produce(key, buf, len);
	free(buf);
}

static void produce_progress(uint64_t id, Kb__Stage stage)
{
	char key[32];
	size_t len;
	uint8_t *buf = fx_pack_progress(id, "CPU", stage, &len);

	snprintf(key, sizeof(key), "%llu", (unsigned long long)id);
	produce(key, buf, len);
	free(buf);
}

static void gateway_submission(uint64_t id, const char *user,
			       int64_t submitted_ms)
{
	redisReply *r = redisCommand(
		rc,
		"HSET kb:sub:%llu user_id %s user_name %s lb vectorsum_cpu gpu CPU "
		"mode leaderboard status queued submitted_ms %lld",
		(unsigned long long)id, user, user, (long long)submitted_ms);
	ck_assert_ptr_nonnull(r);
	freeReplyObject(r);
}

/* HGET key field as a malloc'd string, or NULL. */
static char *hget(const char *key, const char *field)
{
	redisReply *r = redisCommand(rc, "HGET %s %s", key, field);
	char *s = NULL;

	if (r && r->type == REDIS_REPLY_STRING)
		s = strdup(r->str);
	if (r)
		freeReplyObject(r);
	return s;
}

/* Waits until HGET key field == want; fails the test with the ranker's
 * log path otherwise. */
static void wait_field(const char *key, const char *field, const char *want)
{
	char *got = NULL;

	for (int waited = 0; waited < WAIT_MS; waited += 50) {
		free(got);
		got = hget(key, field);
		if (got && strcmp(got, want) == 0)
			break;
		sleep_ms(50);
	}
	ck_assert_msg(got && strcmp(got, want) == 0,
		      "%s %s is \"%s\", expected \"%s\" (ranker log %s)", key,
		      field, got ? got : "(nil)", want, logpath);
	free(got);
}

static char *zscore(const char *user)
{
	redisReply *r = redisCommand(rc, "ZSCORE " RANK " %s", user);
	char *s = NULL;

	ck_assert_ptr_nonnull(r);
	if (r->type == REDIS_REPLY_STRING)
		s = strdup(r->str);
	freeReplyObject(r);
	return s;
}

static void assert_ranker_alive(void)
{
	ck_assert_msg(waitpid(ranker, NULL, WNOHANG) == 0,
		      "kb-ranker exited (log %s)", logpath);
}

static void assert_log_has(const char *needle)
{
	ck_assert_msg(kb_test_wait_file(logpath, needle, WAIT_MS, NULL, 0) == 0,
		      "ranker log %s lacks \"%s\"", logpath, needle);
}

/* DUMP of every key, names sorted, as hex. */
static char *snapshot(void)
{
	struct kb_buf b = {0};
	redisReply *keys = redisCommand(
		rc, "EVAL %s 0",
		"local k = redis.call('KEYS', '*') table.sort(k) return k");

	ck_assert_ptr_nonnull(keys);
	ck_assert_int_eq(keys->type, REDIS_REPLY_ARRAY);
	for (size_t i = 0; i < keys->elements; i++) {
		redisReply *r =
			redisCommand(rc, "DUMP %s", keys->element[i]->str);
		kb_buf_printf(&b, "[%s]", keys->element[i]->str);
		for (size_t n = 0;
		     r && r->type == REDIS_REPLY_STRING && n < r->len; n++)
			kb_buf_printf(&b, "%02x", (unsigned char)r->str[n]);
		freeReplyObject(r);
	}
	freeReplyObject(keys);
	return b.data ? b.data : strdup("");
}

START_TEST(progress_and_results_are_folded)
{
	struct fx_result f;

	gateway_submission(1, "alice", 1000);
	gateway_submission(2, "bob", 1100);
	produce_progress(1, KB__STAGE__STAGE_TESTING);
	wait_field("kb:sub:1", "stage", "testing");
	wait_field("kb:sub:1", "status", "running");

	fx_scored(&f, 1, "alice", 2.5e-4, 1000);
	produce_result(&f);
	wait_field("kb:sub:1", "status", "done");
	char *s = zscore("alice");
	ck_assert_msg(s && strtod(s, NULL) == 2.5e-4, "alice's score %s",
		      s ? s : "(nil)");
	free(s);
	wait_field("kb:sub:1", "verdict", "passed");
	wait_field("kb:rankinfo:vectorsum_cpu:CPU", "alice", "1:1000");

	fx_failed(&f, 2, "bob", 1100);
	produce_result(&f);
	wait_field("kb:sub:2", "status", "done");
	wait_field("kb:sub:2", "verdict", "failed");
	s = zscore("bob");
	ck_assert_msg(s == NULL, "bob ranked with %s", s);

	/* A late progress does not reopen a finished submission. */
	produce_progress(1, KB__STAGE__STAGE_SECRET_RUN);
	produce_progress(3, KB__STAGE__STAGE_COMPILING); /* marker */
	wait_field("kb:sub:3", "stage", "compiling");
	wait_field("kb:sub:1", "status", "done");
	wait_field("kb:sub:1", "stage", "testing");

	assert_log_has("sub=1 gpu=CPU");
	assert_log_has("outcome=personal-best");
	assert_log_has("verdict=failed score=none outcome=new");
	assert_ranker_alive();

	/* SIGTERM drains and exits 0. */
	int status = kb_test_stop(ranker, 10000);
	ranker = 0;
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "kb-ranker status %d on SIGTERM (log %s)", status,
		      logpath);
	assert_log_has("stopped folded=2");
}
END_TEST

START_TEST(redelivered_result_changes_nothing)
{
	struct fx_result f;

	gateway_submission(10, "alice", 1000);
	fx_scored(&f, 10, "alice", 1e-3, 1000);
	produce_result(&f);
	wait_field("kb:sub:10", "status", "done");
	char *before = snapshot();

	/* The same Result twice more, then a marker behind them (one
	 * partition, folded in order). */
	produce_result(&f);
	produce_result(&f);
	produce_progress(11, KB__STAGE__STAGE_TESTING);
	wait_field("kb:sub:11", "stage", "testing");

	/* Remove the marker so the two snapshots cover the same keys. */
	redisReply *r = redisCommand(rc, "DEL kb:sub:11");
	freeReplyObject(r);
	char *after = snapshot();
	ck_assert_str_eq(after, before);
	free(before);
	free(after);
	assert_log_has("outcome=duplicate");
	assert_ranker_alive();
}
END_TEST

/* Reads kb.dlq from the start until a dead letter with the given key
 * arrives; returns it (free with kb__dead_letter__free_unpacked) or NULL. */
static Kb__DeadLetter *read_dead_letter(const char *key)
{
	char group[64], err[256];
	const char *topics[] = {KB_TOPIC_DLQ};
	Kb__DeadLetter *found = NULL;

	snprintf(group, sizeof(group), "dlq-reader-%d-%s", getpid(), key);
	kb_consumer *c = kb_consumer_new(B.url, group, topics, 1, NULL, err,
					 sizeof(err));
	ck_assert_msg(c != NULL, "dlq consumer: %s", err);
	for (int waited = 0; waited < WAIT_MS && !found; waited += 200) {
		kb_message m;
		if (kb_consumer_poll(c, 200, &m) != 1)
			continue;
		if (m.key_len == strlen(key) &&
		    memcmp(m.key, key, m.key_len) == 0)
			found = kb__dead_letter__unpack(NULL, m.value_len,
							m.value);
		kb_message_release(&m);
	}
	kb_consumer_destroy(c);
	return found;
}

START_TEST(garbage_goes_to_the_dlq_and_folding_goes_on)
{
	static const char garbage[] = "not a protobuf \xff\xff\xff";
	struct fx_result f;

	produce("junk", garbage, sizeof(garbage) - 1);
	/* Decodes, but cannot be folded: the Result's id is not the event's. */
	fx_scored(&f, 20, "alice", 1e-3, 1000);
	f.ev.submission_id = 21;
	produce_result(&f);
	/* A good Result behind both. */
	gateway_submission(22, "alice", 1000);
	fx_scored(&f, 22, "alice", 1e-3, 1000);
	produce_result(&f);
	wait_field("kb:sub:22", "status", "done");
	assert_ranker_alive();

	Kb__DeadLetter *dl = read_dead_letter("junk");
	ck_assert_msg(dl != NULL,
		      "no dead letter for the garbage (ranker log %s)",
		      logpath);
	ck_assert_str_eq(dl->topic, KB_TOPIC_RESULTS);
	ck_assert_uint_eq(dl->value.len, sizeof(garbage) - 1);
	ck_assert_mem_eq(dl->value.data, garbage, dl->value.len);
	ck_assert_msg(strstr(dl->reason, "undecodable") != NULL, "reason: %s",
		      dl->reason);
	ck_assert_int_ge(dl->offset, 0);
	kb__dead_letter__free_unpacked(dl, NULL);

	dl = read_dead_letter("21");
	ck_assert_msg(dl != NULL, "no dead letter for the mismatched result");
	ck_assert_msg(strstr(dl->reason, "does not match") != NULL,
		      "reason: %s", dl->reason);
	kb__dead_letter__free_unpacked(dl, NULL);
	/* Nothing of it reached Redis. */
	redisReply *r = redisCommand(
		rc, "EXISTS kb:res:20:CPU kb:res:21:CPU kb:sub:20 kb:sub:21");
	ck_assert_int_eq(r->integer, 0);
	freeReplyObject(r);
}
END_TEST

/* A worker's heartbeat (a Progress without a submission) is for the
 * gateways: skipped, not a dead letter. Behind it, under the same key (so
 * in order), garbage whose dead letter must be the first of that key. */
START_TEST(heartbeats_are_skipped)
{
	static const char garbage[] = "not a protobuf \xff";
	size_t len;
	uint8_t *buf =
		fx_pack_progress(0, "CPU", KB__STAGE__STAGE_UNSPECIFIED, &len);

	produce("hb", buf, len);
	free(buf);
	produce("hb", garbage, sizeof(garbage) - 1);
	Kb__DeadLetter *dl = read_dead_letter("hb");
	ck_assert_msg(dl != NULL,
		      "no dead letter for the garbage (ranker log %s)",
		      logpath);
	ck_assert_msg(strstr(dl->reason, "undecodable") != NULL,
		      "the heartbeat was a dead letter: %s", dl->reason);
	kb__dead_letter__free_unpacked(dl, NULL);
	assert_ranker_alive();
}
END_TEST

START_TEST(redis_outage_delays_but_loses_nothing)
{
	struct fx_result f;

	/* Folding works, then Redis goes away. */
	gateway_submission(30, "alice", 1000);
	fx_scored(&f, 30, "alice", 2e-3, 1000);
	produce_result(&f);
	wait_field("kb:sub:30", "status", "done");
	redisFree(rc);
	rc = NULL;
	kb_test_redis_kill(&R);

	fx_scored(&f, 31, "alice", 1e-3, 2000);
	produce_result(&f);
	assert_log_has("redis unavailable sub=31");
	sleep_ms(1000);
	assert_ranker_alive();

	/* Back, empty, at the same address: the held Result is folded. */
	ck_assert_int_eq(kb_test_redis_restart(&R), 0);
	for (int waited = 0; waited < 30000 && !rc; waited += 50) {
		char err[256];
		rc = kb_redis_connect(R.url, 1000, err, sizeof(err));
		if (!rc)
			sleep_ms(50);
	}
	ck_assert_ptr_nonnull(rc);
	wait_field("kb:sub:31", "status", "done");
	char *s = zscore("alice");
	ck_assert_msg(s && strtod(s, NULL) == 1e-3, "alice's score %s",
		      s ? s : "(nil)");
	free(s);
	assert_ranker_alive();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ranker_service");
	TCase *tc = tcase_create("kb-ranker");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, progress_and_results_are_folded);
	tcase_add_test(tc, redelivered_result_changes_nothing);
	tcase_add_test(tc, garbage_goes_to_the_dlq_and_folding_goes_on);
	tcase_add_test(tc, heartbeats_are_skipped);
	tcase_add_test(tc, redis_outage_delays_but_loses_nothing);
	suite_add_tcase(s, tc);

	return kb_check_run(s);
}
