/* fold.lua and progress.lua against a throwaway redis-server: one per test
 * (Check forks each test, and the server is stopped at the child's exit). */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kb_fold.h"
#include "kb_foldargs.h"
#include "kb_redis.h"
#include "kb_testenv.h"
#include "kb_util.h"
#include "ranker_fixture.h"
#include "kb_check_main.h"

#define RANK "kb:rank:vectorsum_cpu:CPU"
#define INFO "kb:rankinfo:vectorsum_cpu:CPU"

static struct kb_test_server R;
static redisContext *rc;
static kb_fold *F;

static void setup(void)
{
	char err[256];

	/* As in kb-ranker (kb_signal_install): a write to a Redis that went
	 * away (redis_restart_is_survived) is an error, not a signal. */
	signal(SIGPIPE, SIG_IGN);
	ck_assert_msg(kb_test_redis_start(&R) == 0,
		      "redis-server did not start");
	rc = kb_redis_connect(R.url, 2000, err, sizeof(err));
	ck_assert_msg(rc != NULL, "connect %s: %s", R.url, err);
	F = kb_fold_new(R.url, 2000);
	ck_assert_ptr_nonnull(F);
}

static void teardown(void)
{
	kb_fold_destroy(F);
	F = NULL;
	if (rc)
		redisFree(rc);
	rc = NULL;
	kb_test_server_stop(&R);
}

/* The gateway's part: the submission hash exists before any result. */
static void gateway_submission(uint64_t id, const char *user,
			       int64_t submitted_ms)
{
	redisReply *r = redisCommand(
		rc,
		"HSET kb:sub:%llu user_id %s user_name %s lb vectorsum_cpu gpu CPU "
		"mode leaderboard status queued submitted_ms %lld",
		(unsigned long long)id, user, user, (long long)submitted_ms);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(r->type, REDIS_REPLY_INTEGER);
	freeReplyObject(r);
}

/* Folds f and returns the outcome; fails the test on any error. */
static int fold(struct fx_result *f)
{
	struct kb_fold_call c;
	char err[512] = "";
	int outcome = -1;

	ck_assert_msg(kb_foldargs_result(&f->ev, &c, err, sizeof(err)) == 0,
		      "%s", err);
	int rv = kb_fold_result(F, &c, &outcome, err, sizeof(err));
	ck_assert_msg(rv == 0, "kb_fold_result: %d %s", rv, err);
	kb_fold_call_free(&c);
	return outcome;
}

static int fold_scored(uint64_t id, const char *user, double score, int64_t ms)
{
	struct fx_result f;

	fx_scored(&f, id, user, score, ms);
	return fold(&f);
}

/* A string reply of a command, malloc'd, or NULL for a nil reply. */
static char *get_str(const char *fmt, ...)
{
	va_list ap;
	redisReply *r;
	char *s = NULL;

	va_start(ap, fmt);
	r = redisvCommand(rc, fmt, ap);
	va_end(ap);
	ck_assert_ptr_nonnull(r);
	ck_assert_msg(r->type == REDIS_REPLY_STRING ||
			      r->type == REDIS_REPLY_NIL,
		      "reply type %d (%s)", r->type,
		      r->type == REDIS_REPLY_ERROR ? r->str : "");
	if (r->type == REDIS_REPLY_STRING)
		s = strdup(r->str);
	freeReplyObject(r);
	return s;
}

static long long get_int(const char *fmt, ...)
{
	va_list ap;
	redisReply *r;
	long long v;

	va_start(ap, fmt);
	r = redisvCommand(rc, fmt, ap);
	va_end(ap);
	ck_assert_ptr_nonnull(r);
	ck_assert_msg(r->type == REDIS_REPLY_INTEGER, "reply type %d", r->type);
	v = r->integer;
	freeReplyObject(r);
	return v;
}

static void assert_field(const char *key, const char *field, const char *want)
{
	char *got = get_str("HGET %s %s", key, field);

	if (!want)
		ck_assert_msg(got == NULL, "%s %s = \"%s\", expected none", key,
			      field, got);
	else
		ck_assert_msg(got && strcmp(got, want) == 0,
			      "%s %s = \"%s\", expected \"%s\"", key, field,
			      got ? got : "(nil)", want);
	free(got);
}

