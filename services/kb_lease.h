/* kb_lease: one evaluation at a time per submission, through a lease in
 * Redis (KB_KEY_LEASE; the rules in services/lease.lua).
 *
 * A worker takes the lease before it starts a job and keeps renewing it
 * while the job runs; a second worker that receives the same job (after a
 * rebalance, a failed commit or a re-publish) finds it busy and waits, or
 * finds it done and skips it. A lease whose owner stopped renewing (the
 * process crashed, hung or was stopped) ends after its ttl; the next take
 * counts that as one attempt, so attempts count crashes and hangs only,
 * never deliveries. A drain releases the lease without counting.
 *
 * worker is a token unique to the worker process (its name, pid and a
 * random part), so that a restarted worker of the same name is another
 * owner: the crash of its predecessor is counted.
 *
 * Every call is one EVALSHA on the caller's connection (one thread at a
 * time per connection, as hiredis). Errors: a negative code (-EIO: Redis
 * unreachable or failed; -EPROTO: an unexpected reply) with errstr set.
 */
#ifndef KB_LEASE_H
#define KB_LEASE_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

enum kb_lease_verdict {
	KB_LEASE_TAKEN,  /* the caller holds it: run the job */
	KB_LEASE_BUSY,   /* another worker holds it: do not start the job */
	KB_LEASE_DONE,   /* the job was evaluated: skip it */
	KB_LEASE_GIVE_UP /* held, but attempts reached the limit */
};

struct kb_lease_take {
	enum kb_lease_verdict verdict;
	int attempts;    /* runs that ended with their worker gone */
	char owner[128]; /* the holder (BUSY, DONE) */
};

/* Takes the lease of submission id for worker, for ttl_ms. Returns 0 with
 * *out filled, or a negative code. */
int kb_lease_take(redisContext *c, uint64_t id, const char *worker, long ttl_ms,
		  int max_attempts, struct kb_lease_take *out, char *errstr,
		  size_t errstr_size);

/* Extends worker's lease by ttl_ms from now. Returns 1 (held), 0 (lost:
 * it ended and another worker took it), or a negative code. */
int kb_lease_renew(redisContext *c, uint64_t id, const char *worker,
		   long ttl_ms, char *errstr, size_t errstr_size);

/* After the job's Result is acknowledged: the lease says "done" for
 * keep_s seconds (longer than the message can stay in a topic). Returns 1,
 * 0 when worker had lost the lease meanwhile, or a negative code. */
int kb_lease_finish(redisContext *c, uint64_t id, const char *worker,
		    long keep_s, char *errstr, size_t errstr_size);

/* Frees worker's lease without counting an attempt (a drain). Returns 1,
 * 0 when it was not held, or a negative code. */
int kb_lease_release(redisContext *c, uint64_t id, const char *worker,
		     char *errstr, size_t errstr_size);

/* 1 when the job is done or a worker holds a lease that has not ended,
 * 0 otherwise, or a negative code. */
int kb_lease_active(redisContext *c, uint64_t id, char *errstr,
		    size_t errstr_size);

#endif
