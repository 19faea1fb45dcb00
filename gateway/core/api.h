/* gw_api: the gateway's stable in-process API for other front ends.
 *
 * The HTTP handlers and the Discord interactions code (discord/discord.h)
 * create submissions and follow them through the same three calls, so a
 * submission behaves the same whichever door it came in by:
 *
 *   kb_gw_submit()       validate, apply policy, record, publish; returns
 *                        the id, or an HTTP status with a detail.
 *   kb_gw_watch_open()   subscribe to one submission's progress and result
 *                        (status events, then exactly one final event);
 *   kb_gw_watch_next()/kb_gw_watch_wait()   take events; _close() ends it
 *                        (these three are the hub's: hub.h).
 *
 * Users: a submission names an existing user (kb:user:<id>). Front ends
 * that know people by an outside identity (Discord, GitHub) map it to a
 * user id with kb_gw_user_external(), which creates the user on first use.
 * The OAuth login of the CLI (/auth/cli/discord) creates the same user id,
 * so a person is one user whichever way they arrive.
 *
 * Thread-safety: every call here is thread-safe. kb_gw_submit() blocks up
 * to KB_KAFKA_TIMEOUT_MS (+2 s) for the broker's acknowledgement and does
 * Redis round trips on the calling thread's own connection. A watch belongs
 * to one consumer at a time (one thread takes its events).
 */
#ifndef KB_GW_API_H
#define KB_GW_API_H

#include <stddef.h>
#include <stdint.h>

#include "base/hub.h"
#include "kb.pb-c.h"

struct kb_gw;

/* ---- submitting ---- */

struct kb_gw_submit_req {
	const char *user_id; /* an existing kb:user:<id> */
	const char *lb;      /* leaderboard name */
	const char *gpu;     /* one of the board's gpus */
	const char *mode;    /* "test", "benchmark", "profile", "leaderboard" */
	const char *file_name; /* client's name; cleaned (NULL: "submission") */
	const char *code;      /* the file; need not be NUL-terminated */
	size_t code_len;
	/* Admin submissions skip the deadline, visibility, rate limits and
	 * the maintenance stop (never the ban: a banned user stays out). */
	int admin;
	/* Profile mode only, optional: what popcorn-cli's POST /profile asks
	 * for (copied; checked against the task: see kb_gw_profile_check). */
	const Kb__ProfileRequest *profile;
	/* Optional: open a watch on the new submission after it is recorded
	 * and before it is published, so that not even the first event can
	 * be missed (res->watch; close it with kb_gw_watch_close). wake and
	 * wake_ctx as for kb_gw_watch_open; watch_tick_ms > 0 also wakes it
	 * that often (keep-alives). */
	int open_watch;
	kb_gw_wake_fn wake;
	void *wake_ctx;
	int watch_tick_ms;
};

struct kb_gw_submit_res {
	uint64_t id;        /* on success */
	int status;         /* 0 on success, else the HTTP status to answer */
	char detail[384];   /* on failure: a sentence for the user */
	long retry_after_s; /* with 429: seconds until a slot frees */
	/* On success, the backlog of the gpu's queue when last measured
	 * (runner_queue in the 202 answer); -1 when unknown. */
	long queued_jobs;
	/* With req->open_watch, on success: the watch (NULL if it could not
	 * be opened; the submission is made all the same). */
	struct kb_gw_watch *watch;
};

/* Validates (sizes, UTF-8, mode, board, gpu), applies policy (ban, maintenance stop,
 * deadline, closed board access, hourly rate limit), records the
 * submission in Redis and publishes it to kb.submissions.<gpu>, waiting for
 * the broker. Returns 0 with res->id set, or a negative code with
 * res->status and res->detail set (res->status is a 4xx or 5xx: 400 bad
 * input, 403 banned or no access, 404 unknown board/gpu, 413 too large,
 * 429 rate limited, 503 stopped / store or queue unavailable, 500 other).
 * A submission that got an id but could not be queued is recorded as
 * failed (status 503 then). #!POPCORN / //!POPCORN directives in the code
 * are not interpreted: the caller's board and gpu are authoritative (the
 * CLI resolves directives itself and lets flags override them). Never
 * logs the code or the secret seed. */
int kb_gw_submit(struct kb_gw *g, const struct kb_gw_submit_req *req,
		 struct kb_gw_submit_res *res);

/* Maps an outside identity to a user id "<provider>-<ext_id>" (provider
 * "discord" or "github", ext_id [0-9A-Za-z_-]{1,64}), creating kb:user with
 * that name when missing (an existing user keeps its name). Writes the id
 * into out (out_size >= 96). Returns 0, -EINVAL (bad provider/id/name),
 * -EIO (Redis unavailable). */
int kb_gw_user_external(struct kb_gw *g, const char *provider,
			const char *ext_id, const char *name, char *out,
			size_t out_size);

/* ---- following a submission (the events and kb_gw_watch_next, _wait
 * and _close are hub.h's) ---- */

/* Subscribes to submission id. Open the watch before the submission can
 * produce events (kb_gw_submit() returns only after the publish, so a
 * front end opens the watch right after it and the gateway replays the
 * stored state: see below). The first event is normally a STATUS (or a
 * final event when the submission had already finished): the state read
 * from Redis when the watch opened (when Redis is unreachable then, the
 * gateway polls it again a few seconds later). Events of one watch are in order;
 * STATUS events may be coalesced when the reader is slow (the queue is
 * bounded), the final event is never dropped. Returns NULL when out of
 * memory or the gateway is shutting down. */
struct kb_gw_watch *kb_gw_watch_open(struct kb_gw *g, uint64_t id,
				     kb_gw_wake_fn wake, void *ctx);

/* ---- rendering a Result for people ---- */

/* The readable report (as /user/submissions/{id} "report"), malloc'd. */
char *kb_gw_result_report(const Kb__Result *r);

#endif
