/* kb_gw_cache: a small, short-lived cache of rendered responses (the
 * public rankings), so that a popular board costs no Redis round trip
 * and no JSON rendering per request.
 *
 * Entries live ttl_ms at most and are dropped at once when the events
 * thread sees a Result for their board and gpu, or when this gateway
 * deletes a submission there (kb_gw_cache_invalidate). A direct-mapped
 * table of `slots` entries: a colliding key simply replaces the older one.
 * Values are opaque (libmicrohttpd responses in practice); the cache calls
 * destroy() on the ones it drops.
 *
 * Thread-safe: lookups share a read lock (use() runs under it and must be
 * quick); puts and invalidations take the write lock.
 */
#ifndef KB_GW_CACHE_H
#define KB_GW_CACHE_H

#include <stddef.h>

struct kb_gw_cache;

/* ttl_ms <= 0 disables caching (every lookup misses, puts are dropped). */
struct kb_gw_cache *kb_gw_cache_new(size_t slots, long ttl_ms,
				    void (*destroy)(void *value));
void kb_gw_cache_destroy(struct kb_gw_cache *c);

/* If key is cached and fresh, calls use(value, ctx) under the read lock
 * and returns use()'s result; returns -1 on a miss. */
int kb_gw_cache_use(struct kb_gw_cache *c, const char *key,
		    int (*use)(void *value, void *ctx), void *ctx);

/* Stores value under key (the cache owns it from now on; on failure it is
 * destroyed at once). */
void kb_gw_cache_put(struct kb_gw_cache *c, const char *key, void *value);

/* Drops every entry whose key starts with prefix. */
void kb_gw_cache_invalidate(struct kb_gw_cache *c, const char *prefix);

#endif
