/* kb_dc: the Discord front end inside kb-gateway, its shared state and the
 * seams between its files (internal to gateway/discord/; what main() sees
 * is discord.h).
 *
 *   bot.c          configuration, start/stop, the job threads
 *   reply.c        the helpers that turn answers into REST calls, and
 *                  those every command shares
 *   handler.c      POST /discord/interactions: signature, dispatch
 *   leaderboard.c  the read-only /leaderboard commands, autocomplete
 *   submit.c       /leaderboard submit: intake and the tracker thread that
 *                  turns progress into message edits
 *   admin.c        /admin start, stop, ban, unban, delete-submission,
 *                  reload-problems
 *   ops.c          /admin ping, show-stats, delete-leaderboard, export
 *   taskcheck.c    /admin verify-task, and a task's fingerprint
 *
 * Threads: request threads (libmicrohttpd) verify, parse and answer at
 * once; whatever needs more than a Redis round trip (downloading a script,
 * publishing a submission, uploading files) is a job for the job threads,
 * answered first with a deferred response. The tracker thread follows
 * submissions; the REST thread (kb_dc_rest) is the only one that talks to
 * Discord. None of them blocks another: they hand work over through
 * queues.
 *
 * The state is built by kb_gw_discord_start() and published with one
 * atomic store; kb__dc_acquire() returns NULL until then and when Discord is
 * not configured (no DISCORD_PUBLIC_KEY), which is how the endpoint
 * answers 404.
 */
#ifndef KB_DC_INTERNAL_H
#define KB_DC_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "base/gateway.h"
#include "core/api.h"
#include "interaction.h"
#include "rest.h"
#include "text.h"
#include "verify.h"

struct kb_dc_cfg {
	char *public_key; /* hex; "" turns the endpoint off */
	char *app_id;
	char *bot_token; /* secret */
	char *api_base;
	char *guild_id;
	char *announce_channel;
	char *submit_channel; /* "" any channel */
	char *admin_ids;      /* user and role ids */
	char *cdn_prefixes;   /* URL prefixes scripts may be fetched from */
	long edit_interval_ms;
	long max_age_s, max_future_s;
	long job_threads;
	long rest_timeout_ms;
	long fetch_timeout_ms;
	long fold_wait_ms;
	long drain_ms;
	long max_body;
};

struct kb_dc_job;
struct kb_dc_tracker;

struct kb_dc {
	struct kb_gw *g;
	struct kb_dc_cfg cfg;
	unsigned char pk[KB_DC_PUBKEY_BYTES];
	struct kb_dc_rest *rest;
	struct kb_dc_tracker *tracker;

	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct kb_dc_job *jobs, *jobs_tail;
	long njobs;
	int stopping;
	pthread_t *threads;
	size_t nthreads;
};

/* The running state, or NULL (not configured, not started, stopped).
 * A non-NULL state stays valid until kb__dc_release(); shutdown waits for
 * every acquired state to be released. */
struct kb_dc *kb__dc_acquire(void);
void kb__dc_release(struct kb_dc *dc);

/* A job: the interaction's raw body, re-parsed by the job thread, and the
 * command function that runs it. */
typedef void (*kb_dc_job_fn)(struct kb_dc *dc,
			     const struct kb_dc_interaction *it,
			     int64_t received_ms);
/* Queues a job (copies body). Returns 0, -ENOSPC or -ESHUTDOWN. */
int kb__dc_job_submit(struct kb_dc *dc, kb_dc_job_fn fn, const char *body,
		      size_t len, int64_t received_ms);

/* 1 once shutdown began (jobs still in line should not start new work). */
int kb__dc_stopping(struct kb_dc *dc);

/* ---- answering (reply.c; all enqueue REST calls, none blocks) ---- */

/* Edits the original (deferred) response to text: the first part of it
 * when longer than a message, the rest as follow-ups with the same
 * ephemerality; files go with the last part. */
void kb__dc_reply(struct kb_dc *dc, const struct kb_dc_interaction *it,
		  const char *text, const struct kb_dc_file *files,
		  size_t nfiles, int ephemeral);
/* One edit of the original response, with the pieces of an interaction
 * given separately (the tracker outlives the request). coalesce: replace
 * a pending edit of the same interaction, and keep edits of it at least
 * DISCORD_EDIT_INTERVAL_MS apart at delivery (progress and final). */
