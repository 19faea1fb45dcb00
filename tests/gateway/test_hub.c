/* The hub: fan-out by submission id, bounded queues that keep the final
 * event, synthetic duplicates, ticks, idle detection, close_all,
 * listeners, and many threads publishing and watching at once. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hub.h"
#include "kb_check_main.h"

static atomic_int wakes;

static void wake(void *ctx)
{
	(void)ctx;
	atomic_fetch_add(&wakes, 1);
}

static struct kb_gw_hub_msg status(uint64_t id, const char *stage)
{
	struct kb_gw_hub_msg m = {.type = KB_GW_EV_STATUS,
				  .id = id,
				  .stage = stage,
				  .position = -1,
				  .elapsed_ms = 5};
	return m;
}

static uint8_t *packed_result(uint64_t id, size_t *len)
{
	Kb__Result r = KB__RESULT__INIT;
	Kb__RunResult run = KB__RUN_RESULT__INIT, *rp[1] = {&run};

	run.key = "private";
	run.stdout = "SECRET";
	run.passed = 1;
	r.submission_id = id;
	r.n_runs = 1;
	r.runs = rp;
	*len = kb__result__get_packed_size(&r);
	uint8_t *b = malloc(*len);
	kb__result__pack(&r, b);
	return b;
}

START_TEST(fan_out_and_order)
{
	kb_gw_hub *h = kb_gw_hub_new(8);
	struct kb_gw_watch *a = kb_gw_hub_watch(h, 7, 0, wake, NULL);
	struct kb_gw_watch *b = kb_gw_hub_watch(h, 7, 0, NULL, NULL);
	struct kb_gw_watch *c = kb_gw_hub_watch(h, 8, 0, NULL, NULL);
	struct kb_gw_event ev;
	size_t len;

	atomic_store(&wakes, 0);
	struct kb_gw_hub_msg m = status(7, "compiling");
	ck_assert_uint_eq(kb_gw_hub_publish(h, &m), 2);
	m = status(7, "testing");
	kb_gw_hub_publish(h, &m);
	uint8_t *p = packed_result(7, &len);
	struct kb_gw_hub_msg fin = {.type = KB_GW_EV_RESULT,
				    .id = 7,
				    .payload = p,
				    .payload_len = len,
				    .position = -1};
	ck_assert_uint_eq(kb_gw_hub_publish(h, &fin), 2);
	free(p);
	ck_assert_int_eq(atomic_load(&wakes), 3);
	m = status(7, "late"); /* after the final event: dropped */
	ck_assert_uint_eq(kb_gw_hub_publish(h, &m), 0);

	ck_assert_int_eq(kb_gw_watch_next(a, &ev), 1);
	ck_assert_int_eq(ev.type, KB_GW_EV_STATUS);
	ck_assert_str_eq(ev.stage, "compiling");
	ck_assert_int_eq(ev.elapsed_ms, 5);
	kb_gw_event_clear(&ev);
	ck_assert_int_eq(kb_gw_watch_next(a, &ev), 1);
	ck_assert_str_eq(ev.stage, "testing");
	kb_gw_event_clear(&ev);
	ck_assert_int_eq(kb_gw_watch_next(a, &ev), 1);
	ck_assert_int_eq(ev.type, KB_GW_EV_RESULT);
	ck_assert_ptr_nonnull(ev.result);
	ck_assert_uint_eq(ev.result->submission_id, 7);
	/* Redacted on the way out. */
	ck_assert_str_eq(ev.result->runs[0]->stdout, "");
	kb_gw_event_clear(&ev);
	ck_assert_int_eq(kb_gw_watch_next(a, &ev), -1);
	ck_assert_int_eq(kb_gw_watch_next(c, &ev), 0);
	ck_assert_uint_eq(kb_gw_hub_count(h), 3);
	kb_gw_watch_close(a);
	kb_gw_watch_close(b); /* with events still queued */
	kb_gw_watch_close(c);
	ck_assert_uint_eq(kb_gw_hub_count(h), 0);
	kb_gw_hub_destroy(h);
}
END_TEST

