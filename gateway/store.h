/* kb_gw_store: every Redis key the gateway reads or writes (layout in
 * docs/internals.md), behind functions that speak in users, submissions
 * and rankings.
 *
 * Connections: one per thread, made on first use and kept for the thread's
 * life (a pthread key frees it when the thread exits). libmicrohttpd runs a
 * fixed pool of threads, so the gateway holds exactly that many
 * connections, with no lock and no pool hand-off on the request path.
 * After an I/O error the thread's connection is dropped and the next call
 * reconnects; while Redis stays unreachable a thread retries at most every
 * 250 ms and fails fast in between, so a Redis outage costs clients a quick
 * 503, not a connect timeout each.
 *
 * Return codes: 0, -ENOENT (no such user/submission), -EIO (Redis
 * unreachable or failed: answer 503), -EPROTO (unexpected reply: 500),
 * -ENOMEM. Every call is thread-safe (each uses its thread's connection).
 */
#ifndef KB_GW_STORE_H
#define KB_GW_STORE_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

#include "gateway.h"

/* This thread's connection, or NULL (then errstr says why). */
redisContext *kb_gw_redis(const struct kb_gw *g, char *errstr,
			  size_t errstr_size);

/* Closes this thread's connection (after an I/O error, or at exit). */
void kb_gw_redis_drop(void);

/* At startup: creates each board's secret seed if missing (HSETNX with a
 * random 64-bit value), records deadline and visibility, and loads the
 * seeds into g->lbs. The seeds are never logged. */
int kb_gw_store_init_boards(struct kb_gw *g, char *errstr, size_t errstr_size);

struct kb_gw_user {
	char id[64];
	char name[128];
	int banned;
};

/* Resolves an X-Popcorn-Cli-Id. */
int kb_gw_user_by_cli(const struct kb_gw *g, const char *cli_id,
		      struct kb_gw_user *out);

/* Creates a user with a fresh random user id and CLI id (hex). */
int kb_gw_user_create(const struct kb_gw *g, const char *name,
		      char user_id[33], char cli_id[65]);

/* A submission as the gateway records it. */
struct kb_gw_sub {
	uint64_t id;
	const char *user_id, *user_name, *lb, *gpu, *mode, *file_name;
	const char *code;
	size_t code_len;
	char code_sha[65];
	int64_t submitted_ms;
};

/* INCR kb:next_sub_id. */
int kb_gw_sub_next_id(const struct kb_gw *g, uint64_t *id);

/* Writes kb:code:<sha> (if new), kb:sub:<id> with status "queued" and the
 * user's index entry, in one MULTI/EXEC: all or nothing. */
int kb_gw_sub_record(const struct kb_gw *g, const struct kb_gw_sub *s);

/* Marks a recorded submission failed (status "failed", verdict
 * "infra_error", error, done_ms), but only while its status is still
 * "queued", so a worker that got it after all wins. */
int kb_gw_sub_mark_failed(const struct kb_gw *g, uint64_t id, const char *why);

/* A stored submission: its hash, its final result for its gpu (packed
 * Result, may be absent) and its code. Free with kb_gw_sub_rec_free(). */
struct kb_gw_sub_rec {
	redisReply *hash; /* HGETALL: flat field/value array */
	redisReply *res;  /* GET kb:res:<id>:<gpu>: string or nil */
	redisReply *code; /* GET kb:code:<sha>: string or nil */
};
int kb_gw_sub_fetch(const struct kb_gw *g, uint64_t id,
		    struct kb_gw_sub_rec *out);
/* A field of rec->hash, or NULL. */
const char *kb_gw_sub_field(const struct kb_gw_sub_rec *rec, const char *name);
void kb_gw_sub_rec_free(struct kb_gw_sub_rec *rec);

struct kb_gw_rank_entry {
	long rank; /* 1-based, over the whole board */
	char user_id[64];
	char user_name[128];
	double score;
	uint64_t sub_id;         /* 0 when unknown */
	int64_t submitted_ms;    /* INT64_MAX when unknown */
	char file_name[256];
};

/* The ranking of lb on gpu, entries [offset, offset + limit) in the order
 * (score, submitted_ms, submission id, user id). *out is malloc'd (free it),
 * *n may be 0. */
int kb_gw_ranking(const struct kb_gw *g, const char *lb, const char *gpu,
		  long offset, long limit, struct kb_gw_rank_entry **out,
		  size_t *n);

/* Orders two ranking entries as the ranking does (ascending). Pure; for
 * qsort and tests. */
int kb_gw_rank_cmp(const void *a, const void *b);

#endif