static double zscore(const char *user)
{
	char *s = get_str("ZSCORE " RANK " %s", user);
	double v = s ? strtod(s, NULL) : NAN;

	free(s);
	return v;
}

/* Every key of the store, with DUMP, HGETALL and ZRANGE views, as one hex
 * string: equal strings mean an unchanged store. */
static char *snapshot(void)
{
	struct kb_buf b = {0};
	/* KEYS order is unspecified: sort the names first. */
	redisReply *sorted = redisCommand(
		rc, "EVAL %s 0",
		"local k = redis.call('KEYS', '*') table.sort(k) return k");
	ck_assert_ptr_nonnull(sorted);
	for (size_t i = 0; i < sorted->elements; i++) {
		const char *k = sorted->element[i]->str;
		const char *cmds[] = {"DUMP %s", "HGETALL %s",
				      "ZRANGE %s 0 -1 WITHSCORES", "TYPE %s"};
		kb_buf_printf(&b, "[%s]", k);
		for (size_t j = 0; j < sizeof(cmds) / sizeof(cmds[0]); j++) {
			redisReply *r = redisCommand(rc, cmds[j], k);
			ck_assert_ptr_nonnull(r);
			if (r->type == REDIS_REPLY_STRING ||
			    r->type == REDIS_REPLY_STATUS) {
				for (size_t n = 0; n < r->len; n++)
					kb_buf_printf(&b, "%02x",
						      (unsigned char)r->str[n]);
			} else if (r->type == REDIS_REPLY_ARRAY) {
				for (size_t e = 0; e < r->elements; e++)
					kb_buf_printf(&b, "|%s",
						      r->element[e]->str);
			}
			kb_buf_printf(&b, ";");
			freeReplyObject(r);
		}
	}
	freeReplyObject(sorted);
	return b.data ? b.data : strdup("");
}

START_TEST(scored_result_is_ranked)
{
	struct fx_result f;
	struct kb_fold_call c;
	char err[256];

	gateway_submission(1, "alice", 1000);
	fx_scored(&f, 1, "alice", 1.25e-4, 1000);
	ck_assert_int_eq(fold(&f), KB_FOLD_BEST);

	ck_assert_double_eq(zscore("alice"), 1.25e-4);
	assert_field(INFO, "alice", "1:1000");
	assert_field("kb:sub:1", "status", "done");
	assert_field("kb:sub:1", "verdict", "passed");
	assert_field("kb:sub:1", "score", "0.000125");
	assert_field("kb:sub:1", "done_ms", "1020");
	/* The gateway's fields are untouched. */
	assert_field("kb:sub:1", "user_name", "alice");
	assert_field("kb:sub:1", "submitted_ms", "1000");

	/* kb:res holds the packed Result, byte for byte. */
	ck_assert_int_eq(kb_foldargs_result(&f.ev, &c, err, sizeof(err)), 0);
	redisReply *r = redisCommand(rc, "GET kb:res:1:CPU");
	ck_assert_int_eq(r->type, REDIS_REPLY_STRING);
	ck_assert_uint_eq(r->len, c.argvlen[KB_FOLD_NKEYS]);
	ck_assert_mem_eq(r->str, c.argv[KB_FOLD_NKEYS], r->len);
	freeReplyObject(r);
	kb_fold_call_free(&c);
}
END_TEST

