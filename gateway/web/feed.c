/* The feed: from "a Result arrived" to "the pages show it".
 *
 * The feed listens to the hub (hub.h), where the events thread publishes
 * every Result it sees on Kafka; the listener (on_hub) only queues it (bounded; a full queue drops the oldest, whose page then ages
 * out of the cache by its TTL). The feed thread, every POLL_MS, asks Redis
 * in one pipeline whether kb:res:<id>:<gpu> exists for each queued Result:
 * the ranker writes that key in the same script that updates the ranking,
 * so once it exists a page rendered from Redis shows the Result. Results
 * the ranker has not folded after GIVE_UP_S are released anyway (a Result
 * that cannot be folded is dead-lettered and changes nothing). Releasing
 * one drops the cached pages it may change, bumps the generation and
 * sends a "board" event to the streams that follow its board.
 *
 * Workers come and go without a Result: every WORKERS_MS the feed thread
 * also asks the events thread's bookkeeping (memory, kb_web_workers) how
 * many workers each public board's gpu has, and when that changed for a
 * gpu (first worker, last one gone stale, a count), drops the pages that
 * show it, bumps the generation and sends a "workers" event to the streams
 * of the boards that offer the gpu and to those that follow every board.
 *
 * Event streams (GET /web/events) are suspended connections, like the
 * submission streams of routes/stream.c: the feed thread appends an event to a
 * stream's buffer under its mutex and resumes the connection if it is
 * suspended; the reader callback (on libmicrohttpd's thread) drains the
 * buffer and suspends again when it is empty. Lock order: the module's mu,
 * then a stream's mu. A stream leaves the list in its free callback, under
 * the module's mu, so the feed thread never touches a freed stream.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/cache.h"
#include "base/hub.h"
#include "data.h"
#include "http/rules.h"
#include "internal.h"
#include "kb_keys.h"
#include "kb_log.h"
#include "kb_util.h"
#include "store/internal.h"
#include "store/store.h"

#define POLL_MS 100
#define WORKERS_MS 500
#define GIVE_UP_S 15.0
#define KEEPALIVE_S 15.0
#define BLOCK_SIZE 4096
/* What a stream may hold unread: a client that stops reading has its
 * events dropped, not buffered without end. */
#define STREAM_BUF_MAX (64u << 10)

struct kb__web_stream {
	struct kb__web_stream *next, *prev; /* under the module's mu */
	struct kb_gw_web *w;
	struct MHD_Connection *conn;
	char lb[128];       /* "" follows every board */
	char addr[64];      /* the client's, for KB_WEB_STREAMS_PER_IP */
	double born;        /* kb_mono_s(), for KB_WEB_STREAM_MAX_S */
	pthread_mutex_t mu; /* below */
	int suspended, finished;
	struct kb_buf out;
	size_t off;
};

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* A hub listener (runs on the events thread): queues a Result seen on
 * Kafka. Never blocks. */
