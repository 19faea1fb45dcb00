/* kb_gw_events: see events.h. */
#include "events.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sodium.h>

#include "base/cache.h"
#include "base/hub.h"
#include "kb_kafka.h"
#include "kb_log.h"
#include "kb_report.h"
#include "kb_util.h"
#include "problems.h"
#include "store/store.h"
#include "submit.h"

#define POLL_MS 200
#define TICK_MS 250
#define SYNC_MS 2000
#define MAX_WORKERS 256
#define MAX_IDLE_POLL 256
#define MAX_GPUS 64
#define RECENT_JOBS 16 /* jobs whose durations make a gpu's mean */

struct worker {
	char gpu[64];
	char name[96];
	int64_t last_seen_ms;
	uint64_t busy_with;
	char stage[24];
};

/* The durations of a gpu's last jobs, newest over oldest. */
struct recent {
	char gpu[64];
	double s[RECENT_JOBS];
	size_t n, next;
};

struct kb_gw_events {
	struct kb_gw *g;
	kb_consumer *cons;
	pthread_t consumer_th, ticker_th;
	int consumer_started, ticker_started;
	atomic_int stop;
	int64_t started_ms;
	pthread_mutex_t mu; /* workers and recent */
	struct worker workers[MAX_WORKERS];
	size_t nworkers;
	struct recent recent[MAX_GPUS];
	size_t nrecent;
};

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static void heartbeat(struct kb_gw_events *e, const char *gpu, const char *name,
		      uint64_t busy_with, const char *stage)
{
	struct worker *w = NULL, *oldest = NULL;

	if (!name || !*name || !gpu || !*gpu)
		return;
	pthread_mutex_lock(&e->mu);
	for (size_t i = 0; i < e->nworkers; i++) {
		struct worker *x = &e->workers[i];
		if (strcmp(x->name, name) == 0 && strcmp(x->gpu, gpu) == 0)
			w = x;
		if (!oldest || x->last_seen_ms < oldest->last_seen_ms)
			oldest = x;
	}
	if (!w)
		w = e->nworkers < MAX_WORKERS ? &e->workers[e->nworkers++]
					      : oldest;
	snprintf(w->gpu, sizeof(w->gpu), "%s", gpu);
	snprintf(w->name, sizeof(w->name), "%s", name);
	w->last_seen_ms = kb_now_ms();
	/* A heartbeat (stage NULL) keeps the stage of the job it names. */
	if (stage || w->busy_with != busy_with)
		snprintf(w->stage, sizeof(w->stage), "%s", stage ? stage : "");
	w->busy_with = busy_with;
	pthread_mutex_unlock(&e->mu);
}

size_t kb_gw_events_workers(struct kb_gw_events *e, const char *gpu,
			    int64_t now_ms, int64_t stale_ms,
			    struct kb_gw_worker_info *out, size_t max)
{
	size_t n = 0;

	if (!e)
		return 0;
	pthread_mutex_lock(&e->mu);
	for (size_t i = 0; i < e->nworkers && n < max; i++) {
		const struct worker *w = &e->workers[i];
		if (strcmp(w->gpu, gpu) != 0 ||
		    now_ms - w->last_seen_ms > stale_ms)
			continue;
		snprintf(out[n].name, sizeof(out[n].name), "%s", w->name);
		out[n].last_seen_ms = w->last_seen_ms;
		out[n].busy_with = w->busy_with;
		snprintf(out[n].stage, sizeof(out[n].stage), "%s", w->stage);
		n++;
	}
	pthread_mutex_unlock(&e->mu);
	return n;
}

/* Notes how long a job of gpu took, from its worker taking it to its
 * Result. */
static void job_took(struct kb_gw_events *e, const char *gpu,
		     const Kb__Result *r)
{
	struct recent *x = NULL;

	if (!gpu || !*gpu || r->started_at_ms <= 0 ||
	    r->finished_at_ms < r->started_at_ms)
		return;
	pthread_mutex_lock(&e->mu);
	for (size_t i = 0; i < e->nrecent && !x; i++)
		if (strcmp(e->recent[i].gpu, gpu) == 0)
			x = &e->recent[i];
	if (!x && e->nrecent < MAX_GPUS) {
		x = &e->recent[e->nrecent++];
		snprintf(x->gpu, sizeof(x->gpu), "%s", gpu);
	}
	if (x) {
		x->s[x->next] =
			(double)(r->finished_at_ms - r->started_at_ms) / 1000.0;
		x->next = (x->next + 1) % RECENT_JOBS;
		if (x->n < RECENT_JOBS)
			x->n++;
	}
	pthread_mutex_unlock(&e->mu);
}

