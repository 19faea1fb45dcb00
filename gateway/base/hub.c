/* kb_gw_hub: see hub.h. */
#include "hub.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kb_report.h"
#include "kb_util.h"

#define STRIPES 64

struct blob {
	atomic_int refs;
	size_t len;
	uint8_t data[];
};

struct item {
	enum kb_gw_event_type type;
	char stage[24];
	char message[160];
	char worker[96];
	long position;
	int64_t elapsed_ms;
	int error_status;
	struct blob *payload;
};

struct kb_gw_watch {
	kb_gw_hub *hub;
	uint64_t id;
	struct kb_gw_watch *next, *prev; /* in the stripe; under its lock */
	int64_t tick_ms, next_tick;      /* under the stripe's lock */
	kb_gw_wake_fn wake;
	void *ctx;

	pthread_mutex_t mu; /* everything below */
	pthread_cond_t cv;
	struct item *q; /* ring of STATUS events */
	size_t head, len, cap;
	struct item final;
	int has_final, final_taken;
	char last_stage[24];
	long last_position;
	int64_t last_event_ms;
};

struct stripe {
	pthread_mutex_t mu;
	struct kb_gw_watch *head;
};

struct listener {
	kb_gw_hub_listen_fn fn;
	void *ctx;
};

struct kb_gw_hub {
	struct stripe s[STRIPES];
	size_t queue_max;
	atomic_int closed;
	atomic_size_t count;
	pthread_rwlock_t listen_mu; /* the listeners */
	struct listener listeners[KB_GW_HUB_LISTENERS_MAX];
	size_t nlisteners;
};

static void blob_put(struct blob *b)
{
	if (b && atomic_fetch_sub(&b->refs, 1) == 1)
		free(b);
}

static void item_clear(struct item *it)
{
	blob_put(it->payload);
	memset(it, 0, sizeof(*it));
}

kb_gw_hub *kb_gw_hub_new(size_t queue_max)
{
	kb_gw_hub *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	for (int i = 0; i < STRIPES; i++)
		pthread_mutex_init(&h->s[i].mu, NULL);
	pthread_rwlock_init(&h->listen_mu, NULL);
	h->queue_max = queue_max ? queue_max : 1;
	atomic_init(&h->closed, 0);
	atomic_init(&h->count, 0);
	return h;
}

void kb_gw_hub_destroy(kb_gw_hub *h)
{
	if (!h)
		return;
	for (int i = 0; i < STRIPES; i++)
		pthread_mutex_destroy(&h->s[i].mu);
	pthread_rwlock_destroy(&h->listen_mu);
	free(h);
}

static struct stripe *stripe_of(kb_gw_hub *h, uint64_t id)
{
	return &h->s[(id * 0x9e3779b97f4a7c15ull) >> 58];
}

struct kb_gw_watch *kb_gw_hub_watch(kb_gw_hub *h, uint64_t id, int tick_ms,
				    kb_gw_wake_fn wake, void *ctx)
{
	struct kb_gw_watch *w;
	pthread_condattr_t ca;

	if (atomic_load(&h->closed))
		return NULL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->q = calloc(h->queue_max, sizeof(*w->q));
	if (!w->q) {
		free(w);
		return NULL;
	}
	w->cap = h->queue_max;
	w->hub = h;
	w->id = id;
	w->wake = wake;
	w->ctx = ctx;
	w->last_position = -2;
	w->last_event_ms = kb_now_ms();
	w->tick_ms = tick_ms > 0 ? tick_ms : 0;
	w->next_tick = w->last_event_ms + w->tick_ms;
	pthread_mutex_init(&w->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cv, &ca);
	pthread_condattr_destroy(&ca);

	struct stripe *s = stripe_of(h, id);
	pthread_mutex_lock(&s->mu);
	w->next = s->head;
	if (s->head)
		s->head->prev = w;
	s->head = w;
	pthread_mutex_unlock(&s->mu);
	atomic_fetch_add(&h->count, 1);
	return w;
}

static void copy_str(char *dst, size_t size, const char *src)
{
	size_t n = 0;

	if (src) {
		n = strlen(src);
		if (n >= size) {
			n = size - 1;
			/* Do not cut a UTF-8 sequence in half. */
			while (n > 0 && ((unsigned char)src[n] & 0xc0) == 0x80)
				n--;
		}
		memcpy(dst, src, n);
	}
	dst[n] = '\0';
}

static void fill_item(struct item *it, const struct kb_gw_hub_msg *m,
		      struct blob *b)
{
	memset(it, 0, sizeof(*it));
	it->type = m->type;
	copy_str(it->stage, sizeof(it->stage), m->stage);
	copy_str(it->message, sizeof(it->message), m->message);
	copy_str(it->worker, sizeof(it->worker), m->worker);
	it->position = m->position;
	it->elapsed_ms = m->elapsed_ms;
	it->error_status = m->error_status;
	if (b) {
		atomic_fetch_add(&b->refs, 1);
		it->payload = b;
	}
}

