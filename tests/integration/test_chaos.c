/* test_chaos: every accepted submission runs exactly once, through a
 * backlog and while every service but the broker is SIGKILLed and
 * restarted (docs/internals.md "Every job runs once").
 *
 * Real processes on loopback: kb-devbroker, a redis-server with an
 * append-only file synced on every write, kb-gateway, kb-ranker and two
 * CPU workers. KB_CHAOS_SUBMISSIONS (default 150) test-mode submissions
 * of vectorsum_cpu, half of them failing, and KB_CHAOS_RANKED (default
 * 8, two per user) leaderboard-mode ones of four more users, spread
 * through them, are queued before any worker runs: in the old event
 * format (the task's files in every event, about 78 KB) that backlog was
 * past the dev broker's 5 MiB per partition. Then the workers start, and while they
 * drain the queue a worker, the gateway, the ranker, Redis and the other
 * worker are SIGKILLed and restarted in turn. The dev broker is not killed: it keeps nothing
 * across a restart, by design (a real cluster is replicated).
 *
 * Asserted: every event is small; every accepted id ends "done" (none
 * stuck, none failed); each has exactly one Result on kb.results and one
 * completed evaluation; a second start happens only for jobs whose
 * worker was killed while running them; nothing is "given up"; and the
 * ranking is exactly the one the Results on kb.results make (see
 * assert_ranking). Budgets, not assertions, for the times (kb_budget.h).
 *
 * lost_messages_are_republished: one partition, and a backlog of large
 * submissions past its 5 MiB: the broker deletes the oldest; the
 * gateway's reconciler publishes them again and every one ends "done".
 */
#include <check.h>
#include <inttypes.h>
#include <math.h>
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
#include "kb_keys.h"
#include "kb_redis.h"
#include "kb_util.h"
#include "platform.h"
#include "kb_check_main.h"

#define OK_CODE KB_SOURCE_DIR "/problems/vectorsum_cpu/submission_ok.c"
#define WRONG_CODE KB_SOURCE_DIR "/problems/vectorsum_cpu/submission_wrong.c"
#define MAX_SUBS 20000
#define MAX_RANKED 1000
#define SMALL_EVENT 4096
#define RANKED_LB "vectorsum_cpu"
#define RANKED_USERS 4

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
static long ids[MAX_SUBS + MAX_RANKED];
static int nids;

/* What the test read off kb.results for each id (its first Result). */
struct seen_result {
	int scored;  /* the ranker's rule: ranked, passed, a positive score */
	int verdict; /* Kb__Verdict */
	double score;
	int64_t submitted_ms;
	char user_id[64];
};
static struct seen_result seen[MAX_SUBS + MAX_RANKED];

/* The users of the ranked submissions, and which one sent each id (-1:
 * alice's test-mode ones). */
struct ranked_user {
	char name[32], user_id[64], cli_id[128];
};
static struct ranked_user users[RANKED_USERS];
static int sender[MAX_SUBS + MAX_RANKED];

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

static int n_ranked(void)
{
	const char *v = getenv("KB_CHAOS_RANKED");
	long n = v ? strtol(v, NULL, 10) : 8;

	return n < 0 ? 0 : n > MAX_RANKED ? MAX_RANKED : (int)n;
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

/* Notes what the ranking needs of id i's Result. Scored is the ranker's
 * rule (ranker/README.md), written again here so that the test checks
 * it rather than shares it: the worker's has_score, the leaderboard mode,
 * verdict passed and a finite positive score. */
static void note_result(int i, const Kb__Result *r)
{
	struct seen_result *s = &seen[i];

	if (!r)
		return;
	s->scored = r->has_score && r->mode == KB__MODE__MODE_LEADERBOARD &&
		    r->verdict == KB__VERDICT__VERDICT_PASSED &&
		    isfinite(r->score) && r->score > 0;
	s->verdict = (int)r->verdict;
	s->score = r->score;
	s->submitted_ms = r->submitted_at_ms;
	snprintf(s->user_id, sizeof(s->user_id), "%s",
		 r->user_id ? r->user_id : "");
}

/* Results per id on kb.results, read from the start by a group of its
 * own, until every id has one and nothing more came for a while. */
static void count_results_all(int *per_index)
{
	const char *topics[] = {KB_TOPIC_RESULTS};
	char group[64], err[256];
	double quiet_until = kb_mono_s() + 60;
	kb_consumer *c;
	int nseen = 0;

	memset(per_index, 0, sizeof(int) * (size_t)nids);
	memset(seen, 0, sizeof(seen[0]) * (size_t)nids);
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
			for (int i = 0; i < nids; i++) {
				if ((uint64_t)ids[i] != ev->submission_id ||
				    per_index[i]++ > 0)
					continue;
				note_result(i, ev->result);
				if (++nseen == nids)
					/* All in: a duplicate would follow
					 * soon, if any. */
					quiet_until = kb_mono_s() + 5;
			}
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
		sender[nids] = -1;
		ids[nids++] = id;
	}
}

