/* kb_fold: runs the ranker's Lua scripts against Redis.
 *
 * A kb_fold owns one Redis connection and the two scripts embedded at build
 * time (ranker/fold.lua, with ranker/ranking.lua in front, and
 * ranker/progress.lua). It connects lazily and, after any I/O error, drops
 * the connection and reconnects on the next call; the caller only decides
 * when to retry.
 *
 * Return codes of the calls below:
 *   0        Redis executed the script (the write is acknowledged);
 *   -EAGAIN  not executed, or unknown whether: Redis unreachable, loading,
 *            busy, out of memory, read-only, ... Retry later; the scripts
 *            are idempotent, so retrying after an unknown outcome is safe.
 *   -EPROTO  Redis refused the script for this input (a wrong key type, a
 *            script runtime error, an unexpected reply): retrying the same
 *            input will not help.
 * errstr holds a message whenever the return is not 0.
 *
 * Thread-safety: a kb_fold belongs to one thread.
 */
#ifndef KB_FOLD_H
#define KB_FOLD_H

#include <stddef.h>

#include "kb_foldargs.h"

/* The scripts' text, generated from the .lua files at build time. */
extern const char kb_fold_lua[];
extern const char kb_progress_lua[];

/* fold.lua's return values. */
enum kb_fold_outcome {
	KB_FOLD_DUPLICATE = 0, /* kb:res:<id>:<gpu> existed: nothing changed */
	KB_FOLD_NEW = 1,       /* folded; not a new personal best */
	KB_FOLD_BEST = 2,      /* folded; the user's new best on the board */
};

/* "duplicate", "new", "personal-best"; "unknown" otherwise. */
const char *kb_fold_outcome_name(int outcome);

/* Classifies a Redis error reply's text as -EAGAIN (a server condition that
 * passes: LOADING, BUSY, OOM, READONLY, NOPERM, ... and anything unknown)
 * or -EPROTO (WRONGTYPE, or an error raised while a script ran). Pure. */
int kb_fold_error_class(const char *msg);

typedef struct kb_fold kb_fold;

/* Copies url ("redis://host:port[/db]" or "unix:/path"); timeout_ms bounds
 * connecting and each command. Does not connect. Returns NULL on ENOMEM. */
kb_fold *kb_fold_new(const char *url, int timeout_ms);

/* Connects and loads the scripts unless already connected. Returns 0 or
 * -EAGAIN. Calling it is optional: the calls below connect as needed. */
int kb_fold_connect(kb_fold *f, char *errstr, size_t errstr_size);

/* Runs fold.lua; on 0 sets *outcome to an enum kb_fold_outcome value. */
int kb_fold_result(kb_fold *f, const struct kb_fold_call *call, int *outcome,
		   char *errstr, size_t errstr_size);

/* Runs progress.lua; on 0 sets *applied to 1, or 0 when the submission was
 * already done. */
int kb_fold_progress(kb_fold *f, const struct kb_progress_call *call,
		     int *applied, char *errstr, size_t errstr_size);

/* Closes the connection and frees. NULL is a no-op. */
void kb_fold_destroy(kb_fold *f);

#endif