START_TEST(failed_result_is_not_ranked)
{
	struct fx_result f;

	gateway_submission(2, "alice", 1000);
	fx_failed(&f, 2, "alice", 1000);
	ck_assert_int_eq(fold(&f), KB_FOLD_NEW);
	ck_assert_int_eq(get_int("EXISTS " RANK), 0);
	ck_assert_int_eq(get_int("EXISTS " INFO), 0);
	assert_field("kb:sub:2", "status", "done");
	assert_field("kb:sub:2", "verdict", "failed");
	assert_field("kb:sub:2", "score", NULL);
	ck_assert_int_eq(get_int("EXISTS kb:res:2:CPU"), 1);

	/* Passed, but the secret run failed: not ranked either. */
	gateway_submission(3, "alice", 1000);
	fx_scored(&f, 3, "alice", 1e-3, 1000);
	f.runs[2].passed = 0;
	ck_assert_int_eq(fold(&f), KB_FOLD_NEW);
	ck_assert_int_eq(get_int("EXISTS " RANK), 0);
	assert_field("kb:sub:3", "score", NULL);
}
END_TEST

/* Runs fold.lua with one argument replaced, bypassing the C side's own
 * decision, to check the script's defensive checks. */
static int fold_with_override(struct fx_result *f, int argi, const char *value)
{
	struct kb_fold_call c;
	char err[512] = "";
	int outcome = -1;

	ck_assert_int_eq(kb_foldargs_result(&f->ev, &c, err, sizeof(err)), 0);
	/* argi counts as when the script took 4 keys (4 is ARGV[1]). */
	argi = argi < 4 ? argi : argi - 4 + KB_FOLD_NKEYS;
	c.argv[argi] = value;
	c.argvlen[argi] = strlen(value);
	ck_assert_msg(kb_fold_result(F, &c, &outcome, err, sizeof(err)) == 0,
		      "%s", err);
	kb_fold_call_free(&c);
	return outcome;
}

START_TEST(non_leaderboard_mode_is_not_ranked_even_with_score)
{
	struct fx_result f;

	/* Through the C side: the worker claims a score for a benchmark. */
	gateway_submission(4, "alice", 1000);
	fx_scored(&f, 4, "alice", 1e-3, 1000);
	f.r.mode = KB__MODE__MODE_BENCHMARK;
	ck_assert_int_eq(fold(&f), KB_FOLD_NEW);
	ck_assert_int_eq(get_int("EXISTS " RANK), 0);
	assert_field("kb:sub:4", "status", "done");
	assert_field("kb:sub:4", "score", NULL);

	/* The script alone: has_score "1" and a score, but mode test. */
	gateway_submission(5, "alice", 1000);
	fx_scored(&f, 5, "alice", 1e-3, 1000);
	ck_assert_int_eq(fold_with_override(&f, 7, "test"), KB_FOLD_NEW);
	ck_assert_int_eq(get_int("EXISTS " RANK), 0);
	assert_field("kb:sub:5", "score", NULL);

	/* ... or verdict suspect. */
	gateway_submission(6, "alice", 1000);
	fx_scored(&f, 6, "alice", 1e-3, 1000);
	ck_assert_int_eq(fold_with_override(&f, 8, "suspect"), KB_FOLD_NEW);
	ck_assert_int_eq(get_int("EXISTS " RANK), 0);
	assert_field("kb:sub:6", "verdict", "suspect");

	/* ... or a score that is not a positive finite number. */
	const char *bad[] = {"nan", "inf", "-1", "0", "abc", ""};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t id = 100 + i;
		gateway_submission(id, "alice", 1000);
		fx_scored(&f, id, "alice", 1e-3, 1000);
		ck_assert_int_eq(fold_with_override(&f, 10, bad[i]),
				 KB_FOLD_NEW);
		ck_assert_msg(get_int("EXISTS " RANK) == 0,
			      "score \"%s\" ranked", bad[i]);
	}
}
END_TEST

START_TEST(refolding_changes_nothing)
{
	struct fx_result f;

	gateway_submission(7, "alice", 1000);
	gateway_submission(8, "alice", 2000);
	ck_assert_int_eq(fold_scored(7, "alice", 2e-3, 1000), KB_FOLD_BEST);
	fx_failed(&f, 8, "alice", 2000);
	ck_assert_int_eq(fold(&f), KB_FOLD_NEW);
	char *before = snapshot();

	ck_assert_int_eq(fold_scored(7, "alice", 2e-3, 1000),
			 KB_FOLD_DUPLICATE);
	ck_assert_int_eq(fold(&f), KB_FOLD_DUPLICATE);
	/* A different Result for a folded (submission, gpu) is a duplicate
	 * too: the first one folded wins. */
	ck_assert_int_eq(fold_scored(7, "alice", 1e-9, 1000),
			 KB_FOLD_DUPLICATE);
	ck_assert_int_eq(fold_scored(8, "alice", 1e-9, 2000),
			 KB_FOLD_DUPLICATE);

	char *after = snapshot();
	ck_assert_str_eq(after, before);
	free(before);
	free(after);
}
END_TEST

