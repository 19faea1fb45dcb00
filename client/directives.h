/* kb_directives: the "#!POPCORN" header lines of a submission file.
 *
 * A submission names its leaderboard and GPU in comment lines, in either
 * comment style:
 *
 *     #!POPCORN leaderboard vectorsum_cpu        (Python, shell, ...)
 *     //!POPCORN gpu CPU                         (C, C++, CUDA, HIP)
 *
 * Rules, chosen so that a file popcorn-cli accepts means the same here:
 *  - The marker "#!POPCORN" or "//!POPCORN" starts the line (column 0,
 *    case-sensitive) and is followed by whitespace. Words are separated by
 *    spaces or tabs. The whole file is scanned, as popcorn-cli does,
 *    although directives belong in the first lines.
 *  - The second word, case-insensitive, is the directive: "leaderboard"
 *    takes one name; "gpu" (or "gpus") takes one or more GPU names, of
 *    which the first is used (gpu_count says how many were listed).
 *    Unknown directives are ignored, so newer files still parse.
 *  - Lines may end in LF or CRLF; a UTF-8 byte order mark is skipped.
 *  - A directive without a value, a value longer than the field, or the
 *    same directive twice with different values is an error: guessing
 *    which one the author meant could evaluate the wrong problem.
 *
 * Pure and thread-safe.
 */
#ifndef KB_DIRECTIVES_H
#define KB_DIRECTIVES_H

#include <stddef.h>

#define KB_DIR_NAME_MAX 128

struct kb_directives {
	char leaderboard[KB_DIR_NAME_MAX]; /* "" when absent */
	char gpu[KB_DIR_NAME_MAX];         /* first GPU named, "" when absent */
	int gpu_count;                     /* GPUs named on the gpu line */
	int leaderboard_line, gpu_line;    /* 1-based; 0 when absent */
};

/* Parses buf[0..len) (need not be NUL-terminated). Returns 0 with *out
 * filled, or -EINVAL with *out zeroed and errstr naming the line. */
int kb_directives_parse(const char *buf, size_t len, struct kb_directives *out,
			char *errstr, size_t errstr_size);

/* What a submission goes to: command-line flags win over directives. */
struct kb_target {
	char leaderboard[KB_DIR_NAME_MAX];
	char gpu[KB_DIR_NAME_MAX];
};

/* Combines flags (NULL or "" when not given) with the directives d (may
 * be NULL). Returns 0 with *out filled, or -EINVAL when the leaderboard or
 * the GPU is known from neither, or a flag is too long (errstr says which
 * and how to supply it). warn (may be NULL) receives "" or notes for the
 * user, one per line: a flag overriding a different directive, several
 * GPUs listed. */
int kb_directives_resolve(const struct kb_directives *d, const char *flag_lb,
			  const char *flag_gpu, struct kb_target *out,
			  char *warn, size_t warn_size, char *errstr,
			  size_t errstr_size);

#endif
