/* kb_score: turning runs into a verdict and a score. Pure, thread-safe.
 *
 * The score is the leaderboard run's benchmark means (ns) combined by
 * ranking_by: "last" the last mean, "mean" the arithmetic mean, "geom" the
 * geometric mean; reported in seconds.
 */
#ifndef KB_SCORE_H
#define KB_SCORE_H

#include <stddef.h>

/* Returns 0 with *score_s set, or -EINVAL (unknown or NULL ranking_by,
 * n == 0, a non-finite or non-positive mean); *score_s is untouched on
 * error. "geom" is exp(mean(log(x))), which cannot overflow. */
int kb_score_combine(const char *ranking_by, const double *means_ns, size_t n,
		     double *score_s);

/* How a single run of the harness ended, as the worker saw it. */
enum kb_run_end {
	KB_RUN_OK,     /* exit 0 and check: pass */
	KB_RUN_FAILED, /* the harness says tests failed (exit 112 / check: fail) */
	KB_RUN_TIMEOUT, /* killed by the wall-clock limit, or exit 114 */
	KB_RUN_CRASHED, /* signal, unexpected exit code, or a bad report */
	KB_RUN_INFRA,   /* exit 110/111/113 or 2: the platform's fault
			   * (unless user code had started, see
			   * kb_run_classify_started) */
};

/* Classifies a finished run. exit_code is the status when !signaled;
 * report_ok is 1 when the report parsed, check is its check value (1 pass,
 * 0 fail, -1 absent). In order of precedence:
 *   timed_out                        -> KB_RUN_TIMEOUT (even if signaled:
 *                                       our own SIGKILL is not a crash)
 *   signaled                         -> KB_RUN_CRASHED
 *   exit 0, report ok, check pass    -> KB_RUN_OK
 *   exit 0, report ok, check fail    -> KB_RUN_FAILED
 *   exit 0, report bad or no check   -> KB_RUN_CRASHED (the submission may
 *                                       have called exit(0) early; never a
 *                                       pass, and the user's doing)
 *   exit 112                         -> KB_RUN_FAILED (whatever the report)
 *   exit 114                         -> KB_RUN_TIMEOUT
 *   exit 2, 110, 111, 113            -> KB_RUN_INFRA
 *   any other exit code              -> KB_RUN_CRASHED
 * Note: the submission runs in the harness's process and can choose its
 * exit code, so KB_RUN_INFRA is a claim, not proof; callers should bound
 * infra retries (Submission.attempt). */
enum kb_run_end kb_run_classify(int signaled, int exit_code, int timed_out,
				int report_ok, int check);

/* 1 when exit_code is one the harness reserves for its own errors (2, 110,
 * 111, 113: KB_RUN_INFRA above), else 0. */
int kb_run_infra_exit(int exit_code);

/* 1 when the raw report (len bytes, need not be NUL-terminated or parse)
 * holds the line "user-code: started", which our harnesses write right
 * before the first call of the submission's code; else 0. Only a line
 * of exactly that text counts (a last line may lack its '\n'). A report
 * that does not parse is still searched: a submission that garbles the
 * report after the line was written must not undo it. */
int kb_run_user_started(const char *report, size_t len);

/* kb_run_classify for a run whose report may say that user code started
 * (user_started, from kb_run_user_started). From that point an exit
 * status the harness reserves for its own errors (2, 110, 111, 113) may
 * be the submission's own exit() -- it shares the harness's process --
 * so it is KB_RUN_CRASHED (the user's), not KB_RUN_INFRA. Harnesses that
 * never write the line (upstream's) are classified as by
 * kb_run_classify. Everything else is as kb_run_classify. */
enum kb_run_end kb_run_classify_started(int signaled, int exit_code,
					int timed_out, int report_ok, int check,
					int user_started);

#endif
