/* kb_gw_queue: how many submissions wait in kb.submissions.<gpu>.
 *
 * The backlog of a gpu is the lag of the workers' consumer group
 * kb-worker.<gpu> on that topic: for every partition, the high watermark
 * minus the group's committed offset (the low watermark when the group
 * never committed). Workers commit a job's offset only after its Result,
 * so the job being run counts too; GET /runner_queue subtracts the running
 * ones. Each gpu gets its own librdkafka consumer handle configured with
 * that group id; it never subscribes (it does not join the group), it only
 * asks for committed offsets and watermarks. Answers are cached for
 * cache_ms, and a query blocks at most about two seconds.
 *
 * Thread-safe: one mutex per gpu entry; different gpus do not wait on each
 * other.
 */
#ifndef KB_GW_QUEUE_H
#define KB_GW_QUEUE_H

#include <stddef.h>

struct kb_gw_queue;

/* Does not connect yet. NULL when out of memory. */
struct kb_gw_queue *kb_gw_queue_new(const char *brokers, long cache_ms);
void kb_gw_queue_destroy(struct kb_gw_queue *q);

/* The gpu's backlog (cached up to cache_ms). Returns 0 with *lag, or
 * -EIO / -ENOMEM / -ENOSPC (too many gpus) with errstr set. */
int kb_gw_queue_lag(struct kb_gw_queue *q, const char *gpu, long *lag,
		    char *errstr, size_t errstr_size);

/* The last measured backlog if it is younger than max_age_ms, else -1.
 * Never blocks on the broker. */
long kb_gw_queue_lag_cached(struct kb_gw_queue *q, const char *gpu,
			    long max_age_ms);

#endif