/* Queues m for w (w->mu held). Returns 1 if queued. */
static int push_locked(struct kb_gw_watch *w, const struct kb_gw_hub_msg *m,
		       struct blob *b)
{
	if (w->has_final)
		return 0;
	if (m->type != KB_GW_EV_STATUS) {
		fill_item(&w->final, m, b);
		w->has_final = 1;
		w->last_event_ms = kb_now_ms();
		return 1;
	}
	if (m->synthetic &&
	    strcmp(w->last_stage, m->stage ? m->stage : "") == 0 &&
	    w->last_position == m->position)
		return 0;
	if (w->len == w->cap) { /* drop the oldest STATUS */
		item_clear(&w->q[w->head]);
		w->head = (w->head + 1) % w->cap;
		w->len--;
	}
	fill_item(&w->q[(w->head + w->len) % w->cap], m, NULL);
	w->len++;
	copy_str(w->last_stage, sizeof(w->last_stage), m->stage);
	w->last_position = m->position;
	w->last_event_ms = kb_now_ms();
	return 1;
}

static struct blob *make_blob(const struct kb_gw_hub_msg *m)
{
	struct blob *b;

	if (m->type != KB_GW_EV_RESULT || !m->payload)
		return NULL;
	b = malloc(sizeof(*b) + m->payload_len);
	if (!b)
		return NULL;
	atomic_init(&b->refs, 1);
	b->len = m->payload_len;
	memcpy(b->data, m->payload, m->payload_len);
	return b;
}

static int push(struct kb_gw_watch *w, const struct kb_gw_hub_msg *m,
		struct blob *b)
{
	int queued;

	pthread_mutex_lock(&w->mu);
	queued = push_locked(w, m, b);
	if (queued)
		pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	if (queued && w->wake)
		w->wake(w->ctx);
	return queued;
}

int kb_gw_hub_push(struct kb_gw_watch *w, const struct kb_gw_hub_msg *m)
{
	struct blob *b = make_blob(m);
	int rc;

	if (m->type == KB_GW_EV_RESULT && !b) {
		/* Out of memory: still end the watch, as an error. */
		struct kb_gw_hub_msg e = *m;
		e.type = KB_GW_EV_ERROR;
		e.error_status = 500;
		e.message = "out of memory";
		return push(w, &e, NULL);
	}
	/* Hold the stripe so that the wake cannot race a close. */
	struct stripe *s = stripe_of(w->hub, w->id);
	pthread_mutex_lock(&s->mu);
	rc = push(w, m, b);
	pthread_mutex_unlock(&s->mu);
	blob_put(b);
	return rc;
}

size_t kb_gw_hub_publish(kb_gw_hub *h, const struct kb_gw_hub_msg *m)
{
	struct stripe *s = stripe_of(h, m->id);
	struct blob *b = NULL;
	size_t n = 0;

	pthread_mutex_lock(&s->mu);
	for (struct kb_gw_watch *w = s->head; w; w = w->next) {
		if (w->id != m->id)
			continue;
		if (!b && m->type == KB_GW_EV_RESULT) {
			b = make_blob(m);
			if (!b)
				break;
		}
		n += (size_t)push(w, m, b);
	}
	pthread_mutex_unlock(&s->mu);
	blob_put(b);
	pthread_rwlock_rdlock(&h->listen_mu);
	for (size_t i = 0; i < h->nlisteners; i++)
		h->listeners[i].fn(m, h->listeners[i].ctx);
	pthread_rwlock_unlock(&h->listen_mu);
	return n;
}

int kb_gw_hub_listen(kb_gw_hub *h, kb_gw_hub_listen_fn fn, void *ctx)
{
	int rc = -ENOSPC;

	pthread_rwlock_wrlock(&h->listen_mu);
	if (h->nlisteners < KB_GW_HUB_LISTENERS_MAX) {
		h->listeners[h->nlisteners++] = (struct listener){fn, ctx};
		rc = 0;
	}
	pthread_rwlock_unlock(&h->listen_mu);
	return rc;
}

void kb_gw_hub_unlisten(kb_gw_hub *h, kb_gw_hub_listen_fn fn, void *ctx)
{
	pthread_rwlock_wrlock(&h->listen_mu);
	for (size_t i = 0; i < h->nlisteners; i++) {
		if (h->listeners[i].fn != fn || h->listeners[i].ctx != ctx)
			continue;
		h->listeners[i] = h->listeners[--h->nlisteners];
		break;
	}
	pthread_rwlock_unlock(&h->listen_mu);
}

void kb_gw_hub_tick(kb_gw_hub *h, int64_t now_ms)
{
	for (int i = 0; i < STRIPES; i++) {
		struct stripe *s = &h->s[i];
		pthread_mutex_lock(&s->mu);
		for (struct kb_gw_watch *w = s->head; w; w = w->next) {
			if (w->tick_ms <= 0 || now_ms < w->next_tick)
				continue;
			w->next_tick = now_ms + w->tick_ms;
			if (w->wake)
				w->wake(w->ctx);
		}
		pthread_mutex_unlock(&s->mu);
	}
}