START_TEST(bounded_keeps_final)
{
	kb_gw_hub *h = kb_gw_hub_new(2);
	struct kb_gw_watch *w = kb_gw_hub_watch(h, 1, 0, NULL, NULL);
	struct kb_gw_event ev;
	const char *stages[] = {"a", "b", "c", "d", "e"};

	for (int i = 0; i < 5; i++) {
		struct kb_gw_hub_msg m = status(1, stages[i]);
		kb_gw_hub_publish(h, &m);
	}
	struct kb_gw_hub_msg e = {.type = KB_GW_EV_ERROR,
				  .id = 1,
				  .error_status = 410,
				  .message = "gone",
				  .position = -1};
	kb_gw_hub_publish(h, &e);
	/* The two newest statuses, then the final. */
	ck_assert_int_eq(kb_gw_watch_next(w, &ev), 1);
	ck_assert_str_eq(ev.stage, "d");
	ck_assert_int_eq(kb_gw_watch_next(w, &ev), 1);
	ck_assert_str_eq(ev.stage, "e");
	ck_assert_int_eq(kb_gw_watch_next(w, &ev), 1);
	ck_assert_int_eq(ev.type, KB_GW_EV_ERROR);
	ck_assert_int_eq(ev.error_status, 410);
	ck_assert_str_eq(ev.message, "gone");
	ck_assert_int_eq(kb_gw_watch_next(w, &ev), -1);
	kb_gw_watch_close(w);
	kb_gw_hub_destroy(h);
}
END_TEST

START_TEST(synthetic_duplicates_and_bad_payload)
{
	kb_gw_hub *h = kb_gw_hub_new(8);
	struct kb_gw_watch *w = kb_gw_hub_watch(h, 3, 0, NULL, NULL);
	struct kb_gw_event ev;
	struct kb_gw_hub_msg m = status(3, "queued");

	m.position = 2;
	m.synthetic = 1;
	ck_assert_int_eq(kb_gw_hub_push(w, &m), 1);
	ck_assert_int_eq(kb_gw_hub_push(w, &m), 0); /* same state: dropped */
	m.position = 1;
	ck_assert_int_eq(kb_gw_hub_push(w, &m), 1); /* moved up: kept */
	m.synthetic = 0;
	ck_assert_int_eq(kb_gw_hub_push(w, &m), 1); /* a real event always */
	struct kb_gw_hub_msg bad = {.type = KB_GW_EV_RESULT,
				    .id = 3,
				    .payload = "\xff\xff",
				    .payload_len = 2,
				    .position = -1};
	kb_gw_hub_publish(h, &bad);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(kb_gw_watch_next(w, &ev), 1);
		kb_gw_event_clear(&ev);
	}
	ck_assert_int_eq(kb_gw_watch_next(w, &ev), 1);
	ck_assert_int_eq(ev.type, KB_GW_EV_ERROR); /* undecodable result */
	ck_assert_int_eq(ev.error_status, 502);
	kb_gw_watch_close(w);
	kb_gw_hub_destroy(h);
}
END_TEST

START_TEST(ticks_idle_and_close_all)
{
	kb_gw_hub *h = kb_gw_hub_new(4);
	struct kb_gw_watch *t = kb_gw_hub_watch(h, 1, 1000, wake, NULL);
	struct kb_gw_watch *n = kb_gw_hub_watch(h, 2, 0, wake, NULL);
	uint64_t ids[4];
	struct kb_gw_event ev;

	atomic_store(&wakes, 0);
	kb_gw_hub_tick(h, 0);
	ck_assert_int_eq(atomic_load(&wakes), 0);
	kb_gw_hub_tick(h, INT64_MAX / 2);
	ck_assert_int_eq(atomic_load(&wakes), 1);
	kb_gw_hub_tick(h, INT64_MAX / 2); /* not due again yet */
	ck_assert_int_eq(atomic_load(&wakes), 1);
	ck_assert_uint_eq(kb_gw_hub_idle(h, INT64_MAX / 2, 1000, ids, 4), 2);
	ck_assert_uint_eq(kb_gw_hub_idle(h, INT64_MAX / 2, 1000, ids, 4),
			  0); /* reset */
	kb_gw_hub_close_all(h, 503, "bye");
	ck_assert_ptr_null(kb_gw_hub_watch(h, 3, 0, NULL, NULL));
	ck_assert_int_eq(kb_gw_watch_wait(t, 1000, &ev), 1);
	ck_assert_int_eq(ev.type, KB_GW_EV_ERROR);
	ck_assert_int_eq(ev.error_status, 503);
	ck_assert_int_eq(kb_gw_watch_wait(t, 10, &ev), -1);
	ck_assert_int_eq(kb_gw_watch_wait(n, 10, &ev), 1);
	kb_gw_watch_close(t);
	kb_gw_watch_close(n);
	kb_gw_hub_destroy(h);
}
END_TEST

static kb_gw_hub *H;

static void *publisher(void *arg)
{
	uintptr_t base = (uintptr_t)arg;
	for (int round = 0; round < 200; round++)
		for (uint64_t id = base; id < base + 20; id++) {
			struct kb_gw_hub_msg m =
				status(id, round & 1 ? "a" : "b");
			kb_gw_hub_publish(H, &m);
		}
	for (uint64_t id = base; id < base + 20; id++) {
		struct kb_gw_hub_msg e = {.type = KB_GW_EV_ERROR,
					  .id = id,
					  .error_status = 1,
					  .position = -1};
		kb_gw_hub_publish(H, &e);
	}
	return NULL;
}

