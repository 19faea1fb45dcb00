/* kb_service: the worker's Kafka loop.
 *
 * Consumes kb.submissions.<gpu> in group kb-worker.<gpu>, one job at a
 * time, and answers each Submission with Progress events (best effort)
 * and exactly one acknowledged Result on kb.results before committing its
 * offset (at-least-once; the ranker folds duplicates away). A message that
 * does not decode goes to kb.dlq with a reason and is committed. An
 * evaluation that ends in an infrastructure error is retried in place up
 * to infra_attempts times. A Result that cannot be published is retried
 * with backoff and its offset is not committed until it is.
 *
 * One evaluation per job: while a job waits and runs, the member's
 * partitions are paused and the loop keeps polling, so it stays in the
 * group (cooperative-sticky assignment: a rebalance leaves it its
 * partitions). Before a job runs, the worker takes its lease in Redis
 * (kb_lease.h) and renews it while the job runs; a worker that gets a
 * job whose lease another holds waits (its partition paused) until that
 * one finishes it (then skips and commits) or stops renewing (then takes
 * it over); a job whose lease says done is skipped and committed. So
 * neither a rebalance, a failed commit nor a re-published message starts
 * a job twice. A lease that ended unrenewed counts one attempt (its
 * worker crashed, hung or was stopped): a job that reached job_attempts
 * is not run again; it gets an infra_error Result saying why. A worker
 * that cannot renew its lease for three quarters of its ttl abandons the
 * job before the lease can end.
 *
 * Heartbeats: from its first poll on, every heartbeat_s, the worker
 * publishes a Progress without a submission (ResultEvent.submission_id 0)
 * on kb.results naming itself and the job it runs (busy_with, 0 when
 * idle), so gateways know it serves before any job and while a long one
 * runs; one that stops publishing them is taken for gone.
 *
 * Tasks: a Submission that names its task by reference (task_ref) gets
 * its files from the task store (kb_taskstore.h) before it runs.
 * A job whose evaluation outlives the longest its steps may take
 * (kb_service_job_max_s) stops the worker: its thread may be stuck where
 * nothing can reach it, so the process exits and the partition moves on.
 *
 * Stopping (kb_signal): no new message is taken; the job in progress is
 * finished and published if that happens within drain_grace_s, otherwise
 * it is abandoned (its processes killed, its offset left uncommitted so
 * another worker takes it); then the producer is flushed and the consumer
 * leaves the group.
 *
 * Thread-safety: call from one thread; it runs each evaluation on a
 * thread of its own so that it can keep time while one runs.
 */
#ifndef KB_SERVICE_H
#define KB_SERVICE_H

#include <stddef.h>
#include <stdint.h>

#include "eval.h"

struct kb_service_opts {
	const char *brokers;
	const char *gpu;
	const char *worker;
	/* "key", "value" pairs for the consumer, NULL-terminated, or NULL. */
	const char *const *consumer_extra;
	double drain_grace_s;
	double heartbeat_s; /* between heartbeats; 0 sends none */
	int infra_attempts; /* evaluations before reporting infra_error */
	int job_attempts;   /* workers a job may stop before it is given up */
	const char *redis_url; /* the store: leases and tasks */
	double lease_ttl_s;    /* a lease not renewed this long ends */
	double lease_keep_s;   /* a finished job's lease says so this long */
	const char *task_cache_dir; /* cached task files, or NULL */
	struct kb_eval_opts eval; /* progress, t0 and cancel are set per job */
};

/* The longest one job may take, every step at its limit and every infra
 * retry made: past it the evaluation is hung. Pure. */
double kb_service_job_max_s(const struct kb_service_opts *o);

/* Runs until a stop is requested. Returns 0 after a clean stop, or a
 * negative code with errstr set when Kafka could not be set up, the
 * consumer failed for good, or a job hung (-ETIMEDOUT). */
int kb_service_run(const struct kb_service_opts *o, char *errstr,
		   size_t errstr_size);

#endif
