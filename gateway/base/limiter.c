/* kb_gw_limiter: see limiter.h. */
#include "limiter.h"

#include <errno.h>
#include <pthread.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#define KEY_MAX 128

struct entry {
	struct entry *next; /* in its bucket, or in the free list */
	uint64_t h;
	char key[KEY_MAX];
	int64_t window_end; /* the rate's window ends here (0: none) */
	long count;         /* events in that window */
	long held;          /* slots taken */
};

struct kb_gw_limiter {
	pthread_mutex_t mu;
	unsigned char hkey[crypto_shorthash_KEYBYTES];
	struct entry **buckets;
	size_t nbuckets; /* a power of two */
	struct entry *pool, *free;
	size_t cap;
};

struct kb_gw_limiter *kb_gw_limiter_new(size_t max_keys)
{
	struct kb_gw_limiter *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->cap = max_keys ? max_keys : 1;
	for (l->nbuckets = 1; l->nbuckets < l->cap; l->nbuckets <<= 1)
		;
	l->buckets = calloc(l->nbuckets, sizeof(*l->buckets));
	l->pool = calloc(l->cap, sizeof(*l->pool));
	if (!l->buckets || !l->pool) {
		kb_gw_limiter_destroy(l);
		return NULL;
	}
	for (size_t i = 0; i < l->cap; i++) {
		l->pool[i].next = l->free;
		l->free = &l->pool[i];
	}
	crypto_shorthash_keygen(l->hkey);
	pthread_mutex_init(&l->mu, NULL);
	return l;
}

void kb_gw_limiter_destroy(struct kb_gw_limiter *l)
{
	if (!l)
		return;
	if (l->buckets && l->pool)
		pthread_mutex_destroy(&l->mu);
	free(l->buckets);
	free(l->pool);
	free(l);
}

static uint64_t hash(const struct kb_gw_limiter *l, const char *key, size_t len)
{
	unsigned char out[crypto_shorthash_BYTES];
	uint64_t h;

	crypto_shorthash(out, (const unsigned char *)key, len, l->hkey);
	memcpy(&h, out, sizeof(h));
	return h;
}

static struct entry **bucket(struct kb_gw_limiter *l, uint64_t h)
{
	return &l->buckets[h & (l->nbuckets - 1)];
}

/* An entry that limits nothing any more: no slot held, its window over. */
static int idle(const struct entry *e, int64_t now_ms)
{
	return e->held == 0 && now_ms >= e->window_end;
}

static void unlink_entry(struct kb_gw_limiter *l, struct entry *e)
{
	for (struct entry **pp = bucket(l, e->h); *pp; pp = &(*pp)->next)
		if (*pp == e) {
			*pp = e->next;
			break;
		}
	memset(e, 0, sizeof(*e));
	e->next = l->free;
	l->free = e;
}

/* Finds key, or makes it (forgetting idle keys when the table is full).
 * NULL when every place is in use. l->mu held. */
static struct entry *find(struct kb_gw_limiter *l, const char *key,
			  int64_t now_ms, int create)
{
	size_t len = strnlen(key, KEY_MAX - 1);
	uint64_t h = hash(l, key, len);
	struct entry *e;

	for (e = *bucket(l, h); e; e = e->next)
		if (e->h == h && strncmp(e->key, key, len) == 0 &&
		    e->key[len] == '\0')
			return e;
	if (!create)
		return NULL;
	if (!l->free)
		for (size_t i = 0; i < l->cap; i++)
			if (l->pool[i].key[0] && idle(&l->pool[i], now_ms))
				unlink_entry(l, &l->pool[i]);
	e = l->free;
	if (!e)
		return NULL;
	l->free = e->next;
	e->h = h;
	memcpy(e->key, key, len);
	e->key[len] = '\0';
	e->next = *bucket(l, h);
	*bucket(l, h) = e;
	return e;
}

int64_t kb_gw_limiter_hit(struct kb_gw_limiter *l, const char *key, long max,
			  int64_t window_ms, int64_t now_ms)
{
	struct entry *e;
	int64_t wait = 0;

	if (max <= 0)
		return 0;
	pthread_mutex_lock(&l->mu);
	e = find(l, key, now_ms, 1);
	if (!e) {
		wait = -1;
	} else {
		if (now_ms >= e->window_end) {
			e->window_end = now_ms + window_ms;
			e->count = 0;
		}
		if (e->count >= max)
			wait = e->window_end - now_ms > 0
				       ? e->window_end - now_ms
				       : 1;
		else
			e->count++;
	}
	pthread_mutex_unlock(&l->mu);
	return wait;
}

int kb_gw_limiter_take(struct kb_gw_limiter *l, const char *key, long max)
{
	struct entry *e;
	int rc = 0;

	if (max <= 0)
		return 0;
	pthread_mutex_lock(&l->mu);
	/* Without a clock, only keys that never counted a rate and hold no
	 * slot are forgotten to make room. */
	e = find(l, key, 0, 1);
	if (!e)
		rc = -ENOSPC;
	else if (e->held >= max)
		rc = -EBUSY;
	else
		e->held++;
	pthread_mutex_unlock(&l->mu);
	return rc;
}

void kb_gw_limiter_release(struct kb_gw_limiter *l, const char *key)
{
	struct entry *e;

	pthread_mutex_lock(&l->mu);
	e = find(l, key, 0, 0);
	if (e && e->held > 0)
		e->held--;
	pthread_mutex_unlock(&l->mu);
}
