/* kb_submission: the Submission message for a loaded task and a file.
 *
 * Builds what the gateway publishes: the task's files resolved to their
 * contents (the "@SUBMISSION@" entry carrying the code), its lang, config,
 * cases, timeouts and ranking_by, and for ranked runs the secret seed.
 * `kb-worker eval` uses it so a local evaluation is exactly a queued one.
 * Free of worker state, so the gateway may link it too.
 *
 * Thread-safe.
 */
#ifndef KB_SUBMISSION_H
#define KB_SUBMISSION_H

#include <stddef.h>
#include <stdint.h>

#include "kb.pb-c.h"
#include "kb_task.h"

struct kb_submission_args {
	uint64_t id;
	const char *user_id, *user_name;
	const char *gpu;
	Kb__Mode mode;
	const char *file_name;
	const void *code;
	size_t code_len;
	int has_secret_seed; /* only for MODE_LEADERBOARD */
	uint64_t secret_seed;
	int64_t submitted_at_ms;
	const Kb__ProfileRequest *profile; /* MODE_PROFILE: copied; NULL: none */
};

/* Returns a malloc'd tree (free with kb__submission__free_unpacked(s,
 * NULL)), or NULL with errstr set when a task file cannot be read. */
Kb__Submission *kb_submission_build(const struct kb_task *t,
				    const struct kb_submission_args *a,
				    char *errstr, size_t errstr_size);

#endif