void kb_gw_events_outlook(struct kb_gw_events *e, const char *gpu,
			  long position, int64_t now_ms, int64_t stale_ms,
			  struct kb_gw_outlook *out)
{
	double mean = -1;

	out->workers = out->busy = 0;
	out->wait_s = -1;
	if (!e || !gpu)
		return;
	pthread_mutex_lock(&e->mu);
	for (size_t i = 0; i < e->nworkers; i++) {
		const struct worker *w = &e->workers[i];
		if (strcmp(w->gpu, gpu) != 0 ||
		    now_ms - w->last_seen_ms > stale_ms)
			continue;
		out->workers++;
		out->busy += w->busy_with != 0;
	}
	for (size_t i = 0; i < e->nrecent; i++)
		if (strcmp(e->recent[i].gpu, gpu) == 0 && e->recent[i].n > 0) {
			mean = 0;
			for (size_t k = 0; k < e->recent[i].n; k++)
				mean += e->recent[i].s[k];
			mean /= (double)e->recent[i].n;
		}
	pthread_mutex_unlock(&e->mu);
	if (out->workers == 0 && now_ms - e->started_ms < stale_ms)
		out->workers = -1;
	if (out->workers > 0 && mean >= 0 && position >= 1)
		out->wait_s = mean * (double)(position - 1 + out->busy) /
			      out->workers;
}

void kb_gw_queue_note(struct kb_gw *g, const char *gpu, long position,
		      struct kb_gw_outlook *o, char *note, size_t note_size)
{
	kb_gw_events_outlook(g->events, gpu, position, kb_now_ms(),
			     g->cfg.worker_stale_s * 1000, o);
	note[0] = '\0';
	/* Accepted all the same: a worker that starts (or comes back) runs
	 * it, which a refusal would not. */
	if (o->workers == 0)
		snprintf(note, note_size,
			 "no worker online for %s: the submission waits in the "
			 "queue until one serves it",
			 gpu);
	else if (o->wait_s >= 0)
		snprintf(note, note_size, "expected to start in about %.0f s",
			 o->wait_s < 1 ? 1 : o->wait_s);
}

static void on_progress(struct kb_gw_events *e, const Kb__ResultEvent *ev)
{
	const Kb__Progress *p = ev->progress;
	const char *stage = kb_report_stage_name(p->stage);

	if (ev->submission_id == 0) { /* a heartbeat */
		heartbeat(e, ev->gpu, p->worker, p->busy_with, NULL);
		return;
	}
	heartbeat(e, ev->gpu, p->worker, ev->submission_id, stage);
	/* The secret run is shown as the ranked run it continues: its start
	 * is no event (kb_report.h). */
	if (kb_report_stage_secret(p->stage))
		return;
	struct kb_gw_hub_msg m = {
		.type = KB_GW_EV_STATUS,
		.id = ev->submission_id,
		.stage = stage,
		.message = p->message,
		.worker = p->worker,
		.position = -1,
		.elapsed_ms = p->elapsed_ms,
	};
	kb_gw_hub_publish(e->g->hub, &m);
	if (ev->gpu && *ev->gpu &&
	    kb_gw_store_job_event(e->g, ev->submission_id, ev->gpu, 0) < 0)
		kb_debug("sub=%" PRIu64 " queue bookkeeping failed",
			 ev->submission_id);
}

static void on_result(struct kb_gw_events *e, const Kb__ResultEvent *ev)
{
	const Kb__Result *r = ev->result;
	const char *gpu = ev->gpu && *ev->gpu ? ev->gpu : r->gpu;
	uint64_t id = ev->submission_id ? ev->submission_id : r->submission_id;
	size_t len = kb__result__get_packed_size(r);
	uint8_t *buf = malloc(len ? len : 1);
	char prefix[256];

	heartbeat(e, gpu, r->worker, 0, "");
	job_took(e, gpu, r);
	if (buf) {
		kb__result__pack(r, buf);
		struct kb_gw_hub_msg m = {
			.type = KB_GW_EV_RESULT,
			.id = id,
			.position = -1,
			.elapsed_ms = -1,
			.payload = buf,
			.payload_len = len,
			.board = r->leaderboard,
			.gpu = gpu,
			.user = r->user_id,
		};
		kb_gw_hub_publish(e->g->hub, &m);
		/* The packed Result holds the secret run's output. */
		sodium_memzero(buf, len);
		free(buf);
	}
	if (gpu && *gpu && kb_gw_store_job_event(e->g, id, gpu, 1) < 0)
		kb_debug("sub=%" PRIu64 " queue bookkeeping failed", id);
	if (r->leaderboard && *r->leaderboard && gpu && e->g->cache) {
		snprintf(prefix, sizeof(prefix), "%s|%s|", r->leaderboard, gpu);
		kb_gw_cache_invalidate(e->g->cache, prefix);
	}
}

