/* kb_foldargs: turns a decoded ResultEvent into the arguments of the
 * ranker's Lua scripts (ranker/fold.lua, ranker/progress.lua).
 *
 * This is the ranker's pure part: no I/O, no clock, no globals. Everything
 * the scripts write comes from here, so a re-delivered event produces
 * byte-identical arguments.
 *
 * Errors: functions return 0 or -EINVAL (the event cannot be folded: the
 * caller dead-letters it) or -ENOMEM, with a message in errstr.
 * Thread-safety: all functions are thread-safe; a call struct belongs to its
 * caller.
 */
#ifndef KB_FOLDARGS_H
#define KB_FOLDARGS_H

#include <stddef.h>
#include <stdint.h>

#include "kb.pb-c.h"

/* The lowercase names stored in Redis: "passed", "failed",
 * "compile_error", "timeout", "crashed", "infra_error", "suspect". An
 * unknown or unspecified value is "unspecified" (as for modes, stored by
 * their kb_mode.h names). Static strings. Stages are stored under the
 * names kb_report_stage_name() shows them by. */
const char *kb_verdict_name(Kb__Verdict verdict);

/* 1 if r counts for its leaderboard: the worker set has_score, the mode is
 * leaderboard, the verdict is passed, both the "leaderboard" (public) and
 * "private" (secret) runs are present with success and passed, and the
 * score is finite and positive. 0 otherwise (including r == NULL). */
int kb_result_is_scored(const Kb__Result *r);

/* fold.lua takes 7 keys and 9 arguments; see the script's header. */
#define KB_FOLD_NKEYS 7
#define KB_FOLD_NARGS 9

struct kb_fold_call {
	int nkeys; /* KB_FOLD_NKEYS */
	int argc;  /* KB_FOLD_NKEYS + KB_FOLD_NARGS */
	const char *argv[KB_FOLD_NKEYS + KB_FOLD_NARGS];
	size_t argvlen[KB_FOLD_NKEYS + KB_FOLD_NARGS];

	/* Read-only summary, for logging. */
	uint64_t sub_id;
	const char *gpu, *lb, *user, *mode, *verdict;
	int scored;        /* kb_result_is_scored() */
	const char *score; /* the score, shortest text that reads back
				   * exactly (at most %.17g); "" when !scored */

	/* Storage behind argv; private. */
	char *keys[KB_FOLD_NKEYS];
	uint8_t *packed;
	char id_s[24], score_s[32], submitted_s[24], done_s[24];
};

/* Fills call from ev, which must carry a Result with a nonzero submission
 * id, a non-empty leaderboard, gpu and user id (the leaderboard and gpu
 * without ':' since they are parts of keys); the event's own id and gpu,
 * when set, must match the Result's. done_ms is
 * the Result's finished_at_ms, else started_at_ms, else submitted_at_ms.
 * The packed Result stored is ev->result packed again (protobuf-c packs
 * deterministically). call's string pointers point into ev and into call:
 * keep ev alive while using call. On success free with kb_fold_call_free();
 * on error nothing needs freeing. */
int kb_foldargs_result(const Kb__ResultEvent *ev, struct kb_fold_call *call,
		       char *errstr, size_t errstr_size);

/* Frees call's storage; safe on a zeroed or already freed struct. */
void kb_fold_call_free(struct kb_fold_call *call);

/* progress.lua takes 1 key and 2 arguments. */
#define KB_PROGRESS_NKEYS 1
#define KB_PROGRESS_NARGS 2

struct kb_progress_call {
	int nkeys, argc;
	const char *argv[KB_PROGRESS_NKEYS + KB_PROGRESS_NARGS];
	size_t argvlen[KB_PROGRESS_NKEYS + KB_PROGRESS_NARGS];

	uint64_t sub_id;
	const char *gpu, *stage;

	char key_s[48], stage_ms_s[24];
};

/* Fills call from ev, which must carry a Progress and a nonzero submission
 * id. stage_ms is when the stage was reported (the ranker passes the Kafka
 * message's timestamp, so a re-delivery writes the same value). No
 * allocation: nothing to free. */
int kb_foldargs_progress(const Kb__ResultEvent *ev, int64_t stage_ms,
			 struct kb_progress_call *call, char *errstr,
			 size_t errstr_size);

#endif
