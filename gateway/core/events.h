/* kb_gw_events: the gateway's two background threads.
 *
 * The consumer thread reads kb.results as a member of a consumer group of
 * its own, "kb-gateway.<host>.<pid>", starting at the latest offset (a
 * gateway only cares about events from now on, and every gateway must see
 * every event, so groups are never shared and offsets never committed).
 * Each Progress and Result is published to the hub (hub.c), which hands
 * it to the streams waiting for that submission. The thread also keeps
 * the queued/running bookkeeping in Redis (kb:queued:<gpu>,
 * kb:running:<gpu>), drops cached rankings a Result may change, and
 * records worker heartbeats: the `worker` field of every event (and of a
 * heartbeat: a ResultEvent with submission_id 0 carrying a Progress with
 * its worker name), with the job it is busy with.
 *
 * The ticker thread wakes streams for keep-alives, re-reads from Redis the
 * state of submissions whose watchers heard nothing for a while (a late
 * stream, a lost event, a gateway started after the worker: the fallback),
 * and every two seconds syncs the board table with Redis (boards created
 * or deleted by admins through other gateways, visibility changes).
 *
 * Both threads stop within half a second of kb_gw_events_stop().
 */
#ifndef KB_GW_EVENTS_H
#define KB_GW_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "base/gateway.h"

struct kb_gw_events;

/* Starts both threads. Returns NULL with errstr set. */
struct kb_gw_events *kb_gw_events_start(struct kb_gw *g, char *errstr,
					size_t errstr_size);
/* Stops and joins the threads; frees. NULL is a no-op. */
void kb_gw_events_stop(struct kb_gw_events *e);

struct kb_gw_worker_info {
	char name[96];
	int64_t last_seen_ms;
	uint64_t busy_with; /* 0: idle (as far as we saw) */
	char stage[24];
};

/* Workers of gpu seen within stale_ms before now_ms, up to max; returns
 * the count. */
size_t kb_gw_events_workers(struct kb_gw_events *e, const char *gpu,
			    int64_t now_ms, int64_t stale_ms,
			    struct kb_gw_worker_info *out, size_t max);

/* What a submission queued on a gpu can expect (kb_gw_events_outlook). */
struct kb_gw_outlook {
	/* Workers of the gpu heard of within the stale time, -1 while that
	 * is not known yet: no worker heard of, and this gateway has not
	 * listened for a whole stale time (a worker's heartbeat may still
	 * be on its way). */
	int workers;
	int busy;
	/* The expected wait (s) of the submission at position (1 = next):
	 * the mean duration of the gpu's last jobs this gateway saw, times
	 * the jobs before it (those queued ahead and those running) per
	 * worker; -1 when there is no worker or no job was seen yet. */
	double wait_s;
};

/* Fills out for gpu at now_ms; position < 1 asks only about the workers.
 * Thread-safe. */
void kb_gw_events_outlook(struct kb_gw_events *e, const char *gpu,
			  long position, int64_t now_ms, int64_t stale_ms,
			  struct kb_gw_outlook *out);

/* What every answer about a submission queued on gpu at position (1 =
 * next; < 1 unknown) says of its wait: fills o and note with
 * one sentence: "no worker online for H100: ..." when none serves the gpu,
 * else "expected to start in about N s" when that can be told, else "".
 * Thread-safe. */
void kb_gw_queue_note(struct kb_gw *g, const char *gpu, long position,
		      struct kb_gw_outlook *o, char *note, size_t note_size);

/* Applies the shared board state now (as the ticker does every two
 * seconds): for tests and for the admin endpoints after a change. */
void kb_gw_boards_sync(struct kb_gw *g);

#endif
