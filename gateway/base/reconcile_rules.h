/* reconcile_rules: what the reconciler (reconcile.h) does with one queued
 * submission, decided without I/O.
 *
 * A record says "queued" until a worker reports the job. Its message is
 * where the gateway recorded it after the broker acknowledged it (cluster
 * id, partition, offset). The message is gone when the cluster is another
 * one (a restarted kb-devbroker), the partition does not exist, or the
 * offset is outside [low, high) of the partition's log (deleted by
 * retention or a size cap, or the log started again). A record with no
 * recorded place is gone once the grace period has passed since it was
 * published (the gateway stopped between recording and publishing, or
 * could not note the place). Thread-safe (pure).
 */
#ifndef KB_GW_RECONCILE_RULES_H
#define KB_GW_RECONCILE_RULES_H

#include <stdint.h>

/* One queued record as read from Redis. */
struct kb_gw_queued {
	uint64_t id;
	int queued;           /* status is still "queued" */
	int64_t published_ms; /* last (re-)publish, or submitted_ms */
	int placed;           /* cluster, partition and offset are known */
	char cluster[128];
	int32_t partition;
	int64_t offset;
	long republished; /* times the reconciler published it again */
	int lease_active; /* a worker holds it, or it was evaluated */
};

/* The submissions topic's log as the broker reports it now. */
#define KB_GW_RECONCILE_PARTS 256
struct kb_gw_log {
	char cluster[128];
	int nparts; /* partitions 0..nparts-1 */
	int64_t low[KB_GW_RECONCILE_PARTS], high[KB_GW_RECONCILE_PARTS];
};

enum kb_gw_reconcile_action {
	KB_GW_RECON_KEEP,   /* the message is there (or may still be) */
	KB_GW_RECON_FORGET, /* not queued any more: drop from the queue set */
	KB_GW_RECON_REPUBLISH, /* gone: publish it again */
	KB_GW_RECON_FAIL       /* gone too often: end it as our fault */
};

/* 1 when q's message is no longer in log (as above), else 0. */
int kb_gw_reconcile_gone(const struct kb_gw_queued *q,
			 const struct kb_gw_log *log, int64_t now_ms,
			 int64_t grace_ms);

enum kb_gw_reconcile_action kb_gw_reconcile_decide(const struct kb_gw_queued *q,
						   const struct kb_gw_log *log,
						   int64_t now_ms,
						   int64_t grace_ms,
						   long max_republish);

#endif
