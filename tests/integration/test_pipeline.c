/* End-to-end: gateway -> Kafka -> worker -> Kafka -> ranker -> Redis, with
 * every service a real process on loopback. */
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
#include "platform.h"
#include "kb_check_main.h"

#define PROBLEMS KB_SOURCE_DIR "/problems"

static struct platform P;

/* The first case starts the worker as an operator does, its start-up
 * self-test included (each language of its problems built and run once
 * before it serves); the others skip it (KB_SELFTEST=0): it proves
 * nothing more on a second start, and costs 15-40 s on a 2-core machine. */
static void setup(void)
{
	ck_assert_msg(platform_start(&P) == 0,
		      "platform did not start; logs in %s", P.dir);
}

static void setup_no_selftest(void)
{
	static const char *const env[] = {"KB_SELFTEST=0", NULL};
	const struct platform_opts o = {.env = env};

	ck_assert_msg(platform_start_opts(&P, &o) == 0,
		      "platform did not start; logs in %s", P.dir);
}

static void teardown(void)
{
	platform_stop(&P);
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* The ranking entry of user "alice", or NULL. */
static json_t *entry_of_alice(json_t *rank)
{
	size_t i;
	json_t *e;
	json_array_foreach(rank, i, e)
	{
		const char *u =
			json_string_value(json_object_get(e, "user_name"));
		if (u && strcmp(u, "alice") == 0)
			return e;
	}
	return NULL;
}

/* A ranked submission of FILE to LB on the CPU passes and ranks alice. */
static void expect_ranked(const char *lb, const char *file)
{
	/* A loaded machine can make the harness distrust its timings
	 * (verdict "suspect", not ranked): then once more, up to three
	 * times; any other verdict fails at once. */
	for (int attempt = 1;; attempt++) {
		long id = submit(&P, lb, "leaderboard", file);
		ck_assert_int_gt(id, 0);
		json_t *sub = wait_done(&P, id, 120000);
		ck_assert_msg(sub != NULL, "not done; logs in %s", P.dir);
		const char *verdict =
			json_string_value(json_object_get(sub, "verdict"));
		int again = verdict && strcmp(verdict, "suspect") == 0 &&
			    attempt < 3;
		ck_assert_msg(again || (verdict &&
					strcmp(verdict, "passed") == 0),
			      "attempt %d: verdict %s; %s", attempt, verdict,
			      json_dumps(sub, 0));
		json_decref(sub);
		if (!again)
			break;
		fprintf(stderr, "%s: attempt %d not ranked (suspect timing)\n",
			lb, attempt);
	}

	json_t *rank = ranking(&P, lb);
	ck_assert_msg(json_is_array(rank), "ranking is not a list");
	json_t *e = entry_of_alice(rank);
	ck_assert_msg(e != NULL, "alice not ranked: %s", json_dumps(rank, 0));
	json_t *score = json_object_get(e, "score");
	ck_assert_msg(json_is_number(score) && json_number_value(score) > 0,
		      "bad score in %s", json_dumps(e, 0));
	json_decref(rank);
}

START_TEST(honest_submission_is_ranked)
{
	expect_ranked("vectorsum_cpu",
		      PROBLEMS "/vectorsum_cpu/submission_ok.c");
}
END_TEST

/* A Python problem (problems/harness/python) through the same services;
 * its first run is the held run the idle worker started ahead
 * (KB_PYTHON_READY, worker/run/ready.h). */
START_TEST(python_submission_is_ranked)
{
	char log[300], line[512];

	expect_ranked("vectoradd_py",
		      PROBLEMS "/pmpp_py/vectoradd/submission_ok.py");
	snprintf(log, sizeof(log), "%s/worker.log", P.dir);
	ck_assert_msg(kb_test_wait_file(log, "takes the held Python run", 0,
					line, sizeof(line)) == 0,
		      "the job did not take a held run; logs in %s", P.dir);
	ck_assert_msg(strstr(line, "(ready)") != NULL, "%s", line);
}
END_TEST

START_TEST(wrong_submission_is_not_ranked)
{
	long id = submit(&P, "vectorsum_cpu", "leaderboard",
			 PROBLEMS "/vectorsum_cpu/submission_wrong.c");
	ck_assert_int_gt(id, 0);
	json_t *sub = wait_done(&P, id, 120000);
	ck_assert_msg(sub != NULL, "not done; logs in %s", P.dir);
	const char *verdict =
		json_string_value(json_object_get(sub, "verdict"));
	ck_assert_msg(verdict && strcmp(verdict, "failed") == 0, "verdict %s",
		      verdict);
	json_decref(sub);

	json_t *rank = ranking(&P, "vectorsum_cpu");
	ck_assert_msg(json_is_array(rank), "ranking is not a list");
	ck_assert_msg(entry_of_alice(rank) == NULL,
		      "wrong submission ranked: %s", json_dumps(rank, 0));
	json_decref(rank);
}
END_TEST

/* DUMP of every key the fold touches, concatenated. */
static char *snapshot(long id)
{
	const char *keys[] = {"kb:rank:vectorsum_cpu:CPU",
			      "kb:rankinfo:vectorsum_cpu:CPU", NULL, NULL};
	char subkey[64], reskey[64];
	size_t total = 0;
	char *out = calloc(1, 1);

	snprintf(subkey, sizeof(subkey), "kb:sub:%ld", id);
	snprintf(reskey, sizeof(reskey), "kb:res:%ld:CPU", id);
	keys[2] = subkey;
	keys[3] = reskey;
	for (int i = 0; i < 4; i++) {
		redisReply *r = redisCommand(P.rc, "DUMP %s", keys[i]);
		ck_assert_ptr_nonnull(r);
		if (r->type == REDIS_REPLY_STRING) {
			out = realloc(out, total + r->len + 1);
			memcpy(out + total, r->str, r->len);
			total += r->len;
		}
		freeReplyObject(r);
	}
	out = realloc(out, total * 2 + 1);
	/* hex so it compares with strcmp */
	for (size_t i = total; i-- > 0;)
		sprintf(out + 2 * i, "%02x", (unsigned char)out[i]);
	out[total * 2] = '\0';
	return out;
}

START_TEST(redelivered_result_changes_nothing)
{
	char err[256], key[32];
	long id = submit(&P, "vectorsum_cpu", "leaderboard",
			 PROBLEMS "/vectorsum_cpu/submission_ok.c");
	ck_assert_int_gt(id, 0);
	json_decref(wait_done(&P, id, 120000));
	char *before = snapshot(id);
	ck_assert_msg(strlen(before) > 0, "nothing stored");

	/* Re-deliver the very Result the worker sent, twice, then a marker
	 * progress event for another submission: once the marker is folded,
	 * so are the duplicates before it (one partition, in order). */
	redisReply *r = redisCommand(P.rc, "GET kb:res:%ld:CPU", id);
	ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
	Kb__Result *res =
		kb__result__unpack(NULL, r->len, (const uint8_t *)r->str);
	ck_assert_ptr_nonnull(res);
	Kb__ResultEvent ev = KB__RESULT_EVENT__INIT;
	ev.submission_id = (uint64_t)id;
	ev.gpu = "CPU";
	ev.event_case = KB__RESULT_EVENT__EVENT_RESULT;
	ev.result = res;
	size_t len = kb__result_event__get_packed_size(&ev);
	uint8_t *buf = malloc(len);
	kb__result_event__pack(&ev, buf);
	kb_producer *prod = kb_producer_new(P.broker.url, "it-redeliver", NULL,
					    err, sizeof(err));
	ck_assert_msg(prod != NULL, "%s", err);
	snprintf(key, sizeof(key), "%ld", id);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(kb_producer_send(prod, KB_TOPIC_RESULTS, key,
						  strlen(key), buf, len, 5000,
						  err, sizeof(err)),
				 0);
	Kb__Progress pr = KB__PROGRESS__INIT;
	pr.stage = KB__STAGE__STAGE_TESTING;
	Kb__ResultEvent marker = KB__RESULT_EVENT__INIT;
	marker.submission_id = 987654321;
	marker.gpu = "CPU";
	marker.event_case = KB__RESULT_EVENT__EVENT_PROGRESS;
	marker.progress = &pr;
	uint8_t mbuf[128];
	size_t mlen = kb__result_event__pack(&marker, mbuf);
	ck_assert_int_eq(kb_producer_send(prod, KB_TOPIC_RESULTS, "987654321",
					  9, mbuf, mlen, 5000, err,
					  sizeof(err)),
			 0);
	int seen = 0;
	for (int waited = 0; waited < 20000 && !seen; waited += 100) {
		redisReply *e = redisCommand(P.rc, "EXISTS kb:sub:987654321");
		seen = e && e->integer == 1;
		freeReplyObject(e);
		if (!seen)
			sleep_ms(100);
	}
	ck_assert_msg(seen, "ranker never folded the marker");
	char *after = snapshot(id);
	ck_assert_str_eq(after, before);
	free(before);
	free(after);
	free(buf);
	kb__result__free_unpacked(res, NULL);
	freeReplyObject(r);
	kb_producer_destroy(prod);
}
END_TEST

START_TEST(killed_worker_job_finishes_exactly_once)
{
	char stage[64] = "";
	long id = submit(&P, "vectorsum_cpu", "test",
			 KB_SOURCE_DIR
			 "/tests/integration/data/slow_vectorsum.c");
	ck_assert_int_gt(id, 0);
	/* Wait until the worker is running the harness, then kill it hard. */
	for (int waited = 0; waited < 60000; waited += 50) {
		redisReply *r = redisCommand(P.rc, "HGET kb:sub:%ld stage", id);
		if (r && r->type == REDIS_REPLY_STRING)
			snprintf(stage, sizeof(stage), "%s", r->str);
		freeReplyObject(r);
		if (strcmp(stage, "testing") == 0)
			break;
		sleep_ms(50);
	}
	ck_assert_str_eq(stage, "testing");
	kill(-P.worker, SIGKILL);
	waitpid(P.worker, NULL, 0);
	sleep_ms(500);
	redisReply *r = redisCommand(P.rc, "HGET kb:sub:%ld status", id);
	ck_assert_msg(r->type != REDIS_REPLY_STRING ||
			      strcmp(r->str, "done") != 0,
		      "finished although its worker was killed");
	freeReplyObject(r);

	P.worker = platform_start_worker(&P, "worker-restarted");
	json_t *sub = wait_done(&P, id, 120000);
	ck_assert_msg(sub != NULL, "not finished after restart; logs in %s",
		      P.dir);
	const char *verdict =
		json_string_value(json_object_get(sub, "verdict"));
	ck_assert_msg(verdict && strcmp(verdict, "passed") == 0, "verdict %s",
		      verdict);
	json_decref(sub);
	ck_assert_int_eq(count_results(&P, id, 20000), 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pipeline");
	TCase *first = tcase_create("as started by an operator");
	TCase *tc = tcase_create("end-to-end");
	tcase_add_checked_fixture(first, setup, teardown);
	tcase_set_timeout(first, 600); /* a hang guard (CMakeLists.txt) */
	tcase_add_test(first, honest_submission_is_ranked);
	suite_add_tcase(s, first);
	tcase_add_checked_fixture(tc, setup_no_selftest, teardown);
	tcase_set_timeout(tc,
			  600); /* per case; a hang guard (CMakeLists.txt) */
	tcase_add_test(tc, python_submission_is_ranked);
	tcase_add_test(tc, wrong_submission_is_not_ranked);
	tcase_add_test(tc, redelivered_result_changes_nothing);
	tcase_add_test(tc, killed_worker_job_finishes_exactly_once);
	suite_add_tcase(s, tc);
	return kb_check_run(s);
}