START_TEST(better_score_replaces_worse_does_not)
{
	for (uint64_t id = 10; id < 14; id++)
		gateway_submission(id, id == 13 ? "bob" : "alice",
				   (int64_t)id * 1000);

	ck_assert_int_eq(fold_scored(10, "alice", 2e-3, 10000), KB_FOLD_BEST);
	ck_assert_int_eq(fold_scored(11, "alice", 1e-3, 11000), KB_FOLD_BEST);
	ck_assert_double_eq(zscore("alice"), 1e-3);
	assert_field(INFO, "alice", "11:11000");

	ck_assert_int_eq(fold_scored(12, "alice", 1.5e-3, 12000), KB_FOLD_NEW);
	ck_assert_double_eq(zscore("alice"), 1e-3);
	assert_field(INFO, "alice", "11:11000");
	/* The submission itself still records its own score. */
	assert_field("kb:sub:12", "score", "0.0015");

	/* Another user is ranked independently, even with a worse score. */
	ck_assert_int_eq(fold_scored(13, "bob", 5e-3, 13000), KB_FOLD_BEST);
	ck_assert_double_eq(zscore("bob"), 5e-3);
	ck_assert_double_eq(zscore("alice"), 1e-3);
	ck_assert_int_eq(get_int("ZCARD " RANK), 2);
}
END_TEST

START_TEST(one_ulp_better_replaces)
{
	double s = 1e-6, better = nextafter(1e-6, 0);

	gateway_submission(20, "alice", 1000);
	gateway_submission(21, "alice", 2000);
	ck_assert_int_eq(fold_scored(20, "alice", s, 1000), KB_FOLD_BEST);
	ck_assert_int_eq(fold_scored(21, "alice", better, 2000), KB_FOLD_BEST);
	ck_assert_msg(zscore("alice") == better, "%.17g != %.17g",
		      zscore("alice"), better);
	assert_field(INFO, "alice", "21:2000");
}
END_TEST

/* Folds the two submissions in the given order and returns the winner's
 * rankinfo. */
static char *tie(uint64_t a_id, int64_t a_ms, uint64_t b_id, int64_t b_ms,
		 int b_first)
{
	redisReply *r = redisCommand(rc, "FLUSHALL");
	freeReplyObject(r);
	gateway_submission(a_id, "alice", a_ms);
	gateway_submission(b_id, "alice", b_ms);
	if (b_first) {
		fold_scored(b_id, "alice", 3e-3, b_ms);
		fold_scored(a_id, "alice", 3e-3, a_ms);
	} else {
		fold_scored(a_id, "alice", 3e-3, a_ms);
		fold_scored(b_id, "alice", 3e-3, b_ms);
	}
	ck_assert_double_eq(zscore("alice"), 3e-3);
	return get_str("HGET " INFO " alice");
}

/* The users of kb:rankorder, first to last. */
static char *order_users(void)
{
	struct kb_buf b = {0};
	redisReply *r =
		redisCommand(rc, "ZRANGE kb:rankorder:vectorsum_cpu:CPU 0 -1");

	ck_assert_ptr_nonnull(r);
	for (size_t i = 0; i < r->elements; i++)
		kb_buf_printf(&b, "%s%s", i ? " " : "",
			      strrchr(r->element[i]->str, ':') + 1);
	freeReplyObject(r);
	return b.data ? b.data : strdup("");
}