static void *consumer_main(void *arg)
{
	struct kb_gw_events *e = arg;

	while (!atomic_load(&e->stop)) {
		kb_message m;
		int rc = kb_consumer_poll(e->cons, POLL_MS, &m);
		if (rc < 0) {
			kb_error(
				"kb.results consumer failed (%d); streams fall back "
				"to polling Redis",
				rc);
			break;
		}
		if (rc == 0)
			continue;
		static const uint8_t empty[1];
		Kb__ResultEvent *ev = kb__result_event__unpack(
			NULL, m.value ? m.value_len : 0,
			m.value ? m.value : empty);
		if (!ev) {
			kb_debug(
				"kb.results: undecodable event at offset %" PRId64,
				m.offset);
		} else {
			if (ev->event_case ==
				    KB__RESULT_EVENT__EVENT_PROGRESS &&
			    ev->progress)
				on_progress(e, ev);
			else if (ev->event_case ==
					 KB__RESULT_EVENT__EVENT_RESULT &&
				 ev->result)
				on_result(e, ev);
			kb__result_event__free_unpacked(ev, NULL);
		}
		kb_message_release(&m);
	}
	kb_gw_redis_drop();
	return NULL;
}

/* ---- the board table, shared through Redis ---- */

static int reply_has(const redisReply *set, const char *name)
{
	for (size_t i = 0;
	     set && set->type == REDIS_REPLY_ARRAY && i < set->elements; i++)
		if (set->element[i]->type == REDIS_REPLY_STRING &&
		    strcmp(set->element[i]->str, name) == 0)
			return 1;
	return 0;
}

void kb_gw_boards_sync(struct kb_gw *g)
{
	size_t n = kb_gw_lb_count(g);
	const char **names = calloc(n ? n : 1, sizeof(*names));
	int *closed = calloc(n ? n : 1, sizeof(*closed));
	uint64_t *secrets = calloc(n ? n : 1, sizeof(*secrets));
	redisReply *dyn = NULL, *deleted = NULL;
	int changed = 0;

	/* The whole pass under the lock: what it reads of kb:lbdyn must not
	 * be older than an update-problems update of this gateway. */
	kb_gw_boards_change_lock();
	if (!names || !closed || !secrets)
		goto out;
	for (size_t i = 0; i < n; i++)
		names[i] = kb_gw_lb_at(g, i)->task->name;
	if (kb_gw_board_sync(g, &dyn, &deleted, names, n, closed, secrets) < 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct kb_gw_lb *lb = kb_gw_lb_at(g, i);
		if (atomic_load(&lb->deleted))
			continue;
		if (atomic_exchange(&lb->closed, closed[i]) != closed[i])
			changed = 1;
		/* Deleted elsewhere: a dynamic board is gone once kb:lbdyn no
		 * longer names it, a static one once kb:lbdeleted does. A
		 * secret other than ours means the board was deleted and made
		 * again meanwhile: this one goes, the new one is loaded below. */
		if (reply_has(deleted, lb->task->name) ||
		    (lb->dynamic && lb->secret_seed && secrets[i] &&
		     secrets[i] != lb->secret_seed)) {
			atomic_store(&lb->deleted, 1);
			changed = 1;
		}
	}
	/* Created elsewhere: load what kb:lbdyn names and we lack; updated
	 * elsewhere (update-problems names another directory): load the new
	 * one, and ours goes once it is there. */
	for (size_t i = 0;
	     dyn && dyn->type == REDIS_REPLY_ARRAY && i + 1 < dyn->elements;
	     i += 2) {
		const char *name = dyn->element[i]->str,
			   *dir = dyn->element[i + 1]->str;
		const struct kb_gw_lb *have = kb_gw_lb_find(g, name);
		char err[256];
		int status;
		if (have && strcmp(have->task->name, name) != 0)
			have = NULL; /* only the same spelling is the same board */
		if (have && (!have->dynamic || !have->directory ||
			     strcmp(have->directory, dir) == 0))
			continue;
		struct kb_gw_lb *lb = kb_gw_lb_add_dynamic(
			g, dir, name, have != NULL, &status, err, sizeof(err));
		if (!lb) {
			kb_warn("board %s (directory %s) cannot be loaded here: %s",
				name, dir, err);
			continue;
		}
		if (kb_gw_store_init_board(g, lb, NULL, err, sizeof(err)) < 0) {
			kb_warn("board %s: %s", name, err);
			atomic_store(&lb->deleted, 1);
			continue;
		}
		if (have)
			kb_gw_lb_swap(g, (struct kb_gw_lb *)have, lb);
		kb_info("board %s loaded (%s by an admin elsewhere)", name,
			have ? "updated" : "created");
	}
out:
	kb_gw_boards_change_unlock();
	if (changed)
		atomic_fetch_add(&g->boards_gen, 1);
	if (dyn)
		freeReplyObject(dyn);
	if (deleted)
		freeReplyObject(deleted);
	free(names);
	free(closed);
	if (secrets)
		sodium_memzero(secrets, (n ? n : 1) * sizeof(*secrets));
	free(secrets);
}