static void on_hub(const struct kb_gw_hub_msg *m, void *ctx)
{
	struct kb_gw_web *w = ctx;
	const char *lb = m->board, *gpu = m->gpu, *user = m->user;
	uint64_t id = m->id;

	if (m->type != KB_GW_EV_RESULT || m->synthetic || !lb || !*lb || !gpu ||
	    !*gpu || id == 0)
		return;
	pthread_mutex_lock(&w->mu);
	if (w->npending == KB_WEB_PENDING_MAX) {
		memmove(w->pending, w->pending + 1,
			(KB_WEB_PENDING_MAX - 1) * sizeof(w->pending[0]));
		w->npending--;
	}
	struct kb__web_pending *p = &w->pending[w->npending++];
	snprintf(p->lb, sizeof(p->lb), "%s", lb);
	snprintf(p->gpu, sizeof(p->gpu), "%s", gpu);
	snprintf(p->user, sizeof(p->user), "%s", user ? user : "");
	p->id = id;
	p->since = kb_mono_s();
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

size_t kb_gw_web_streams(struct kb_gw *g)
{
	return g->web ? atomic_load(&((struct kb_gw_web *)g->web)->nstreams)
		      : 0;
}

/* Appends text to st and wakes its connection. Called with w->mu held. */
static void stream_say(struct kb__web_stream *st, const char *text, size_t len)
{
	pthread_mutex_lock(&st->mu);
	if (!st->finished && st->out.len - st->off + len <= STREAM_BUF_MAX) {
		kb_buf_append(&st->out, text, len);
		if (st->suspended) {
			st->suspended = 0;
			MHD_resume_connection(st->conn);
		}
	}
	pthread_mutex_unlock(&st->mu);
}

/* The pages and rankings p may change are dropped, then the streams that
 * follow p's board hear of it. */
static void release(struct kb_gw_web *w, const struct kb__web_pending *p)
{
	char key[320], ev[512];
	unsigned gen;
	int n;

	const struct kb_gw_lb *lb = kb_gw_lb_find(w->g, p->lb);

	snprintf(key, sizeof(key), "b|%s|", p->lb);
	kb_gw_cache_invalidate(w->pages, key);
	kb_gw_cache_invalidate(w->pages, "i|");
	if (p->user[0]) {
		snprintf(key, sizeof(key), "u|%s|", p->user);
		kb_gw_cache_invalidate(w->pages, key);
	}
	/* The API's rankings were dropped when the Result arrived, possibly
	 * before the fold: drop them again now that it is visible. */
	snprintf(key, sizeof(key), "%s|%s|", p->lb, p->gpu);
	if (w->g->cache)
		kb_gw_cache_invalidate(w->g->cache, key);
	gen = atomic_fetch_add(&w->gen, 1) + 1;
	/* The feed is anonymous: a board that is not public (closed, or
	 * gone) is never named on it, to any stream. */
	if (!lb || atomic_load(&lb->closed) || atomic_load(&lb->deleted))
		return;
	n = snprintf(ev, sizeof(ev),
		     "event: board\ndata: {\"lb\":\"%s\",\"gpu\":\"%s\","
		     "\"submission_id\":%" PRIu64 ",\"gen\":%u}\n\n",
		     p->lb, p->gpu, p->id, gen);
	if (n <= 0 || (size_t)n >= sizeof(ev))
		return;
	pthread_mutex_lock(&w->mu);
	for (struct kb__web_stream *st = w->streams; st; st = st->next)
		if (!st->lb[0] || strcmp(st->lb, p->lb) == 0)
			stream_say(st, ev, (size_t)n);
	pthread_mutex_unlock(&w->mu);
}

/* Which queued Results are folded (or given up on): checks them in one
 * pipeline and releases those, keeping the rest queued. */
static void check_pending(struct kb_gw_web *w)
{
	struct kb__web_pending batch[KB_WEB_PENDING_MAX];
	redisReply *r[KB_WEB_PENDING_MAX];
	char err[256];
	size_t n, keep = 0;
	int ok;

	pthread_mutex_lock(&w->mu);
	n = w->npending;
	memcpy(batch, w->pending, n * sizeof(batch[0]));
	w->npending = 0;
	pthread_mutex_unlock(&w->mu);
	if (n == 0)
		return;
	redisContext *c = kb_gw_redis(w->g, err, sizeof(err));
	for (size_t i = 0; c && i < n; i++)
		redisAppendCommand(c, "EXISTS " KB_KEY_RESULT_N, batch[i].id,
				   batch[i].gpu);
	ok = c && kb__gw_read_replies(c, r, (int)n) == 0;
	double now = kb_mono_s();
	for (size_t i = 0; i < n; i++) {
		int folded = ok && r[i]->type == REDIS_REPLY_INTEGER &&
			     r[i]->integer == 1;
		if (folded || now - batch[i].since > GIVE_UP_S)
			release(w, &batch[i]);
		else
			batch[keep++] = batch[i];
	}
	if (ok)
		kb__gw_free_replies(r, (int)n);
	if (keep == 0)
		return;
	/* Put the rest back in front of what arrived meanwhile. */
	pthread_mutex_lock(&w->mu);
	size_t room = KB_WEB_PENDING_MAX - keep;
	size_t later = w->npending < room ? w->npending : room;
	memmove(w->pending + keep, w->pending + (w->npending - later),
		later * sizeof(w->pending[0]));
	memcpy(w->pending, batch, keep * sizeof(batch[0]));
	w->npending = keep + later;
	pthread_mutex_unlock(&w->mu);
}

/* Notes gpu's worker count; returns 1 when it changed (a gpu seen for the
 * first time counts as changed: a page may show it already). */
static int workers_moved(struct kb_gw_web *w, const char *gpu, int workers)
{
	for (size_t i = 0; i < w->nseen; i++) {
		if (strcmp(w->seen[i].gpu, gpu) != 0)
			continue;
		if (w->seen[i].workers == workers)
			return 0;
		w->seen[i].workers = workers;
		return 1;
	}
	if (w->nseen == KB_WEB_GPUS_MAX)
		return 0;
	snprintf(w->seen[w->nseen].gpu, sizeof(w->seen[0].gpu), "%s", gpu);
	w->seen[w->nseen++].workers = workers;
	return 1;
}

/* 1 if a public board offers one of gpus[0..n). */
static int offers_one(const struct kb_gw_lb *lb, char (*gpus)[64], size_t n)
{
	if (!lb || atomic_load(&lb->closed) || atomic_load(&lb->deleted))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (kb_gw_lb_has_gpu(lb, gpus[i]))
			return 1;
	return 0;
}

/* The pages that say whether a gpu has workers follow their count (see
 * the top of this file). */
static void check_workers(struct kb_gw_web *w)
{
	char moved[KB_WEB_GPUS_MAX][64], key[320], ev[64];
	size_t nmoved = 0, nb = kb_gw_lb_count(w->g);
	unsigned gen;

	for (size_t i = 0; i < nb; i++) {
		const struct kb_gw_lb *lb = kb_gw_lb_at(w->g, i);
		if (!lb || atomic_load(&lb->closed) ||
		    atomic_load(&lb->deleted))
			continue;
		for (size_t k = 0;
		     k < lb->task->ngpus && nmoved < KB_WEB_GPUS_MAX; k++) {
			const char *gpu = lb->task->gpus[k];
			if (workers_moved(w, gpu, kb_web_workers(w->g, gpu)))
				snprintf(moved[nmoved++], sizeof(moved[0]),
					 "%s", gpu);
		}
	}
	if (nmoved == 0)
		return;
	/* The boards that show one of them, named before taking the
	 * module's mutex (a stream follows a board by its name). */
	const char **shown = calloc(nb ? nb : 1, sizeof(*shown));
	size_t nshown = 0;
	kb_gw_cache_invalidate(w->pages, "i|");
	for (size_t i = 0; i < nb; i++) {
		const struct kb_gw_lb *lb = kb_gw_lb_at(w->g, i);
		if (!offers_one(lb, moved, nmoved))
			continue;
		snprintf(key, sizeof(key), "b|%s|", lb->task->name);
		kb_gw_cache_invalidate(w->pages, key);
		if (shown)
			shown[nshown++] = lb->task->name;
	}
	gen = atomic_fetch_add(&w->gen, 1) + 1;
	int n = snprintf(ev, sizeof(ev),
			 "event: workers\ndata: {\"gen\":%u}\n\n", gen);
	pthread_mutex_lock(&w->mu);
	for (struct kb__web_stream *st = w->streams; st; st = st->next) {
		int says = !st->lb[0];
		for (size_t i = 0; i < nshown && !says; i++)
			says = strcmp(st->lb, shown[i]) == 0;
		if (says)
			stream_say(st, ev, (size_t)n);
	}
	pthread_mutex_unlock(&w->mu);
	free(shown);
}

/* A keep-alive for every stream; one past KB_WEB_STREAM_MAX_S ends
 * instead (its browser reconnects after retry). */
static void keepalive(struct kb_gw_web *w)
{
	static const char ka[] = ": keep-alive\n\n";
	double now = kb_mono_s();

	pthread_mutex_lock(&w->mu);
	for (struct kb__web_stream *st = w->streams; st; st = st->next) {
		if (now - st->born < (double)w->g->cfg.web_stream_max_s) {
			stream_say(st, ka, sizeof(ka) - 1);
			continue;
		}
		pthread_mutex_lock(&st->mu);
		st->finished = 1;
		if (st->suspended) {
			st->suspended = 0;
			MHD_resume_connection(st->conn);
		}
		pthread_mutex_unlock(&st->mu);
	}
	pthread_mutex_unlock(&w->mu);
}

static void *feed_main(void *arg)
{
	struct kb_gw_web *w = arg;
	/* Often enough that a stream ends within a few seconds of its
	 * lifetime when that is shorter than the keep-alive period. */
	double period = KEEPALIVE_S < w->g->cfg.web_stream_max_s / 2.0
				? KEEPALIVE_S
				: w->g->cfg.web_stream_max_s / 2.0;
	double next_ka = kb_mono_s() + period, next_workers = 0;

	while (!atomic_load(&w->stop)) {
		check_pending(w);
		if (kb_mono_s() >= next_workers) {
			check_workers(w);
			next_workers = kb_mono_s() + WORKERS_MS / 1000.0;
		}
		if (kb_mono_s() >= next_ka) {
			keepalive(w);
			next_ka = kb_mono_s() + period;
		}
		sleep_ms(POLL_MS);
	}
	kb_gw_redis_drop();
	return NULL;
}

int kb__web_feed_start(struct kb_gw_web *w, char *errstr, size_t errstr_size)
{
	if (pthread_create(&w->th, NULL, feed_main, w) != 0) {
		snprintf(errstr, errstr_size,
			 "cannot start the web feed thread");
		return -1;
	}
	w->started = 1;
	if (w->g->hub) {
		if (kb_gw_hub_listen(w->g->hub, on_hub, w) < 0) {
			snprintf(errstr, errstr_size,
				 "the hub has no room for the "
				 "web feed's listener");
			return -1;
		}
		w->listening = 1;
	}
	return 0;
}

void kb__web_feed_stop(struct kb_gw_web *w)
{
	if (w->listening)
		kb_gw_hub_unlisten(w->g->hub, on_hub, w);
	w->listening = 0;
	if (!w->started)
		return;
	atomic_store(&w->stop, 1);
	pthread_join(w->th, NULL);
	w->started = 0;
}

void kb_gw_web_close_streams(struct kb_gw *g)
{
	struct kb_gw_web *w = g->web;

	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	w->closed = 1;
	for (struct kb__web_stream *st = w->streams; st; st = st->next) {
		pthread_mutex_lock(&st->mu);
		st->finished = 1;
		if (st->suspended) {
			st->suspended = 0;
			MHD_resume_connection(st->conn);
		}
		pthread_mutex_unlock(&st->mu);
	}
	pthread_mutex_unlock(&w->mu);
}

/* ---- GET /web/events ---- */

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct kb__web_stream *st = cls;
	ssize_t n;

	(void)pos;
	pthread_mutex_lock(&st->mu);
	if (st->off < st->out.len) {
		size_t k = st->out.len - st->off < max ? st->out.len - st->off
						       : max;
		memcpy(buf, st->out.data + st->off, k);
		st->off += k;
		if (st->off == st->out.len)
			st->off = st->out.len = 0;
		n = (ssize_t)k;
	} else if (st->finished) {
		n = MHD_CONTENT_READER_END_OF_STREAM;
	} else {
		/* Nothing to say: give the thread back until woken. */
		st->suspended = 1;
		MHD_suspend_connection(st->conn);
		n = 0;
	}
	pthread_mutex_unlock(&st->mu);
	return n;
}

