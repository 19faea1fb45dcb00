/* reconcile: no accepted submission waits for a message that is gone.
 *
 * A thread of the gateway, every KB_RECONCILE_S: takes the pass lock in
 * Redis (kb:reconcile, so one gateway of several does a pass at a time),
 * then for each GPU type of the live boards reads the submissions topic's
 * log (cluster id, partitions, low and high offsets) and the records of
 * kb:queued:<gpu>, and applies reconcile_rules.h to each: a record whose
 * message is gone is published again (from kb:sub and kb:code, the same
 * Submission with a fresh place), and after KB_RECONCILE_MAX re-publishes
 * ended as the platform's fault ("failed", infra_error, a message saying
 * so). A re-publish that turns out to duplicate a message still on its
 * way costs nothing: the worker's lease (kb_lease.h) runs a job once.
 *
 * The gateway owns it because it has what a re-publish needs (the boards'
 * tasks and secrets, the producer) and already keeps kb:queued.
 */
#ifndef KB_GW_RECONCILE_H
#define KB_GW_RECONCILE_H

#include <stddef.h>

#include "base/gateway.h"

struct kb_gw_reconcile_stats {
	long seen, republished, failed, forgotten;
};

/* One pass now (the thread's step; tests call it). Returns 0 (also when
 * another gateway held the lock: *st all zero) or a negative store or
 * broker code. */
int kb_gw_reconcile_pass(struct kb_gw *g, struct kb_gw_reconcile_stats *st);

struct kb_gw_reconciler;

/* Starts the thread (NULL with errstr set on failure). With
 * cfg.reconcile_s 0 there is no thread: returns a handle that does
 * nothing. */
struct kb_gw_reconciler *kb_gw_reconcile_start(struct kb_gw *g, char *errstr,
					       size_t errstr_size);
/* Stops and joins the thread. NULL is a no-op. */
void kb_gw_reconcile_stop(struct kb_gw_reconciler *r);

#endif
