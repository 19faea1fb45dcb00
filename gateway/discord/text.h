/* kb_dc_text: everything the Discord front end says, as pure functions:
 * message length rules, splitting, tables, times, the progress message,
 * the short result report with its placement, and top-3 announcements.
 *
 * Lengths: Discord limits a message to 2000 characters, counted as
 * JavaScript counts them (UTF-16 code units), so kb_dc_text_units() counts
 * that way. Nothing here cuts a word in two without saying so: text is cut
 * at a line break, else at a space, and a note says that (and where) the
 * rest went.
 *
 * All strings returned are malloc'd (caller frees) and valid UTF-8; NULL
 * only when out of memory unless noted. Inputs must be valid UTF-8 (use
 * kb_dc_text_clean() on anything that came from a user or a program).
 * Pure and thread-safe.
 */
#ifndef KB_DC_TEXT_H
#define KB_DC_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "kb.pb-c.h"

/* UTF-16 code units of a UTF-8 string. */
size_t kb_dc_text_units(const char *s);

/* A copy of s[0..len) that is valid UTF-8 (invalid bytes become U+FFFD),
 * without NUL bytes, with backticks replaced by ' when no_ticks (for text
 * shown inside code spans), and cut to at most max_units (0: no limit)
 * with "…" when cut. */
char *kb_dc_text_clean(const char *s, size_t len, size_t max_units,
		       int no_ticks);

/* s if it fits in max units, else s cut at the last line break or space
 * that leaves room for note (a hard cut only when the last 200 units hold
 * neither), followed by note. note may be NULL ("…"). */
char *kb_dc_text_fit(const char *s, size_t max, const char *note);

/* Splits s into parts of at most max units each, cutting at line breaks,
 * else spaces; a part that had to be cut inside a word ends with a note
 * saying the word continues. Returns 0 with *parts (each malloc'd, and the
 * array) and *n, or -ENOMEM. An empty s gives one empty part. */
int kb_dc_text_split(const char *s, size_t max, char ***parts, size_t *n);
void kb_dc_text_free_parts(char **parts, size_t n);

/* Packs lines into messages of at most max units: title first (may be
 * NULL), then the lines, inside a ``` block when code. A line that alone
 * does not fit is cut with a note. Same result convention as split. */
int kb_dc_text_pack(const char *title, const char *const *lines, size_t n,
		    int code, size_t max, char ***msgs, size_t *nmsgs);

/* A duration in the unit that reads best: "812 ns", "1.23 µs", "45.6 ms",
 * "1.20 s" (three significant digits). */
void kb_dc_fmt_seconds(double s, char *out, size_t size);

/* The mode as users say it: "test", "benchmark", "profile", "ranked". */
const char *kb_dc_mode_label(const char *mode);

/* ---- a submission's message ---- */

#define KB_DC_STAGES_MAX 8

struct kb_dc_sub_head {
	uint64_t id;
	const char *lb, *gpu, *mode, *file_name; /* mode as the API names it */
};

struct kb_dc_progress {
	struct kb_dc_sub_head head;
	size_t nstages;
	char stages[KB_DC_STAGES_MAX][24]; /* in the order reached */
	int64_t stage_at_ms[KB_DC_STAGES_MAX];
	char message[160];  /* the worker's note on the current stage */
	long position;      /* queued: jobs ahead + 1, else -1 */
	int64_t started_ms; /* when we accepted the submission */
};

/* Records a stage (a repeated stage only updates the message). */
void kb_dc_progress_stage(struct kb_dc_progress *p, const char *stage,
			  const char *message, long position, int64_t now_ms);
char *kb_dc_render_progress(const struct kb_dc_progress *p, int64_t now_ms);

/* Where a ranked result stands, as the tracker found it after the ranker
 * folded it. */
struct kb_dc_placement {
	int known;         /* 0: the ranking could not be read in time */
	int is_best;       /* this submission is now the user's entry */
	long rank;         /* the user's rank (1-based), 0 unknown */
	int first_success; /* the user had no entry before */
	int had_prev;
	double prev_score; /* the user's best before, when had_prev */
	double best_score; /* the user's entry now */
};

/* The short report: header, verdict and score, placement (ranked), tests
 * and benchmarks in one line each, the first failure or the compile
 * error's first lines; at most max units, ending with a pointer to the
 * attached full report when attached. pl may be NULL. */
char *kb_dc_render_result(const struct kb_dc_sub_head *h, const Kb__Result *r,
			  const struct kb_dc_placement *pl, int attached,
			  size_t max);

/* The public one-liner of a ranked success ("<@user>'s submission 42 to
 * `lb`: 🥇 first place on CPU: 1.23 µs"). */
char *kb_dc_render_ranked_line(const char *discord_user_id,
			       const struct kb_dc_sub_head *h,
			       const struct kb_dc_placement *pl, double score);

/* An error for the submitter ("❌ Submission to `lb` refused: ..."). */
char *kb_dc_render_refusal(const char *what, const char *detail);

/* ---- top 3 ---- */

struct kb_dc_podium {
	size_t n; /* 0..3 */
	char user_id[3][96];
	char user_name[3][128];
	double score[3];
};

/* The announcement when the top 3 of lb/gpu changed between before and
 * after (someone took #1, entered or left), or NULL when it did not
 * (or when out of memory). Users of the platform whose id is
 * "discord-<snowflake>" are mentioned as <@snowflake>. */
char *kb_dc_render_announce(const char *lb, const char *gpu,
			    const struct kb_dc_podium *before,
			    const struct kb_dc_podium *after);

/* The value of a "#!POPCORN <key> <value>" (or "//!POPCORN") line of
 * a submission (key case-insensitive; "gpu" also matches "gpus"; the
 * first word of the value) into out. Returns 1 when found, 0 when not,
 * -EINVAL when the value does not fit. */
int kb_dc_directive(const char *code, size_t len, const char *key, char *out,
		    size_t size);

/* The Discord snowflake of a platform user id "discord-<id>", or NULL. */
const char *kb_dc_snowflake_of(const char *user_id);

#endif