START_TEST(order_is_the_ranking)
{
	/* Ties at 1 ms go by time, then by id (9 before 10 as numbers);
	 * ZRANGE of the order is the ranking, one member per user. */
	gateway_submission(20, "anna", 200);
	gateway_submission(10, "bert", 100);
	gateway_submission(9, "carl", 100);
	gateway_submission(40, "dora", 900);
	ck_assert_int_eq(fold_scored(20, "anna", 1e-3, 200), KB_FOLD_BEST);
	ck_assert_int_eq(fold_scored(10, "bert", 1e-3, 100), KB_FOLD_BEST);
	ck_assert_int_eq(fold_scored(9, "carl", 1e-3, 100), KB_FOLD_BEST);
	ck_assert_int_eq(fold_scored(40, "dora", 5e-4, 900), KB_FOLD_BEST);
	char *u = order_users();
	ck_assert_str_eq(u, "dora carl bert anna");
	free(u);
	/* A new best moves its user; a worse result moves nothing. */
	gateway_submission(50, "anna", 1000);
	gateway_submission(51, "dora", 1000);
	ck_assert_int_eq(fold_scored(50, "anna", 2.5e-4, 1000), KB_FOLD_BEST);
	ck_assert_int_eq(fold_scored(51, "dora", 7e-4, 1000), KB_FOLD_NEW);
	u = order_users();
	ck_assert_str_eq(u, "anna dora carl bert");
	free(u);
	redisReply *r =
		redisCommand(rc, "ZCARD kb:rankorder:vectorsum_cpu:CPU");
	ck_assert_int_eq(r->integer, 4);
	freeReplyObject(r);
	/* Scores of different magnitude sort as numbers, not as text. */
	gateway_submission(60, "emil", 1000);
	gateway_submission(61, "finn", 1000);
	ck_assert_int_eq(fold_scored(60, "emil", 12.0, 1000), KB_FOLD_BEST);
	ck_assert_int_eq(fold_scored(61, "finn", 9.5, 1000), KB_FOLD_BEST);
	u = order_users();
	ck_assert_str_eq(u, "anna dora carl bert finn emil");
	free(u);
}
END_TEST

START_TEST(equal_score_earlier_submission_wins_in_any_order)
{
	for (int order = 0; order < 2; order++) {
		/* Earlier submitted_ms wins, although its id is higher. */
		char *w = tie(31, 1000, 30, 2000, order);
		ck_assert_msg(w && strcmp(w, "31:1000") == 0,
			      "order %d: winner %s", order, w);
		free(w);

		/* Same millisecond: the lower id wins, compared as numbers
		 * (9 < 10 although "9" > "10" as text). */
		w = tie(9, 5000, 10, 5000, order);
		ck_assert_msg(w && strcmp(w, "9:5000") == 0,
			      "order %d: winner %s", order, w);
		free(w);

		/* Ids beyond 2^53 stay distinct. */
		w = tie(9007199254740992ULL, 5000, 9007199254740993ULL, 5000,
			order);
		ck_assert_msg(w && strcmp(w, "9007199254740992:5000") == 0,
			      "order %d: winner %s", order, w);
		free(w);
	}
	/* Outcomes: the later one of a tie is not a personal best. */
	redisReply *r = redisCommand(rc, "FLUSHALL");
	freeReplyObject(r);
	gateway_submission(40, "alice", 1000);
	gateway_submission(41, "alice", 2000);
	ck_assert_int_eq(fold_scored(41, "alice", 3e-3, 2000), KB_FOLD_BEST);
	ck_assert_int_eq(fold_scored(40, "alice", 3e-3, 1000), KB_FOLD_BEST);
	r = redisCommand(rc, "FLUSHALL");
	freeReplyObject(r);
	gateway_submission(40, "alice", 1000);
	gateway_submission(41, "alice", 2000);
	ck_assert_int_eq(fold_scored(40, "alice", 3e-3, 1000), KB_FOLD_BEST);
	ck_assert_int_eq(fold_scored(41, "alice", 3e-3, 2000), KB_FOLD_NEW);
}
END_TEST

