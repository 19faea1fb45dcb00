/* kb_gw_store: every Redis key the gateway reads or writes (layout in
 * docs/internals.md and docs/api.md), behind functions that speak in
 * users, submissions, rankings and policies.
 *
 * Connections: one per thread, made on first use and kept for the thread's
 * life (a pthread key frees it when the thread exits). libmicrohttpd runs a
 * fixed pool of threads, so the gateway holds exactly that many
 * connections (plus one for the events thread), with no lock and no pool
 * hand-off on the request path. After an I/O error the thread's
 * connection is dropped and the next call reconnects; while Redis stays
 * unreachable a thread retries at most every 250 ms and fails fast in
 * between, so a Redis outage costs clients a quick 503, not a connect
 * timeout each.
 *
 * Multi-key updates are Lua scripts (gateway/store/lua/<name>.lua, compiled in),
 * loaded once by kb_gw_store_init() and run with EVALSHA.
 *
 * Return codes: 0, -ENOENT (no such user/submission/...), -EIO (Redis
 * unreachable or failed: answer 503), -EPROTO (unexpected reply: 500),
 * -ENOMEM. Every call is thread-safe (each uses its thread's connection).
 * Values are never logged (CLI ids, codes and seeds least of all).
 */
#ifndef KB_GW_STORE_H
#define KB_GW_STORE_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

#include "base/gateway.h"
#include "base/reconcile_rules.h"

/* This thread's connection, or NULL (then errstr says why). */
redisContext *kb_gw_redis(const struct kb_gw *g, char *errstr,
			  size_t errstr_size);

/* Closes this thread's connection (after an I/O error, or at exit). */
void kb_gw_redis_drop(void);

/* At startup, before threads: loads the scripts, then initialises every
 * board (kb_gw_store_init_board). */
int kb_gw_store_init(struct kb_gw *g, char *errstr, size_t errstr_size);

/* Creates a board's secret seed if missing (HSETNX with a random 64-bit
 * value), records its deadline, visibility (unless set) and loads the
 * seed, visibility and deleted flag into lb. The seed is never logged. */
int kb_gw_store_init_board(const struct kb_gw *g, struct kb_gw_lb *lb,
			   const char *visibility, char *errstr,
			   size_t errstr_size);

/* ---- users ---- */

struct kb_gw_user {
	char id[96];
	char name[128];
	int banned;
};

/* Resolves an X-Popcorn-Cli-Id (one round trip). */
int kb_gw_user_by_cli(const struct kb_gw *g, const char *cli_id,
		      struct kb_gw_user *out);

/* Creates a user with a fresh random user id and CLI id (hex). */
int kb_gw_user_create(const struct kb_gw *g, const char *name, char user_id[33],
		      char cli_id[65]);

/* Creates user_id with name unless it exists (then nothing changes). */
int kb_gw_user_ensure(const struct kb_gw *g, const char *user_id,
		      const char *name);

/* Takes the user's CLI id away (it stops working), so that the owner's
 * next login links a new one. -ENOENT when the user does not exist. */
int kb_gw_user_clear_cli(const struct kb_gw *g, const char *user_id);

/* Sets or clears the ban flag. -ENOENT when the user does not exist. */
int kb_gw_user_set_banned(const struct kb_gw *g, const char *user_id,
			  int banned);

/* /auth/init: records a login of cli_id with provider for ttl_s seconds
 * (kb:clipending:<cli_id>); reset_user, when not NULL, is the account the
 * CLI proved with its current CLI id (the only one a reset may move). */
int kb_gw_login_begin(const struct kb_gw *g, const char *cli_id,
		      const char *provider, const char *reset_user, long ttl_s);

/* A step of a login (login.lua): step "start" (the start page gave the
 * browser a cookie whose nonce's SHA-256 hex is nonce_sha) or "claim" (a
 * browser came back from the provider with that cookie: the login is used
 * up). Sets *ttl_left to the seconds the login has left. Returns 0,
 * -EPERM with *status (400/403) and why for a refusal, or another
 * negative code. */
int kb_gw_login_step(const struct kb_gw *g, const char *step,
		     const char *cli_id, const char *provider,
		     const char *nonce_sha, long *ttl_left, int *status,
		     char *why, size_t why_size);

/* /auth/cli: links cli_id to user_id (link.lua), after the login's claim.
 * Returns 0, or -EPERM with *status (400/403/404/409) and why set for
 * refusals, or another negative code. */
int kb_gw_auth_link(const struct kb_gw *g, const char *user_id,
		    const char *name, const char *cli_id, const char *provider,
		    int reset, int *status, char *why, size_t why_size);

