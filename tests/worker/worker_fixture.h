/* worker_fixture: what the worker's suites share.
 *
 * In-memory Submissions (so the evaluation can be tested without task.yml
 * files or a gateway), temporary directories, and running a command with
 * its output captured. Not thread-safe; tests are single-threaded.
 */
#ifndef KB_WORKER_FIXTURE_H
#define KB_WORKER_FIXTURE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "kb.pb-c.h"

/* The secret seed of every fixture submission. */
#define WF_SECRET 987654321987ULL
#define WF_SECRET_TEXT "987654321987"

/* A Submission of lang ("c", "py", ...) in mode: files eval.c and
 * submission.c (content "@SUBMISSION@", the code "int x;"), config sources
 * for c or main for py, tests "size: 1; seed: 11" and "size: 2; seed: 12",
 * benchmarks "size: 3; seed: 13" and "size: 4; seed: 14", timeouts 7, 8
 * and 9 s, ranking_by "mean", gpu CPU, the secret seed in leaderboard
 * mode. Free with kb__submission__free_unpacked(s, NULL). */
Kb__Submission *wf_submission(const char *lang, Kb__Mode mode);

void wf_add_file(Kb__Task *t, const char *name, const char *content);
void wf_set_config(Kb__Task *t, const char *key, const char *value);

/* A fresh directory under $TMPDIR or /tmp; the caller removes it. */
char *wf_tmpdir(void);

/* Runs argv (argv[0] absolute) with env_extra ("K=V", NULL-terminated)
 * added to the environment, stdout and stderr captured separately.
 * Returns the wait status, or -1; *out and *err are malloc'd. */
int wf_run(char *const argv[], char *const env_extra[], char **out, char **err,
	   double *wall_s);

/* Copies src to dst (plain files only). Returns 0 or -1. */
int wf_copy_file(const char *src, const char *dst);

#endif