static void *watcher(void *arg)
{
	uint64_t id = (uintptr_t)arg;
	struct kb_gw_watch *w = kb_gw_hub_watch(H, id, 0, NULL, NULL);
	struct kb_gw_event ev;
	int rc;

	while ((rc = kb_gw_watch_wait(w, 30000, &ev)) == 1 &&
	       ev.type == KB_GW_EV_STATUS)
		kb_gw_event_clear(&ev);
	kb_gw_watch_close(w);
	return (void *)(intptr_t)(rc == 1);
}

START_TEST(threads)
{
	pthread_t pub[4], wat[40];

	H = kb_gw_hub_new(4);
	for (int i = 0; i < 40; i++)
		pthread_create(&wat[i], NULL, watcher,
			       (void *)(uintptr_t)(1 + (i % 4) * 20 + i / 4));
	/* Watchers subscribe before anything final is sent. */
	while (kb_gw_hub_count(H) < 40)
		;
	for (int i = 0; i < 4; i++)
		pthread_create(&pub[i], NULL, publisher,
			       (void *)(uintptr_t)(1 + i * 20));
	for (int i = 0; i < 4; i++)
		pthread_join(pub[i], NULL);
	for (int i = 0; i < 40; i++) {
		void *got;
		pthread_join(wat[i], &got);
		ck_assert_msg(got != NULL, "watcher %d missed its final event",
			      i);
	}
	ck_assert_uint_eq(kb_gw_hub_count(H), 0);
	kb_gw_hub_destroy(H);
}
END_TEST

struct heard {
	int n;
	uint64_t last_id;
	char board[32];
};

static void listener(const struct kb_gw_hub_msg *m, void *ctx)
{
	struct heard *h = ctx;

	h->n++;
	h->last_id = m->id;
	snprintf(h->board, sizeof(h->board), "%s", m->board ? m->board : "");
}

START_TEST(listeners_hear_every_publish)
{
	kb_gw_hub *h = kb_gw_hub_new(4);
	struct kb_gw_watch *w = kb_gw_hub_watch(h, 3, 0, NULL, NULL);
	struct heard a = {0}, b = {0};
	struct kb_gw_event ev;

	ck_assert_int_eq(kb_gw_hub_listen(h, listener, &a), 0);
	ck_assert_int_eq(kb_gw_hub_listen(h, listener, &b), 0);
	/* Whatever the id, watched or not. */
	struct kb_gw_hub_msg m = status(3, "testing");
	ck_assert_uint_eq(kb_gw_hub_publish(h, &m), 1);
	m = status(99, "compiling");
	m.board = "vectorsum_cpu";
	ck_assert_uint_eq(kb_gw_hub_publish(h, &m), 0);
	ck_assert_int_eq(a.n, 2);
	ck_assert_int_eq(b.n, 2);
	ck_assert_uint_eq(a.last_id, 99);
	ck_assert_str_eq(a.board, "vectorsum_cpu");
	/* A push to one watcher is not a publication. */
	m = status(3, "benchmarking");
	ck_assert_int_eq(kb_gw_hub_push(w, &m), 1);
	ck_assert_int_eq(a.n, 2);
	/* Removed, a listener hears nothing more; the other still does. */
	kb_gw_hub_unlisten(h, listener, &a);
	kb_gw_hub_unlisten(h, listener, &a);
	m = status(3, "ranked_run");
	kb_gw_hub_publish(h, &m);
	ck_assert_int_eq(a.n, 2);
	ck_assert_int_eq(b.n, 3);
	/* The table is bounded. */
	for (int i = 1; i < KB_GW_HUB_LISTENERS_MAX; i++)
		ck_assert_int_eq(kb_gw_hub_listen(h, listener, &a), 0);
	ck_assert_int_eq(kb_gw_hub_listen(h, listener, &a), -ENOSPC);
	while (kb_gw_watch_next(w, &ev) == 1)
		kb_gw_event_clear(&ev);
	kb_gw_watch_close(w);
	kb_gw_hub_destroy(h);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gateway_hub");
	TCase *tc = tcase_create("hub");

	tcase_add_test(tc, fan_out_and_order);
	tcase_add_test(tc, bounded_keeps_final);
	tcase_add_test(tc, synthetic_duplicates_and_bad_payload);
	tcase_add_test(tc, ticks_idle_and_close_all);
	tcase_add_test(tc, listeners_hear_every_publish);
	tcase_add_test(tc, threads);
	suite_add_tcase(s, tc);
	return kb_check_run(s);
}