/* SET key NX EX ttl_s: 1 the first time within ttl_s, 0 when key was
 * seen already (replays), or a negative code. */
int kb_gw_seen_once(const struct kb_gw *g, const char *key, long ttl_s);

/* ---- submissions ---- */

/* A submission as kb_gw_submit() records it. */
struct kb_gw_sub {
	const char *user_id, *lb, *gpu, *mode, *category, *file_name;
	const char *code;
	size_t code_len;
	char code_sha[65];
	int64_t submitted_ms;
	int admin;
	long default_limit;   /* the category's default hourly limit, 0 none */
	long max_queued;      /* unfinished jobs per user and gpu, 0 none */
	long queued_forget_s; /* an unfinished job counts this long at most */
	long code_ttl_s;      /* unranked code kept this long, 0 for ever */
};

/* Runs submit.lua. Returns 0 with *id and user_name set (admitted and
 * recorded), 1 when policy refused it (*status, why, *retry_ms set), or a
 * negative code. */
int kb_gw_sub_create(const struct kb_gw *g, const struct kb_gw_sub *s,
		     uint64_t *id, char *user_name, size_t name_size,
		     int *status, char *why, size_t why_size,
		     int64_t *retry_ms);

/* Marks a recorded submission failed (status "failed", verdict
 * "infra_error", error, done_ms), but only while its status is still
 * "queued", so a worker that got it after all wins. */
int kb_gw_sub_mark_failed(const struct kb_gw *g, uint64_t id, const char *why);

/* A stored submission: its hash, its final result for its gpu (packed
 * Result, may be absent) and optionally its code. Free with
 * kb_gw_sub_rec_free(). -ENOENT also for deleted submissions. */
struct kb_gw_sub_rec {
	redisReply *hash; /* HGETALL: flat field/value array */
	redisReply *res;  /* GET kb:res:<id>:<gpu>: string or nil */
	redisReply
		*code; /* GET kb:code:<sha>: string or nil; NULL if not asked */
};
int kb_gw_sub_fetch(const struct kb_gw *g, uint64_t id, int with_code,
		    struct kb_gw_sub_rec *out);
/* A field of rec->hash, or NULL. */
const char *kb_gw_sub_field(const struct kb_gw_sub_rec *rec, const char *name);
void kb_gw_sub_rec_free(struct kb_gw_sub_rec *rec);

/* Deletes (delete.lua). user_id NULL: as an admin (any owner). Returns 0
 * with lb/gpu filled and *rank_changed, -ENOENT, -EPERM (not the owner),
 * or another negative code. */
int kb_gw_sub_delete(const struct kb_gw *g, uint64_t id, const char *user_id,
		     char *lb, size_t lb_size, char *gpu, size_t gpu_size,
		     int *rank_changed);

/* A page of a user's submissions, newest first, optionally of one board:
 * *out is an array of n HMGET replies (fields: see kb_gw_list_fields),
 * ids[i] their ids. Free with kb_gw_sub_list_free(). */
extern const char *const kb_gw_list_fields[]; /* NULL-terminated */
struct kb_gw_sub_list {
	size_t n;
	uint64_t *ids;
	redisReply **rows;
};
int kb_gw_sub_list_user(const struct kb_gw *g, const char *user_id,
			const char *lb, long offset, long limit,
			struct kb_gw_sub_list *out);
/* Ids of a board's submissions, newest first. */
int kb_gw_sub_list_board(const struct kb_gw *g, const char *lb, long offset,
			 long limit, struct kb_gw_sub_list *out);
void kb_gw_sub_list_free(struct kb_gw_sub_list *l);
/* Value of field in row (NULL if absent). */
const char *kb_gw_list_value(const redisReply *row, const char *field);

/* Queue position of a queued submission on its gpu (1 = next), or 0 when
 * it is not queued any more. */
int kb_gw_queue_position(const struct kb_gw *g, const char *gpu, uint64_t id,
			 long *position);

/* Submissions of gpu accepted and not yet taken by a worker (the
 * records kb:queued:<gpu> lists: what /runner_queue, the positions and
 * /admin/stats count alike). */
int kb_gw_queued_count(const struct kb_gw *g, const char *gpu, long *count);

/* ---- queue (queue.c) ---- */

/* After the broker acknowledged a Submission: notes where its message is
 * (kcluster, kpart, koff, published_ms; profile, packed, when given) on a
 * record still queued. */
int kb_gw_sub_published(const struct kb_gw *g, uint64_t id, int32_t partition,
			int64_t offset, const char *cluster,
			const Kb__ProfileRequest *profile);