/* The lowest-scored member of sorted set key, malloc'd, or NULL. */
static char *first_member(const char *key)
{
	redisReply *r = redisCommand(rc, "ZRANGE %s 0 0", key);
	char *m = NULL;

	ck_assert_ptr_nonnull(r);
	if (r->type == REDIS_REPLY_ARRAY && r->elements == 1)
		m = strdup(r->element[0]->str);
	freeReplyObject(r);
	return m;
}

/* The history the web pages plot: every scored Result, in either order
 * of folding the same set, and nothing else. */
START_TEST(history_records_every_scored_result)
{
	char *first = NULL;

	for (int order = 0; order < 2; order++) {
		redisReply *r = redisCommand(rc, "FLUSHALL");
		freeReplyObject(r);
		gateway_submission(50, "alice", 1000);
		gateway_submission(51, "alice", 2000);
		gateway_submission(52, "bob", 3000);
		gateway_submission(53, "bob", 4000);
		int ids[] = {50, 51, 52};
		double sc[] = {4e-3, 5e-3, 2e-3};
		const char *who[] = {"alice", "alice", "bob"};
		for (int k = 0; k < 3; k++) {
			int i = order ? 2 - k : k;
			fold_scored((uint64_t)ids[i], who[i], sc[i],
				    1000 * (ids[i] - 49));
		}
		struct fx_result f;
		fx_failed(&f, 53, "bob", 4000);
		fold(&f);
		/* 51 was worse than alice's best, still in her history. */
		ck_assert_int_eq(get_int("ZCARD kb:hist:vectorsum_cpu:CPU"), 3);
		ck_assert_int_eq(get_int("ZCARD kb:uhist:alice"), 2);
		ck_assert_int_eq(get_int("ZCARD kb:uhist:bob"), 1);
		char *m = first_member("kb:hist:vectorsum_cpu:CPU");
		ck_assert_str_eq(m, "50:0.004:alice");
		free(m);
		m = first_member("kb:uhist:bob");
		ck_assert_str_eq(m, "52:0.002:vectorsum_cpu:CPU");
		free(m);
		/* The history itself, not the whole store: a hash's field
		 * order (rankinfo) follows the order of writes. */
		redisReply *h = redisCommand(
			rc, "EVAL %s 0",
			"local out = {} for _, k in ipairs({'kb:hist:vectorsum_cpu:CPU', "
			"'kb:uhist:alice', 'kb:uhist:bob'}) do "
			"for _, v in ipairs(redis.call('ZRANGE', k, 0, -1, 'WITHSCORES')) do "
			"out[#out + 1] = v end end return table.concat(out, ' ')");
		ck_assert_ptr_nonnull(h);
		ck_assert_int_eq(h->type, REDIS_REPLY_STRING);
		if (!first)
			first = strdup(h->str);
		else
			ck_assert_str_eq(h->str, first);
		freeReplyObject(h);
	}
	free(first);
}
END_TEST

START_TEST(submitted_ms_falls_back_to_the_gateways_record)
{
	struct fx_result f;

	gateway_submission(50, "alice", 7777);
	fx_scored(&f, 50, "alice", 1e-3, 0);
	ck_assert_int_eq(fold(&f), KB_FOLD_BEST);
	assert_field(INFO, "alice", "50:7777");
}
END_TEST

static int progress(uint64_t id, Kb__Stage stage, int64_t ms)
{
	Kb__Progress p = KB__PROGRESS__INIT;
	Kb__ResultEvent ev = KB__RESULT_EVENT__INIT;
	struct kb_progress_call c;
	char err[256] = "";
	int applied = -1;

	p.stage = stage;
	ev.submission_id = id;
	ev.gpu = "CPU";
	ev.event_case = KB__RESULT_EVENT__EVENT_PROGRESS;
	ev.progress = &p;
	ck_assert_int_eq(kb_foldargs_progress(&ev, ms, &c, err, sizeof(err)),
			 0);
	ck_assert_msg(kb_fold_progress(F, &c, &applied, err, sizeof(err)) == 0,
		      "%s", err);
	return applied;
}

