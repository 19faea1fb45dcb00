/* kb_gw_hub: in-process publish/subscribe of submission events, keyed by
 * submission id.
 *
 * The kb.results consumer (events.c) publishes every Progress and Result
 * it sees; watchers (SSE streams, the Discord code) subscribe to the ids
 * they wait for. Each watcher has a bounded queue: STATUS events beyond
 * its capacity replace the oldest queued STATUS (a slow reader sees fewer
 * intermediate stages, never a stale last one), and the one final event
 * (RESULT or ERROR) has a slot of its own, so it is never dropped. After
 * the final event a watcher takes nothing more.
 *
 * A watcher may also ask to be woken on a timer (keep-alives, fallback
 * polls): kb_gw_hub_tick() wakes every watcher whose timer is due.
 *
 * A module that follows every submission rather than one (the web feed,
 * which drops the pages a Result changes) listens instead: a listener
 * hears every message published, whatever its id.
 *
 * The hub does no I/O. Result payloads travel packed (one refcounted copy
 * shared by all watchers of an id) and are unpacked by the reader.
 *
 * Locking: the table is split into stripes, each with a mutex; a watcher
 * has its own mutex and condition variable. Wake callbacks run with the
 * stripe's lock held (so a watcher cannot be closed under them) and must
 * not call into the hub. Listeners run under a read lock of their own
 * table (so one cannot be removed under its call) and must not block or
 * call into the hub. All calls are thread-safe.
 */
#ifndef KB_GW_HUB_H
#define KB_GW_HUB_H

#include <stddef.h>
#include <stdint.h>

#include "kb.pb-c.h"

typedef struct kb_gw_hub kb_gw_hub;
struct kb_gw_watch;

/* ---- what a watcher gets (the gateway's API, core/api.h, hands these to
 * every front end) ---- */

/* Called (from a gateway thread, without the watch's lock) whenever an
 * event is queued for the watch; it must not block and must not call back
 * into the watch. May be NULL for callers that use kb_gw_watch_wait(). */
typedef void (*kb_gw_wake_fn)(void *ctx);

enum kb_gw_event_type {
	KB_GW_EV_STATUS = 1, /* a stage was reached (also: queue position) */
	KB_GW_EV_RESULT,     /* final: the Result (already redacted) */
	KB_GW_EV_ERROR,      /* final: the submission cannot finish here */
};

struct kb_gw_event {
	enum kb_gw_event_type type;
	uint64_t id;
	char stage[24];     /* STATUS: "queued", "compiling", "testing",
			     * "benchmarking", "ranked_run" (the secret run
			     * shows as the ranked run: kb_report.h) */
	char message[160];  /* STATUS: the worker's short message; ERROR:
			     * why (sanitised UTF-8) */
	long position;      /* STATUS "queued": jobs ahead + 1; else -1 */
	int64_t elapsed_ms; /* since the worker took the job; -1 unknown */
	char worker[96];    /* STATUS: the worker's name, when known */
	int error_status;   /* ERROR: an HTTP-like status (e.g. 410, 503) */
	/* RESULT: owned by the event (kb_gw_event_clear frees it). The
	 * secret run is already redacted (kb_report_redact). */
	Kb__Result *result;
};

/* Frees what an event owns and zeroes it. */
void kb_gw_event_clear(struct kb_gw_event *ev);

/* Takes the next event without blocking. Returns 1 (ev filled: clear it
 * after use), 0 (none yet) or -1 (the final event was taken already: the
 * watch is finished). */
int kb_gw_watch_next(struct kb_gw_watch *w, struct kb_gw_event *ev);

/* The same, but waits up to timeout_ms for an event (0 when none came). */
int kb_gw_watch_wait(struct kb_gw_watch *w, int timeout_ms,
		     struct kb_gw_event *ev);

/* Unsubscribes and frees. NULL is a no-op. */
void kb_gw_watch_close(struct kb_gw_watch *w);

/* ---- the hub ---- */

/* queue_max: STATUS events kept per watcher (>= 1). NULL when out of
 * memory. */
kb_gw_hub *kb_gw_hub_new(size_t queue_max);
/* Every watcher must be closed first. NULL is a no-op. */
void kb_gw_hub_destroy(kb_gw_hub *h);

/* What publishers hand over. The hub copies it (payload included). */
struct kb_gw_hub_msg {
	enum kb_gw_event_type type;
	uint64_t id;
	const char *stage, *message, *worker; /* may be NULL */
	long position;
	int64_t elapsed_ms;
	int error_status;
	const void *payload; /* RESULT: the packed Result */
	size_t payload_len;
	/* A state read back from Redis rather than seen on Kafka: dropped
	 * for watchers that already got this stage (and position). */
	int synthetic;
	/* RESULT seen on Kafka: the Result's board, gpu and user, for
	 * listeners (each may be NULL). */
	const char *board, *gpu, *user;
};

/* Subscribes. tick_ms > 0 asks for a wake every tick_ms (see
 * kb_gw_hub_tick). Returns NULL when out of memory or after
 * kb_gw_hub_close_all(). */
struct kb_gw_watch *kb_gw_hub_watch(kb_gw_hub *h, uint64_t id, int tick_ms,
				    kb_gw_wake_fn wake, void *ctx);

/* Queues m for every watcher of m->id, then hands it to every listener;
 * returns how many watchers got it. */
size_t kb_gw_hub_publish(kb_gw_hub *h, const struct kb_gw_hub_msg *m);

/* A listener: called on the publisher's thread for every message
 * published (kb_gw_hub_publish, not kb_gw_hub_push); m is valid during
 * the call only. */
typedef void (*kb_gw_hub_listen_fn)(const struct kb_gw_hub_msg *m, void *ctx);

#define KB_GW_HUB_LISTENERS_MAX 4

/* Adds a listener. Returns 0, or -ENOSPC when KB_GW_HUB_LISTENERS_MAX
 * listen already. */
int kb_gw_hub_listen(kb_gw_hub *h, kb_gw_hub_listen_fn fn, void *ctx);
/* Removes the listener (fn, ctx); once this returns, fn is neither
 * running for it nor called again. Unknown ones are ignored. */
void kb_gw_hub_unlisten(kb_gw_hub *h, kb_gw_hub_listen_fn fn, void *ctx);

/* Queues m for one watcher (the initial state on open). Returns 1 if
 * queued, 0 if dropped (a duplicate or after the final event). */
int kb_gw_hub_push(struct kb_gw_watch *w, const struct kb_gw_hub_msg *m);

/* Wakes every watcher whose tick is due at now_ms. */
void kb_gw_hub_tick(kb_gw_hub *h, int64_t now_ms);

/* Fills ids with up to max ids of watchers that have not finished and
 * have received nothing for idle_ms (each id once); returns the count.
 * For fallback polling of the store. */
size_t kb_gw_hub_idle(kb_gw_hub *h, int64_t now_ms, int64_t idle_ms,
		      uint64_t *ids, size_t max);

/* Gives every open watcher a final ERROR (status, message) and refuses
 * new watches: used when shutting down. */
void kb_gw_hub_close_all(kb_gw_hub *h, int status, const char *message);

/* Number of open watchers (for logs and tests). */
size_t kb_gw_hub_count(kb_gw_hub *h);

#endif
