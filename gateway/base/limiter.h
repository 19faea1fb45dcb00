/* kb_gw_limiter: the gateway's own limits per key (a client address, a
 * user id), kept in this process.
 *
 * Two kinds, on one bounded table: a rate (at most max events per window
 * per key, counted in fixed windows) and a number of slots held at once
 * (taken and given back, e.g. one per open stream). The table holds at
 * most max_keys keys; a key whose window has passed and who holds no slot
 * is forgotten when its place is needed. When every place is in use, a new
 * key is refused: the limits then hold for everyone rather than for no
 * one.
 *
 * The decisions take the time as an argument and do no I/O, so tests run
 * them without a server or a clock. Every call is thread-safe (one mutex;
 * the calls are short). Keys are compared whole; only their hash is used
 * to find them, keyed with a random key so that no client can pick keys
 * that collide.
 */
#ifndef KB_GW_LIMITER_H
#define KB_GW_LIMITER_H

#include <stddef.h>
#include <stdint.h>

struct kb_gw_limiter;

/* NULL when out of memory. max_keys >= 1. */
struct kb_gw_limiter *kb_gw_limiter_new(size_t max_keys);
/* NULL is a no-op. */
void kb_gw_limiter_destroy(struct kb_gw_limiter *l);

/* Counts one event of key at now_ms. Returns 0 when it is within max per
 * window_ms (max <= 0: no limit, nothing counted), else the milliseconds
 * until the window ends (>= 1; the event is not counted). -1 when the
 * table is full. */
int64_t kb_gw_limiter_hit(struct kb_gw_limiter *l, const char *key, long max,
			  int64_t window_ms, int64_t now_ms);

/* Takes one of key's max slots. Returns 0, -EBUSY when key holds max
 * already, -ENOSPC when the table is full. max <= 0: no limit, nothing
 * taken (then do not release). */
int kb_gw_limiter_take(struct kb_gw_limiter *l, const char *key, long max);
/* Gives back a slot taken by kb_gw_limiter_take(). */
void kb_gw_limiter_release(struct kb_gw_limiter *l, const char *key);

#endif