/* The first max ids of kb:queued:<gpu>, each with its record's queue
 * fields and whether a worker holds its lease (reconcile_rules.h). *out
 * is malloc'd (free it). */
int kb_gw_queued_list(const struct kb_gw *g, const char *gpu, long max,
		      struct kb_gw_queued **out, size_t *n);

/* Removes id from kb:queued:<gpu>. */
int kb_gw_queued_forget(const struct kb_gw *g, const char *gpu, uint64_t id);

/* Counts one re-publish of q if its record is still queued at the place
 * q saw: *count the new count, or 0 when it moved on (do nothing). */
int kb_gw_sub_republish_begin(const struct kb_gw *g,
			      const struct kb_gw_queued *q, long *count);

/* SET kb:reconcile owner NX PX ttl_ms: 1 when taken, 0 when another
 * gateway holds it, or a negative code. */
int kb_gw_reconcile_lock(const struct kb_gw *g, const char *owner, long ttl_ms);

/* The events thread: a job started (Progress) or ended (Result). Best
 * effort bookkeeping of kb:queued:<gpu> and kb:running:<gpu>. */
int kb_gw_store_job_event(const struct kb_gw *g, uint64_t id, const char *gpu,
			  int finished);

/* Submissions of gpu a worker reported working on (kb:running:<gpu>),
 * without those whose kb:sub status says they finished (those entries
 * are removed). */
int kb_gw_running_count(const struct kb_gw *g, const char *gpu, long *count);

/* A submission's current state for fallback polling: status, stage,
 * stage_ms, submitted_ms, gpu, error (each malloc'd or NULL). */
struct kb_gw_sub_state {
	char *status, *stage, *gpu, *error;
	int64_t stage_ms, submitted_ms;
	redisReply *res; /* the packed Result when done (string) or NULL */
};
int kb_gw_sub_state(const struct kb_gw *g, uint64_t id,
		    struct kb_gw_sub_state *out);
void kb_gw_sub_state_free(struct kb_gw_sub_state *s);

/* ---- rankings ---- */

struct kb_gw_rank_entry {
	long rank; /* 1-based, over the whole board */
	char user_id[96];
	char user_name[128];
	double score;
	char score_text[32];  /* as stored (shortest exact text) */
	uint64_t sub_id;      /* 0 when unknown */
	int64_t submitted_ms; /* INT64_MAX when unknown */
	char file_name[256];
};

/* The ranking of lb on gpu, entries [offset, offset + limit) in the order
 * (score, submitted_ms, submission id, user id) that kb:rankorder keeps
 * (ranker/ranking.lua). *out is malloc'd (free it), *n may be 0. An
 * order out of step with the scores is rebuilt first (through the
 * ranker's rank_rebuild). */
int kb_gw_ranking(const struct kb_gw *g, const char *lb, const char *gpu,
		  long offset, long limit, struct kb_gw_rank_entry **out,
		  size_t *n);

/* Number of ranked users; with user_id, 1 if that user is ranked. */
int kb_gw_ranking_count(const struct kb_gw *g, const char *lb, const char *gpu,
			const char *user_id, long *count);

/* ---- the dataset export (export.c) ---- */

/* A ranked and passing submission (mode leaderboard, verdict passed,
 * a score) chosen for the export. */
struct kb_gw_export_pick {
	uint64_t id;
	double score;
	int64_t submitted_ms;
	char user_id[96];
	char code_sha[65];
	char gpu[64];
};

/* Whether a submission's record fields (any may be NULL) say it is a
 * ranked pass: mode leaderboard, status done, verdict passed, a finite
 * score > 0 (then in *seconds, when not NULL). What the export and the
 * web's code pages show, and nothing else. Pure. */
int kb_gw_ranked_pass(const char *mode, const char *status, const char *verdict,
		      const char *score, double *seconds);

/* The ranking order (score, submitted_ms, id): <0, 0, >0. */
int kb_gw_export_pick_cmp(const struct kb_gw_export_pick *x,
			  const struct kb_gw_export_pick *y);

/* The best ranked and passing submission of each (user, code, gpu) of
 * board lb (ZSCAN of kb:subs:lb:<lb>: a submission there for the whole
 * call is seen), in the ranking order. *out is malloc'd (free it), *n
 * may be 0. Memory: at most about twice one pick (~240 bytes) per
 * (user, code, gpu) group, plus one scan page (512 submissions). */
int kb_gw_export_picks(const struct kb_gw *g, const char *lb,
		       struct kb_gw_export_pick **out, size_t *n);

/* One export row's record: the user's name (now, else as recorded with
 * the submission), the file name, and the code (NULL when its blob is
 * gone). Strings point into r; free with kb_gw_export_rec_free(). */