/* A correct vectorsum_cpu submission many times slower than OK_CODE,
 * even when the machine's load makes OK_CODE's timings vary several
 * fold: it spins 8 n turns of a volatile counter (a store and a load
 * each) before a plain left-to-right sum. Returns its malloc'd path. */
static char *slow_submission(void)
{
	static const char code[] =
		"#include <stddef.h>\n\n"
		"float custom_kernel(const float *data, size_t n)\n{\n"
		"\tfloat s = 0.0f;\n\n"
		"\tfor (volatile size_t spin = 0; spin < 8 * n; spin++)\n"
		"\t\t;\n"
		"\tfor (size_t i = 0; i < n; i++)\n\t\ts += data[i];\n"
		"\treturn s;\n}\n";
	char *path;
	FILE *f;

	ck_assert_int_gt(asprintf(&path, "%s/slow.c", P.dir), 0);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(code, f);
	fclose(f);
	return path;
}

/* The code of the j-th ranked submission, sent by user j % 4 as its
 * (j / 4)-th: user 0 slow, fast, slow, ...; user 1 fast, slow, fast,
 * ... (so one of the two ends on a slow run and its best is most likely
 * not its latest); user 2 wrong, fast, wrong, ...; user 3 only wrong
 * code (it must not be ranked). */
static const char *ranked_code(int j, const char *slow)
{
	const int k = j / RANKED_USERS;

	switch (j % RANKED_USERS) {
	case 0:
		return k % 2 ? OK_CODE : slow;
	case 1:
		return k % 2 ? slow : OK_CODE;
	case 2:
		return k % 2 ? OK_CODE : WRONG_CODE;
	default:
		return WRONG_CODE;
	}
}

static void add_ranked_users(void)
{
	for (int u = 0; u < RANKED_USERS; u++) {
		snprintf(users[u].name, sizeof(users[u].name), "chaos%d", u);
		ck_assert_msg(platform_add_user(
				      &P, users[u].name, users[u].user_id,
				      sizeof(users[u].user_id), users[u].cli_id,
				      sizeof(users[u].cli_id)) == 0,
			      "user %s not registered", users[u].name);
	}
}

static void submit_ranked(int j, const char *slow)
{
	const int u = j % RANKED_USERS;
	long id = submit_as(&P, users[u].cli_id, RANKED_LB, "leaderboard",
			    ranked_code(j, slow));

	ck_assert_msg(id > 0, "ranked submission %d refused", j);
	sender[nids] = u;
	ids[nids++] = id;
}

/* n test-mode submissions (submit_all's) with r leaderboard-mode ones
 * spread evenly through them, the first before the first test one. */
