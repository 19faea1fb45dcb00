/* kb_gw_cache: see cache.h. */
#include "cache.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kb_util.h"

#define KEY_MAX 320

struct slot {
	char key[KEY_MAX];
	void *value;
	double expires; /* kb_mono_s() */
};

struct kb_gw_cache {
	pthread_rwlock_t lock;
	struct slot *slots;
	size_t n;
	double ttl_s;
	void (*destroy)(void *value);
};

struct kb_gw_cache *kb_gw_cache_new(size_t slots, long ttl_ms,
				    void (*destroy)(void *value))
{
	struct kb_gw_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->n = slots ? slots : 1;
	c->slots = calloc(c->n, sizeof(*c->slots));
	if (!c->slots) {
		free(c);
		return NULL;
	}
	c->ttl_s = ttl_ms > 0 ? (double)ttl_ms / 1000.0 : 0;
	c->destroy = destroy;
	pthread_rwlock_init(&c->lock, NULL);
	return c;
}

static void drop(struct kb_gw_cache *c, struct slot *s)
{
	if (s->value && c->destroy)
		c->destroy(s->value);
	s->value = NULL;
	s->key[0] = '\0';
}

void kb_gw_cache_destroy(struct kb_gw_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		drop(c, &c->slots[i]);
	pthread_rwlock_destroy(&c->lock);
	free(c->slots);
	free(c);
}

/* FNV-1a. */
static size_t slot_of(const struct kb_gw_cache *c, const char *key)
{
	uint64_t h = 1469598103934665603ull;

	for (const unsigned char *p = (const unsigned char *)key; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	return (size_t)(h % c->n);
}

int kb_gw_cache_use(struct kb_gw_cache *c, const char *key,
		    int (*use)(void *value, void *ctx), void *ctx)
{
	int rc = -1;

	if (c->ttl_s <= 0 || strlen(key) >= KEY_MAX)
		return -1;
	pthread_rwlock_rdlock(&c->lock);
	struct slot *s = &c->slots[slot_of(c, key)];
	if (s->value && strcmp(s->key, key) == 0 && kb_mono_s() < s->expires)
		rc = use(s->value, ctx);
	pthread_rwlock_unlock(&c->lock);
	return rc;
}

void kb_gw_cache_put(struct kb_gw_cache *c, const char *key, void *value)
{
	size_t len = strlen(key);

	if (c->ttl_s <= 0 || len >= KEY_MAX) {
		if (c->destroy)
			c->destroy(value);
		return;
	}
	pthread_rwlock_wrlock(&c->lock);
	struct slot *s = &c->slots[slot_of(c, key)];
	drop(c, s);
	memcpy(s->key, key, len + 1);
	s->value = value;
	s->expires = kb_mono_s() + c->ttl_s;
	pthread_rwlock_unlock(&c->lock);
}

void kb_gw_cache_invalidate(struct kb_gw_cache *c, const char *prefix)
{
	size_t len = strlen(prefix);

	pthread_rwlock_wrlock(&c->lock);
	for (size_t i = 0; i < c->n; i++)
		if (c->slots[i].value &&
		    strncmp(c->slots[i].key, prefix, len) == 0)
			drop(c, &c->slots[i]);
	pthread_rwlock_unlock(&c->lock);
}
