/* kb_gw_pool: a few threads for the gateway's slow, blocking steps (the
 * synchronous Kafka delivery of a submission, an OAuth code exchange), so
 * that libmicrohttpd's threads never wait on them. A request hands its
 * step over with kb_gw_defer() (http.h), which suspends the connection;
 * the pool thread runs it and resumes the connection.
 *
 * Jobs run in FIFO order on whichever thread is free. Thread-safe.
 */
#ifndef KB_GW_POOL_H
#define KB_GW_POOL_H

#include <stddef.h>

struct kb_gw_pool;

/* Starts n threads (n >= 1) that take at most max_waiting jobs waiting
 * for a thread (0: no bound). Each thread calls thread_exit (if not NULL)
 * as it ends: what a job may have left with the thread, such as its Redis
 * connection (kb_gw_redis_drop), goes with it. NULL when out of
 * resources. */
struct kb_gw_pool *kb_gw_pool_new(size_t n, size_t max_waiting,
				  void (*thread_exit)(void));

/* Queues fn(arg). Returns 0, -EAGAIN when max_waiting jobs wait already,
 * or -ESHUTDOWN after kb_gw_pool_destroy() began (fn is then not run). */
int kb_gw_pool_run(struct kb_gw_pool *p, void (*fn)(void *arg), void *arg);

/* Refuses new jobs, runs every queued one and joins the threads; the pool
 * stays valid (kb_gw_pool_run answers -ESHUTDOWN). Twice is fine. */
void kb_gw_pool_stop(struct kb_gw_pool *p);

/* Stops (if need be) and frees. NULL is a no-op. */
void kb_gw_pool_destroy(struct kb_gw_pool *p);

#endif
