/* kb_result: reading a final result as the API returns it.
 *
 * Three shapes reach the client, and every function here accepts each:
 *  1. The data of the streaming endpoint's "result" event (upstream
 *     KernelBot: {"status":"success","results":[FullResult...],
 *     "reports":["text"...]}), possibly with our additions "verdict",
 *     "passed", "score", "report", "submission_id".
 *  2. A polled submission record, GET /user/submissions/{id}, from our
 *     gateway: {"id","status","done","stage","verdict","score","report",
 *     "error","runs":[{"mode","passed","score",...}],...}.
 *  3. The same record from upstream KernelBot: {"id","done","runs":[...]}.
 *
 * Pure and thread-safe; nothing here owns or modifies the json_t.
 */
#ifndef KB_RESULT_H
#define KB_RESULT_H

#include <stddef.h>

#include <jansson.h>

enum kb_outcome {
	KB_OUTCOME_UNKNOWN = 0, /* nothing tells whether it passed */
	KB_OUTCOME_PASSED,
	KB_OUTCOME_FAILED, /* the submission's fault: wrong, crash, ... */
	KB_OUTCOME_INFRA,  /* the platform's fault: not charged */
};

/* Decides the outcome, in this order: the "job" object's "status"
 * (upstream's: "failed", "timed_out" and "hacked" are FAILED, why is the
 * job's "error"; INFRA when the verdict is "infra_error"; other statuses
 * decide nothing); a "verdict" string ("passed";
 * "infra_error" is INFRA; anything else FAILED); a "passed" boolean; a
 * record whose "status" is "failed" with no verdict (the platform gave up
 * on it: INFRA); the upstream "results" list (every result's "success",
 * every run's compilation and run "success"/"passed" must be true); the
 * "runs" list of a record (every "passed" true). An empty list or none of
 * these is UNKNOWN. why (may be NULL) receives a short reason such as
 * "verdict compile_error" or "run 'test' did not pass". */
enum kb_outcome kb_result_outcome(const json_t *res, char *why,
				  size_t why_size);

/* 1 if a polled record is finished: "done" is true, or, without "done",
 * "status" is "done" or "failed". */
int kb_result_done(const json_t *rec);

/* The score in seconds: a top-level "score" number, else the first
 * non-secret run's "score". Returns 1 with *score set, or 0. */
int kb_result_score(const json_t *res, double *score);

/* The human-readable report: the "reports" strings, else "report", else
 * a summary built from "results" or "runs", followed by any "error" or
 * "detail". Returns a malloc'd NUL-terminated string ending in a newline,
 * or "" (still malloc'd) when there is nothing to say; NULL only when
 * memory runs out. */
char *kb_result_render(const json_t *res);

/* Seconds in a readable unit ("1.234 s", "56.7 ms", "12.3 µs",
 * "450 ns"). */
void kb_fmt_seconds(double s, char *out, size_t out_size);

#endif