START_TEST(progress_after_done_is_ignored)
{
	gateway_submission(60, "alice", 1000);
	ck_assert_int_eq(progress(60, KB__STAGE__STAGE_COMPILING, 1100), 1);
	assert_field("kb:sub:60", "status", "running");
	assert_field("kb:sub:60", "stage", "compiling");
	assert_field("kb:sub:60", "stage_ms", "1100");
	ck_assert_int_eq(progress(60, KB__STAGE__STAGE_TESTING, 1200), 1);
	assert_field("kb:sub:60", "stage", "testing");

	ck_assert_int_eq(fold_scored(60, "alice", 1e-3, 1000), KB_FOLD_BEST);
	char *before = snapshot();
	ck_assert_int_eq(progress(60, KB__STAGE__STAGE_SECRET_RUN, 1300), 0);
	ck_assert_int_eq(progress(60, KB__STAGE__STAGE_TESTING, 1200), 0);
	char *after = snapshot();
	ck_assert_str_eq(after, before);
	assert_field("kb:sub:60", "status", "done");
	free(before);
	free(after);
}
END_TEST

START_TEST(secret_run_stage_is_not_recorded)
{
	/* Nobody may learn when the secret run began (kb_report.h): its
	 * Progress leaves the ranked run's stage and its start in place. */
	gateway_submission(65, "alice", 1000);
	ck_assert_int_eq(progress(65, KB__STAGE__STAGE_RANKED_RUN, 1100), 1);
	progress(65, KB__STAGE__STAGE_SECRET_RUN, 1500);
	assert_field("kb:sub:65", "stage", "ranked_run");
	assert_field("kb:sub:65", "stage_ms", "1100");
	assert_field("kb:sub:65", "status", "running");
}
END_TEST

START_TEST(progress_for_an_unknown_submission_creates_its_hash)
{
	/* A Progress may overtake the gateway's write in principle; the
	 * stage is kept, and the gateway's HSET adds its fields. */
	ck_assert_int_eq(progress(70, KB__STAGE__STAGE_TESTING, 1), 1);
	assert_field("kb:sub:70", "stage", "testing");
	assert_field("kb:sub:70", "status", "running");
}
END_TEST

START_TEST(deleted_submission_is_never_folded)
{
	/* The gateway deleted submission 80 before its Result came: the late
	 * Result changes nothing, not even kb:res (so a later repair is not
	 * mistaken for a fold), and alice's other best stays. */
	gateway_submission(79, "alice", 900);
	ck_assert_int_eq(fold_scored(79, "alice", 2e-3, 900), KB_FOLD_BEST);
	gateway_submission(80, "alice", 1000);
	redisReply *r = redisCommand(
		rc, "HSET kb:sub:80 status deleted deleted_ms 1500");
	freeReplyObject(r);
	char *before = snapshot();
	ck_assert_int_eq(fold_scored(80, "alice", 1e-3, 1000),
			 KB_FOLD_DUPLICATE);
	char *after = snapshot();
	ck_assert_str_eq(after, before);
	ck_assert_int_eq(get_int("EXISTS kb:res:80:CPU"), 0);
	ck_assert_double_eq(zscore("alice"), 2e-3);
	assert_field(INFO, "alice", "79:900");
	assert_field("kb:sub:80", "status", "deleted");
	free(before);
	free(after);

	/* A Progress after the deletion is ignored. */
	ck_assert_int_eq(progress(80, KB__STAGE__STAGE_TESTING, 1600), 0);
	assert_field("kb:sub:80", "status", "deleted");

	/* Should a status ever read "running" again (an older ranker wrote
	 * progress after a deletion), deleted_ms still counts. */
	gateway_submission(81, "alice", 1100);
	r = redisCommand(rc, "HSET kb:sub:81 status running deleted_ms 1600");
	freeReplyObject(r);
	ck_assert_int_eq(fold_scored(81, "alice", 1e-4, 1100),
			 KB_FOLD_DUPLICATE);
	ck_assert_int_eq(get_int("EXISTS kb:res:81:CPU"), 0);
	ck_assert_double_eq(zscore("alice"), 2e-3);
}
END_TEST