static void submit_backlog(int n, int r)
{
	char *slow = slow_submission();
	int j = 0;

	add_ranked_users();
	for (int i = 0; i < n; i++) {
		for (; j < r && (long)j * n <= (long)i * r; j++)
			submit_ranked(j, slow);
		submit_all(1, i % 2 ? WRONG_CODE : OK_CODE,
			   i % 2 ? WRONG_CODE : OK_CODE);
	}
	for (; j < r; j++)
		submit_ranked(j, slow);
	free(slow);
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

/* 1 when id i's run comes before id j's in the ranking order
 * (ranker/ranking.lua): a lower score, then an earlier submission, then
 * a lower id. */
static int ranks_before(int i, int j)
{
	if (seen[i].score != seen[j].score)
		return seen[i].score < seen[j].score;
	if (seen[i].submitted_ms != seen[j].submitted_ms)
		return seen[i].submitted_ms < seen[j].submitted_ms;
	return ids[i] < ids[j];
}

static const char *verdict_name(int v)
{
	const ProtobufCEnumValue *e = protobuf_c_enum_descriptor_get_value(
		&kb__verdict__descriptor, v);

	return e ? e->name : "?";
}

/* The index of user u's best scored run, or -1; *nscored its scored
 * runs, *nranked its leaderboard-mode ones. */
static int best_of(int u, int *nscored, int *nranked)
{
	int best = -1;

	*nscored = *nranked = 0;
	for (int i = 0; i < nids; i++) {
		if (sender[i] != u)
			continue;
		(*nranked)++;
		ck_assert_msg(strcmp(seen[i].user_id, users[u].user_id) == 0,
			      "sub %ld of %s has a Result of user \"%s\"",
			      ids[i], users[u].name, seen[i].user_id);
		printf("chaos: %s sub %ld: %s, %s %.6g s\n", users[u].name,
		       ids[i], verdict_name(seen[i].verdict),
		       seen[i].scored ? "scored" : "not scored", seen[i].score);
		if (!seen[i].scored)
			continue;
		(*nscored)++;
		if (best < 0 || ranks_before(i, best))
			best = i;
	}
	return best;
}

/* The users with a scored run, best first (insertion sort, four). */
static int expected_order(const int *best, int *order)
{
	int n = 0;

	for (int u = 0; u < RANKED_USERS; u++) {
		int k = n;

		if (best[u] < 0)
			continue;
		for (; k > 0 && ranks_before(best[u], best[order[k - 1]]); k--)
			order[k] = order[k - 1];
		order[k] = u;
		n++;
	}
	return n;
}

static redisReply *redis_cmd(const char *fmt, const char *key)
{
	redisReply *r = redisCommand(P.rc, fmt, key);

	ck_assert_msg(r != NULL && r->type != REDIS_REPLY_ERROR,
		      "redis %s %s: %s", fmt, key, r ? r->str : P.rc->errstr);
	return r;
}

/* kb:rank, kb:rankinfo and kb:rankorder hold exactly the expected
 * entries, in the expected order. */
static void assert_rank_keys(const int *best, const int *order, int nrank)
{
	char key[128];
	redisReply *r;

	snprintf(key, sizeof(key), KB_KEY_RANK, RANKED_LB, "CPU");
	r = redis_cmd("ZRANGE %s 0 -1", key);
	ck_assert_msg(r->elements == (size_t)nrank,
		      "%s has %zu users, the Results rank %d", key, r->elements,
		      nrank);
	freeReplyObject(r);
	for (int u = 0; u < RANKED_USERS; u++) {
		r = redisCommand(P.rc, "ZSCORE %s %s", key, users[u].user_id);
		ck_assert_ptr_nonnull(r);
		ck_assert_msg(best[u] >= 0 || r->type == REDIS_REPLY_NIL,
			      "%s has %s (%s) with no passing run", key,
			      users[u].name, r->str);
		ck_assert_msg(best[u] < 0 || (r->type == REDIS_REPLY_STRING &&
					      strtod(r->str, NULL) ==
						      seen[best[u]].score),
			      "%s: %s has %s, its best passing run (sub %ld) "
			      "%.17g",
			      key, users[u].name, r->str ? r->str : "(nil)",
			      best[u] < 0 ? 0L : ids[best[u]],
			      best[u] < 0 ? 0.0 : seen[best[u]].score);
		freeReplyObject(r);
	}

	snprintf(key, sizeof(key), KB_KEY_RANK_INFO, RANKED_LB, "CPU");
	r = redis_cmd("HGETALL %s", key);
	ck_assert_msg(r->elements == 2 * (size_t)nrank,
		      "%s has %zu users, the Results rank %d", key,
		      r->elements / 2, nrank);
	freeReplyObject(r);
	for (int k = 0; k < nrank; k++) {
		const int u = order[k];

		r = redisCommand(P.rc, "HGET %s %s", key, users[u].user_id);
		ck_assert_msg(r && r->type == REDIS_REPLY_STRING &&
				      strtol(r->str, NULL, 10) == ids[best[u]],
			      "%s: %s has \"%s\", its best passing run is "
			      "sub %ld",
			      key, users[u].name,
			      r && r->str ? r->str : "(nil)", ids[best[u]]);
		freeReplyObject(r);
	}

	snprintf(key, sizeof(key), KB_KEY_RANK_ORDER, RANKED_LB, "CPU");
	r = redis_cmd("ZRANGE %s 0 -1", key);
	ck_assert_msg(r->elements == (size_t)nrank,
		      "%s has %zu members, the Results rank %d", key,
		      r->elements, nrank);
	for (int k = 0; k < nrank; k++) {
		const char *m = r->element[k]->str, *tail = strrchr(m, ':');

		ck_assert_msg(tail && strcmp(tail + 1,
					     users[order[k]].user_id) == 0,
			      "%s place %d is %s, the Results say %s", key,
			      k + 1, m, users[order[k]].name);
	}
	freeReplyObject(r);
}

/* A history's members "<id>:<score>:..." are the scored runs of user u
 * (any user when u < 0), each once: nscored of them. */
static void assert_history(const char *key, int u, int nscored)
{
	redisReply *r = redis_cmd("ZRANGE %s 0 -1", key);
	int *hits = calloc((size_t)nids, sizeof(int));

	ck_assert_msg(r->elements == (size_t)nscored,
		      "%s has %zu entries, the Results score %d runs", key,
		      r->elements, nscored);
	for (size_t e = 0; e < r->elements; e++) {
		char *end;
		const char *m = r->element[e]->str;
		const long id = strtol(m, &end, 10);
		const double score = strtod(*end == ':' ? end + 1 : end, NULL);
		int i = 0;

		while (i < nids && ids[i] != id)
			i++;
		ck_assert_msg(
			i < nids && seen[i].scored && (u < 0 || sender[i] == u),
			"%s has %s, not a scored run of this test's", key, m);
		ck_assert_msg(hits[i]++ == 0, "%s has sub %ld twice", key, id);
		ck_assert_msg(score == seen[i].score,
			      "%s: sub %ld has %.17g, its Result %.17g", key,
			      id, score, seen[i].score);
		if (u < 0)
			ck_assert_msg(strstr(m, seen[i].user_id) != NULL,
				      "%s: %s is not of user %s", key, m,
				      seen[i].user_id);
	}
	freeReplyObject(r);
	free(hits);
}

/* GET /submissions/{lb}/CPU lists the expected entries, in order. */
static void assert_rank_api(const int *best, const int *order, int nrank)
{
	json_t *list, *e;
	size_t k;

	/* A ranking the gateway rendered is reused for KB_RANKING_CACHE_MS
	 * (1 s). */
	sleep_ms(1500);
	list = ranking(&P, RANKED_LB);
	ck_assert_msg(json_is_array(list), "GET /submissions/%s/CPU failed",
		      RANKED_LB);
	ck_assert_msg(json_array_size(list) == (size_t)nrank,
		      "the API ranks %zu users, the Results %d: %s",
		      json_array_size(list), nrank, json_dumps(list, 0));
	json_array_foreach(list, k, e)
	{
		const int u = order[k], i = best[u];
		const char *uid =
			json_string_value(json_object_get(e, "user_id"));
		const double score =
			json_number_value(json_object_get(e, "score"));
		const long sub = (long)json_integer_value(
			json_object_get(e, "submission_id"));

		ck_assert_msg(uid && strcmp(uid, users[u].user_id) == 0 &&
				      json_integer_value(json_object_get(
					      e, "rank")) == (json_int_t)k + 1,
			      "API place %zu is %s, the Results say %s (%s)",
			      k + 1, json_dumps(e, 0), users[u].user_id,
			      users[u].name);
		ck_assert_msg(score == seen[i].score && sub == ids[i],
			      "API: %s has %.17g (sub %ld), its best passing "
			      "run %.17g (sub %ld)",
			      users[u].name, score, sub, seen[i].score, ids[i]);
	}
	json_decref(list);
}

/* The ranking is exactly the one the Results make: each user's entry
 * is the best of its scored runs (ranker/ranking.lua's order), in Redis
 * and through the API; a user with none is not ranked; every scored run
 * is in the histories once. Needs seen[] (count_results_all). */
static void assert_ranking(void)
{
	int best[RANKED_USERS], order[RANKED_USERS], nrank, scored_all = 0;
	char key[128];

	for (int u = 0; u < RANKED_USERS; u++) {
		int nscored, nranked;

		best[u] = best_of(u, &nscored, &nranked);
		scored_all += nscored;
		printf("chaos: %s: %d ranked runs, %d scored, best %.6g s "
		       "(sub %ld)\n",
		       users[u].name, nranked, nscored,
		       best[u] < 0 ? 0.0 : seen[best[u]].score,
		       best[u] < 0 ? 0L : ids[best[u]]);
		snprintf(key, sizeof(key), KB_KEY_USER_HIST, users[u].user_id);
		assert_history(key, u, nscored);
	}
	/* A failed check ends the forked test before stdio's exit. */
	fflush(stdout);
	nrank = expected_order(best, order);
	assert_rank_keys(best, order, nrank);
	snprintf(key, sizeof(key), KB_KEY_HIST, RANKED_LB, "CPU");
	assert_history(key, -1, scored_all);
	assert_rank_api(best, order, nrank);
	printf("chaos: ranking checked: %d users ranked, %d scored runs\n",
	       nrank, scored_all);
}

START_TEST(chaos_every_job_once)
{
	const int n = n_submissions() + n_ranked();
	const double t0 = kb_mono_s();
	pid_t w1, w2;
	int failed, step = n / 6 > 0 ? n / 6 : 1, kills = 0;
	size_t largest;
	char cmd[512];
	double t_drain;

	start(1);
	submit_backlog(n_submissions(), n_ranked());
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
	assert_ranking();
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
