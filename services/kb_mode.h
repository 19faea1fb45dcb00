/* kb_mode: the submission modes and their names, the one vocabulary of
 * every service (gateway routes and store, Discord, web, worker, ranker,
 * reports).
 *
 * Pure and thread-safe; the names are static strings.
 */
#ifndef KB_MODE_H
#define KB_MODE_H

/* Submission modes, numbered as kb.proto's Mode (KB__MODE__MODE_*), so
 * that a value converts either way with a cast; tests/pure checks the
 * numbering. KB_MODE_INVALID is the proto's MODE_UNSPECIFIED. */
enum kb_mode {
	KB_MODE_INVALID = 0,
	KB_MODE_TEST = 1,
	KB_MODE_BENCHMARK = 2,
	KB_MODE_PROFILE = 3,
	KB_MODE_LEADERBOARD = 4,
};

/* "test", "benchmark", "profile", "leaderboard" (upstream's names, case
 * as upstream's CLI sends them: lower case). Anything else, including the
 * informal "ranked" and NULL, is KB_MODE_INVALID. */
enum kb_mode kb_mode_parse(const char *s);

/* The name of m, an enum kb_mode or a Kb__Mode (numbered alike): "" when
 * m is none of the four modes. */
const char *kb_mode_name(int m);

/* As kb_mode_name, with fallback (returned as given) when m is none of
 * the four modes. */
const char *kb_mode_name_or(int m, const char *fallback);

/* The name for reports and logs: as kb_mode_name, "unspecified" for
 * KB_MODE_INVALID and "unknown" for a value out of range. */
const char *kb_mode_label(int m);

#endif