size_t kb_gw_hub_idle(kb_gw_hub *h, int64_t now_ms, int64_t idle_ms,
		      uint64_t *ids, size_t max)
{
	size_t n = 0;

	for (int i = 0; i < STRIPES && n < max; i++) {
		struct stripe *s = &h->s[i];
		pthread_mutex_lock(&s->mu);
		for (struct kb_gw_watch *w = s->head; w && n < max;
		     w = w->next) {
			pthread_mutex_lock(&w->mu);
			int idle = !w->has_final &&
				   now_ms - w->last_event_ms >= idle_ms;
			if (idle)
				w->last_event_ms =
					now_ms; /* poll again later */
			pthread_mutex_unlock(&w->mu);
			if (!idle)
				continue;
			int dup = 0;
			for (size_t k = 0; k < n; k++)
				dup |= ids[k] == w->id;
			if (!dup)
				ids[n++] = w->id;
		}
		pthread_mutex_unlock(&s->mu);
	}
	return n;
}

void kb_gw_hub_close_all(kb_gw_hub *h, int status, const char *message)
{
	struct kb_gw_hub_msg m = {
		.type = KB_GW_EV_ERROR,
		.error_status = status,
		.message = message,
		.position = -1,
		.elapsed_ms = -1,
	};

	atomic_store(&h->closed, 1);
	for (int i = 0; i < STRIPES; i++) {
		struct stripe *s = &h->s[i];
		pthread_mutex_lock(&s->mu);
		for (struct kb_gw_watch *w = s->head; w; w = w->next) {
			m.id = w->id;
			push(w, &m, NULL);
		}
		pthread_mutex_unlock(&s->mu);
	}
}

size_t kb_gw_hub_count(kb_gw_hub *h)
{
	return atomic_load(&h->count);
}

/* ---- the watcher's side ---- */

void kb_gw_event_clear(struct kb_gw_event *ev)
{
	if (!ev)
		return;
	if (ev->result)
		kb__result__free_unpacked(ev->result, NULL);
	memset(ev, 0, sizeof(*ev));
}

static void to_event(const struct kb_gw_watch *w, const struct item *it,
		     struct kb_gw_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->type = it->type;
	ev->id = w->id;
	memcpy(ev->stage, it->stage, sizeof(ev->stage));
	memcpy(ev->message, it->message, sizeof(ev->message));
	memcpy(ev->worker, it->worker, sizeof(ev->worker));
	ev->position = it->position;
	ev->elapsed_ms = it->elapsed_ms;
	ev->error_status = it->error_status;
	if (it->type != KB_GW_EV_RESULT)
		return;
	if (it->payload)
		ev->result = kb__result__unpack(NULL, it->payload->len,
						it->payload->data);
	if (!ev->result) {
		ev->type = KB_GW_EV_ERROR;
		ev->error_status = 502;
		snprintf(ev->message, sizeof(ev->message),
			 "the result could not be decoded");
		return;
	}
	/* Nothing a user can see may carry the secret run's output. */
	kb_report_redact(ev->result);
}

/* Takes an event (w->mu held). */
static int take_locked(struct kb_gw_watch *w, struct kb_gw_event *ev)
{
	if (w->len) {
		struct item *it = &w->q[w->head];
		to_event(w, it, ev);
		item_clear(it);
		w->head = (w->head + 1) % w->cap;
		w->len--;
		return 1;
	}
	if (w->has_final && !w->final_taken) {
		to_event(w, &w->final, ev);
		item_clear(&w->final);
		w->final_taken = 1;
		return 1;
	}
	return w->final_taken ? -1 : 0;
}

int kb_gw_watch_next(struct kb_gw_watch *w, struct kb_gw_event *ev)
{
	int rc;

	pthread_mutex_lock(&w->mu);
	rc = take_locked(w, ev);
	pthread_mutex_unlock(&w->mu);
	return rc;
}

int kb_gw_watch_wait(struct kb_gw_watch *w, int timeout_ms,
		     struct kb_gw_event *ev)
{
	struct timespec until;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&w->mu);
	while ((rc = take_locked(w, ev)) == 0)
		if (pthread_cond_timedwait(&w->cv, &w->mu, &until) ==
		    ETIMEDOUT) {
			rc = take_locked(w, ev);
			break;
		}
	pthread_mutex_unlock(&w->mu);
	return rc;
}

void kb_gw_watch_close(struct kb_gw_watch *w)
{
	struct stripe *s;

	if (!w)
		return;
	s = stripe_of(w->hub, w->id);
	pthread_mutex_lock(&s->mu);
	if (w->prev)
		w->prev->next = w->next;
	else
		s->head = w->next;
	if (w->next)
		w->next->prev = w->prev;
	pthread_mutex_unlock(&s->mu);
	atomic_fetch_sub(&w->hub->count, 1);
	for (size_t i = 0; i < w->len; i++)
		item_clear(&w->q[(w->head + i) % w->cap]);
	item_clear(&w->final);
	free(w->q);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	free(w);
}