START_TEST(wrong_key_type_is_refused_without_partial_writes)
{
	struct fx_result f;
	struct kb_fold_call c;
	char err[512] = "";
	int outcome = -1;

	redisReply *r = redisCommand(rc, "SET kb:sub:80 not-a-hash");
	freeReplyObject(r);
	fx_scored(&f, 80, "alice", 1e-3, 1000);
	ck_assert_int_eq(kb_foldargs_result(&f.ev, &c, err, sizeof(err)), 0);
	ck_assert_int_eq(kb_fold_result(F, &c, &outcome, err, sizeof(err)),
			 -EPROTO);
	ck_assert_msg(strstr(err, "WRONGTYPE") != NULL, "error: %s", err);
	/* Nothing was written, so a fixed store can fold it later. */
	ck_assert_int_eq(get_int("EXISTS kb:res:80:CPU"), 0);
	ck_assert_int_eq(get_int("EXISTS " RANK), 0);
	kb_fold_call_free(&c);
}
END_TEST

START_TEST(redis_restart_is_survived)
{
	char err[512] = "";
	struct fx_result f;
	struct kb_fold_call c;
	int outcome = -1;

	gateway_submission(90, "alice", 1000);
	ck_assert_int_eq(fold_scored(90, "alice", 1e-3, 1000), KB_FOLD_BEST);

	/* Down: the call reports a transient error, nothing else. */
	redisFree(rc);
	rc = NULL;
	kb_test_redis_kill(&R);
	fx_scored(&f, 91, "alice", 5e-4, 2000);
	ck_assert_int_eq(kb_foldargs_result(&f.ev, &c, err, sizeof(err)), 0);
	ck_assert_int_eq(kb_fold_result(F, &c, &outcome, err, sizeof(err)),
			 -EAGAIN);
	ck_assert_int_eq(kb_fold_result(F, &c, &outcome, err, sizeof(err)),
			 -EAGAIN);

	/* Back, empty, at the same address: the script is loaded again. */
	ck_assert_int_eq(kb_test_redis_restart(&R), 0);
	int rv = -EAGAIN;
	for (int waited = 0; waited < 30000 && rv == -EAGAIN; waited += 50) {
		rv = kb_fold_result(F, &c, &outcome, err, sizeof(err));
		if (rv == -EAGAIN)
			nanosleep(&(struct timespec){0, 50000000L}, NULL);
	}
	ck_assert_msg(rv == 0, "never folded after restart: %s", err);
	ck_assert_int_eq(outcome, KB_FOLD_BEST);
	rc = kb_redis_connect(R.url, 2000, err, sizeof(err));
	ck_assert_ptr_nonnull(rc);
	ck_assert_double_eq(zscore("alice"), 5e-4);
	kb_fold_call_free(&c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ranker_fold");
	TCase *tc = tcase_create("redis");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, scored_result_is_ranked);
	tcase_add_test(tc, failed_result_is_not_ranked);
	tcase_add_test(tc, non_leaderboard_mode_is_not_ranked_even_with_score);
	tcase_add_test(tc, refolding_changes_nothing);
	tcase_add_test(tc, better_score_replaces_worse_does_not);
	tcase_add_test(tc, one_ulp_better_replaces);
	tcase_add_test(tc, equal_score_earlier_submission_wins_in_any_order);
	tcase_add_test(tc, history_records_every_scored_result);
	tcase_add_test(tc, submitted_ms_falls_back_to_the_gateways_record);
	tcase_add_test(tc, order_is_the_ranking);
	tcase_add_test(tc, progress_after_done_is_ignored);
	tcase_add_test(tc, secret_run_stage_is_not_recorded);
	tcase_add_test(tc, progress_for_an_unknown_submission_creates_its_hash);
	tcase_add_test(tc, deleted_submission_is_never_folded);
	tcase_add_test(tc, wrong_key_type_is_refused_without_partial_writes);
	tcase_add_test(tc, redis_restart_is_survived);
	suite_add_tcase(s, tc);

	return kb_check_run(s);
}