static void *ticker_main(void *arg)
{
	struct kb_gw_events *e = arg;
	struct kb_gw *g = e->g;
	int64_t next_poll = 0, next_sync = 0;
	uint64_t ids[MAX_IDLE_POLL];

	while (!atomic_load(&e->stop)) {
		int64_t now = kb_now_ms();
		kb_gw_hub_tick(g->hub, now);
		if (now >= next_poll) {
			int64_t idle = g->cfg.sse_poll_s * 1000;
			size_t n = kb_gw_hub_idle(g->hub, now, idle, ids,
						  MAX_IDLE_POLL);
			for (size_t i = 0; i < n && !atomic_load(&e->stop); i++)
				kb_gw_push_state(g, NULL, ids[i]);
			next_poll = now + 500;
		}
		if (now >= next_sync) {
			kb_gw_boards_sync(g);
			next_sync = now + SYNC_MS;
		}
		sleep_ms(TICK_MS);
	}
	kb_gw_redis_drop();
	return NULL;
}

struct kb_gw_events *kb_gw_events_start(struct kb_gw *g, char *errstr,
					size_t errstr_size)
{
	struct kb_gw_events *e = calloc(1, sizeof(*e));
	char host[128] = "host", group[256];
	const char *topics[] = {KB_TOPIC_RESULTS};
	const char *extra[] = {"auto.offset.reset", "latest", NULL};

	if (!e) {
		snprintf(errstr, errstr_size, "out of memory");
		return NULL;
	}
	e->g = g;
	e->started_ms = kb_now_ms();
	atomic_init(&e->stop, 0);
	pthread_mutex_init(&e->mu, NULL);
	gethostname(host, sizeof(host) - 1);
	for (char *c = host; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '-' || *c == '.'))
			*c = '_';
	snprintf(group, sizeof(group), "kb-gateway.%s.%d", host, (int)getpid());
	e->cons = kb_consumer_new(g->cfg.kafka_brokers, group, topics, 1, extra,
				  errstr, errstr_size);
	if (!e->cons) {
		kb_gw_events_stop(e);
		return NULL;
	}
	if (pthread_create(&e->consumer_th, NULL, consumer_main, e) != 0) {
		snprintf(errstr, errstr_size,
			 "cannot start the consumer thread");
		kb_gw_events_stop(e);
		return NULL;
	}
	e->consumer_started = 1;
	if (pthread_create(&e->ticker_th, NULL, ticker_main, e) != 0) {
		snprintf(errstr, errstr_size, "cannot start the ticker thread");
		kb_gw_events_stop(e);
		return NULL;
	}
	e->ticker_started = 1;
	return e;
}

void kb_gw_events_stop(struct kb_gw_events *e)
{
	if (!e)
		return;
	atomic_store(&e->stop, 1);
	if (e->consumer_started)
		pthread_join(e->consumer_th, NULL);
	if (e->ticker_started)
		pthread_join(e->ticker_th, NULL);
	kb_consumer_destroy(e->cons);
	pthread_mutex_destroy(&e->mu);
	free(e);
}
