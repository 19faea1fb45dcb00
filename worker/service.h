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
 * Jobs that stop workers: before a job runs, its message's offset is
 * committed once more with a mark, "kb-attempt <id> <n>" (kb_consumer_mark),
 * so that the member that gets the partition after this worker dies or
 * hangs finds it and counts. A job found marked job_attempts times is not
 * run again: it gets an infra_error Result saying why and is committed.
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
	int infra_attempts;     /* evaluations before reporting infra_error */
	int job_attempts;       /* workers a job may stop before it is given up */
	struct kb_eval_opts eval; /* progress, t0 and cancel are set per job */
};

/* The longest one job may take, every step at its limit and every infra
 * retry made: past it the evaluation is hung. Pure. */
double kb_service_job_max_s(const struct kb_service_opts *o);

/* Parses a mark: the submission id and the attempt it counts. Returns 0,
 * or -EINVAL when metadata is no mark. Pure. */
int kb_service_parse_mark(const char *metadata, uint64_t *id, int *attempt);

/* Runs until a stop is requested. Returns 0 after a clean stop, or a
 * negative code with errstr set when Kafka could not be set up, the
 * consumer failed for good, or a job hung (-ETIMEDOUT). */
int kb_service_run(const struct kb_service_opts *o, char *errstr,
		   size_t errstr_size);

#endif