void kb__dc_edit(struct kb_dc *dc, const char *app_id, const char *token,
		 const char *text, const struct kb_dc_file *files,
		 size_t nfiles, int coalesce, const char *what);
void kb__dc_followup(struct kb_dc *dc, const char *app_id, const char *token,
		     const char *text, int ephemeral, const char *mention_user,
		     const char *what);
/* A message to a channel with the bot token (announcements, and results
 * that outlived their interaction token). */
void kb__dc_channel_message(struct kb_dc *dc, const char *channel_id,
			    const char *text, const struct kb_dc_file *files,
			    size_t nfiles, const char *mention_user,
			    const char *what);

/* ---- shared helpers (reply.c) ---- */

/* An ephemeral message of printf text, cut to one message's length. */
json_t *kb__dc_sayf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The ephemeral answer to a failed store call rc ("nothing changed"). */
json_t *kb__dc_store_failed(int rc);
/* The leaderboard option (also upstream's "leaderboard_name"), or NULL. */
const char *kb__dc_opt_board(const struct kb_dc_interaction *it);
/* 1 when the interaction's user is an admin (DISCORD_ADMIN_IDS). */
int kb__dc_is_admin(const struct kb_dc *dc, const struct kb_dc_interaction *it);
/* The platform user id of a Discord user id ("discord-<id>"). */
void kb__dc_user_id(const char *snowflake, char *out, size_t size);
/* A live board the user may see (closed boards need access), or NULL with
 * a sentence in why. */
const struct kb_gw_lb *kb__dc_board(struct kb_dc *dc,
				    const struct kb_dc_interaction *it,
				    const char *name, char *why,
				    size_t why_size);

/* ---- commands (each returns the immediate answer; *defer asks the
 * handler to answer "deferred" and run job on a job thread instead) ---- */

typedef json_t *(*kb_dc_cmd_fn)(struct kb_dc *dc,
				const struct kb_dc_interaction *it,
				kb_dc_job_fn *defer);

json_t *kb__dc_cmd_list(struct kb_dc *, const struct kb_dc_interaction *,
			kb_dc_job_fn *);
json_t *kb__dc_cmd_show(struct kb_dc *, const struct kb_dc_interaction *,
			kb_dc_job_fn *);
json_t *kb__dc_cmd_show_personal(struct kb_dc *,
				 const struct kb_dc_interaction *,
				 kb_dc_job_fn *);
json_t *kb__dc_cmd_task(struct kb_dc *, const struct kb_dc_interaction *,
			kb_dc_job_fn *);
json_t *kb__dc_cmd_template(struct kb_dc *, const struct kb_dc_interaction *,
			    kb_dc_job_fn *);
json_t *kb__dc_cmd_get_submission(struct kb_dc *,
				  const struct kb_dc_interaction *,
				  kb_dc_job_fn *);
json_t *kb__dc_cmd_submit(struct kb_dc *, const struct kb_dc_interaction *,
			  kb_dc_job_fn *);
json_t *kb__dc_cmd_admin(struct kb_dc *, const struct kb_dc_interaction *,
			 kb_dc_job_fn *);
/* /admin ping, show-stats, delete-leaderboard, export (ops.c). */
json_t *kb__dc_cmd_ops(struct kb_dc *, const struct kb_dc_interaction *,
		       kb_dc_job_fn *);
/* /admin verify-task (taskcheck.c). */
json_t *kb__dc_cmd_verify_task(struct kb_dc *, const struct kb_dc_interaction *,
			       kb_dc_job_fn *);
/* The answer to an autocomplete interaction. */
json_t *kb__dc_autocomplete(struct kb_dc *dc,
			    const struct kb_dc_interaction *it);

/* A fingerprint of everything a board's submissions depend on (its
 * task's settings, cases, gpus, deadline and files). contents: the
 * files' contents, per task file (NULL entries skipped); when NULL they
 * are read from disk. Returns 0 or -errno (a file unreadable).
 * taskcheck.c. */
int kb__dc_task_fingerprint(const struct kb_task *t, char *const *contents,
			    const size_t *lens, unsigned char out[32]);

/* ---- the tracker (submit.c) ---- */

struct kb_dc_tracker *kb__dc_tracker_new(struct kb_dc *dc, char *errstr,
					 size_t errstr_size);
/* Tells every followed submission's message that we stop following it,
 * closes the watches, stops the thread and frees. NULL is a no-op. */
void kb__dc_tracker_destroy(struct kb_dc_tracker *t);

#endif