struct kb_gw_export_rec {
	redisReply *r[3];
	const char *user_name, *file_name, *code;
	size_t code_len;
};
int kb_gw_export_row(const struct kb_gw *g, const struct kb_gw_export_pick *pk,
		     struct kb_gw_export_rec *out);
void kb_gw_export_rec_free(struct kb_gw_export_rec *rec);

/* ---- policy and administration (admin.c) ---- */

/* kb:admin accepting: 1 accepting (the default), 0 stopped. */
int kb_gw_set_accepting(const struct kb_gw *g, int accepting);
/* Reads it (one round trip: also how /admin ping times the store). */
int kb_gw_get_accepting(const struct kb_gw *g, int *accepting);

/* visibility "public" or "closed". */
int kb_gw_set_visibility(const struct kb_gw *g, const char *lb,
			 const char *visibility);
/* 1 if user_id may read/submit to a closed board. */
int kb_gw_has_access(const struct kb_gw *g, const char *lb, const char *user_id,
		     int *allowed);

/* Hourly limits per category ("test", "leaderboard"); max 0 deletes. */
int kb_gw_rate_set(const struct kb_gw *g, const char *lb, const char *cat,
		   long max);
/* Fills max[0] (test) and max[1] (leaderboard); 0 = not set. */
int kb_gw_rate_get(const struct kb_gw *g, const char *lb, long max[2]);

/* Makes count invite codes for the boards; codes is an array of count
 * strings of 33 bytes. */
int kb_gw_invites_create(const struct kb_gw *g, const char *const *lbs,
			 size_t nlbs, long count, char (*codes)[33]);
/* The invites of a board: n HGETALL-like rows. */
struct kb_gw_invite {
	char code[64];
	char user_id[96], user_name[128];
	int64_t created_ms, claimed_ms; /* 0 when not */
};
int kb_gw_invites_list(const struct kb_gw *g, const char *lb,
		       struct kb_gw_invite **out, size_t *n);
/* -ENOENT when the code does not exist. */
int kb_gw_invite_revoke(const struct kb_gw *g, const char *code,
			int *was_claimed);
/* join.lua: returns 0 with the boards ("a,b") in lbs, or 1 with why. */
int kb_gw_invite_claim(const struct kb_gw *g, const char *code,
		       const char *user_id, const char *user_name, char *lbs,
		       size_t lbs_size, char *why, size_t why_size);

/* Per GPU type ("runner" upstream), over the submissions counted: those
 * that ran (status done), passed, were scored, and were ranked ones
 * (leaderboard mode: each has a secret run). */
struct kb_gw_runner_stats {
	char gpu[64];
	long runs, passed, scored, secret;
};
#define KB_GW_STATS_RUNNERS 32
struct kb_gw_stats {
	long submissions, users, ranked_entries, queued, running_or_done;
	long by_status[5]; /* queued, running, done, failed, deleted */
	/* Ended without passing: the platform gave up (status failed), or it
	 * ran and its verdict is not passed (a compile error, a wrong result,
	 * a crash, a timeout, suspect timings). */
	long not_passed;
	long unique_codes; /* distinct code of the submissions counted */
	struct kb_gw_runner_stats runners[KB_GW_STATS_RUNNERS];
	size_t nrunners;
};
/* lb NULL: all boards; since_ms > 0: only submissions since then. */
int kb_gw_stats(const struct kb_gw *g, const char *lb, int64_t since_ms,
		struct kb_gw_stats *out);

/* Dynamic boards (admin-created) and deletions, shared by all gateways:
 * kb:lbdyn (name -> directory), kb:lbdeleted (set of names). Deleting a
 * board forgets its secret, access grants, invites and rate limits
 * (forget_board.lua), and with purge_rankings its rankings and index, so
 * that a board made again under the name starts afresh. */
int kb_gw_board_record(const struct kb_gw *g, const char *name,
		       const char *directory);
int kb_gw_board_mark_deleted(const struct kb_gw *g, const char *name,
			     int purge_rankings);
/* Whether a board has any submission (kb:subs:lb:<lb>). */
int kb_gw_board_has_submissions(const struct kb_gw *g, const char *name,
				int *has);
/* HGETALL kb:lbdyn and SMEMBERS kb:lbdeleted, and the visibility and
 * secret of every board named in names (n of them, parallel out arrays:
 * closed 0/1, secret 0 when the board has none). */
int kb_gw_board_sync(const struct kb_gw *g, redisReply **dyn,
		     redisReply **deleted, const char *const *names, size_t n,
		     int *closed, uint64_t *secrets);

#endif