static void stream_free(void *cls)
{
	struct kb__web_stream *st = cls;
	struct kb_gw_web *w = st->w;

	pthread_mutex_lock(&w->mu);
	if (st->prev)
		st->prev->next = st->next;
	else
		w->streams = st->next;
	if (st->next)
		st->next->prev = st->prev;
	atomic_fetch_sub(&w->nstreams, 1);
	pthread_mutex_unlock(&w->mu);
	pthread_mutex_destroy(&st->mu);
	kb_buf_free(&st->out);
	free(st);
}

/* The streams this gateway allows in all: KB_WEB_STREAMS_MAX, but never
 * more than half of the connections, so that /health and the API always
 * find some. */
static long streams_cap(const struct kb_gw *g)
{
	long half = g->cfg.http_max_connections / 2;

	return g->cfg.web_streams_max < half ? g->cfg.web_streams_max : half;
}

void kb__web_events_begin(struct kb_gw_req *r)
{
	struct kb_gw_web *w = r->g->web;
	const char *lb = kb_gw_query(r, "lb");
	const struct kb_gw_lb *board = lb ? kb_gw_lb_find(r->g, lb) : NULL;
	struct kb__web_stream *st;

	if (!w) {
		kb_gw_reply_error(r, 404, "the web pages are off (KB_WEB=0)");
		return;
	}
	/* Anonymous: a closed board is as unknown here as on its page. */
	if (lb && (!board || atomic_load(&board->closed))) {
		kb_gw_reply_error(r, 404, "unknown leaderboard");
		return;
	}
	/* Events carry the board's own name (names match case-insensitively). */
	lb = board ? board->task->name : NULL;
	st = calloc(1, sizeof(*st));
	if (!st) {
		kb_gw_reply_error(r, 500, "out of memory");
		return;
	}
	st->w = w;
	st->conn = r->conn;
	snprintf(st->lb, sizeof(st->lb), "%s", lb ? lb : "");
	kb_gw_client_addr(r, st->addr, sizeof(st->addr));
	st->born = kb_mono_s();
	pthread_mutex_init(&st->mu, NULL);
	/* retry: reconnect quickly; hello: the generation now, to compare
	 * with the page's. */
	kb_buf_printf(&st->out,
		      "retry: 3000\nevent: hello\ndata: {\"gen\":%u}\n\n",
		      atomic_load(&w->gen));
	pthread_mutex_lock(&w->mu);
	long mine = 0, cap = streams_cap(r->g);
	for (struct kb__web_stream *o = w->streams; o; o = o->next)
		mine += strcmp(o->addr, st->addr) == 0;
	if (w->closed || atomic_load(&w->nstreams) >= (size_t)cap ||
	    mine >= r->g->cfg.web_streams_per_ip) {
		int closed = w->closed,
		    full = !closed && mine < r->g->cfg.web_streams_per_ip;
		pthread_mutex_unlock(&w->mu);
		pthread_mutex_destroy(&st->mu);
		kb_buf_free(&st->out);
		free(st);
		if (closed)
			kb_gw_reply_error(r, 503, "shutting down");
		else if (full)
			kb_gw_reply_error(
				r, 503,
				"too many live streams; try again later");
		else
			kb_gw_reply_error(
				r, 429,
				"too many live streams from this address");
		return;
	}
	st->next = w->streams;
	if (w->streams)
		w->streams->prev = st;
	w->streams = st;
	atomic_fetch_add(&w->nstreams, 1);
	pthread_mutex_unlock(&w->mu);

	struct MHD_Response *resp = MHD_create_response_from_callback(
		MHD_SIZE_UNKNOWN, BLOCK_SIZE, reader, st, stream_free);
	if (!resp) {
		stream_free(st);
		kb_gw_reply_error(r, 500, "out of memory");
		return;
	}
	kb__web_headers(resp, "text/event-stream");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
				"no-cache");
	MHD_add_response_header(resp, "X-Accel-Buffering", "no");
	/* Keep-alives move bytes every KEEPALIVE_S: a stream whose client
	 * reads nothing for longer than the idle limit is closed by
	 * libmicrohttpd (the connection timeout counts from the last bytes
	 * moved). */
	MHD_set_connection_option(r->conn, MHD_CONNECTION_OPTION_TIMEOUT,
				  (unsigned)r->g->cfg.web_stream_idle_s);
	kb_gw_reply_response(r, 200, resp);
	MHD_destroy_response(resp);
}
