/* kb_gw_results: Results and submissions as the API shows them, in the
 * upstream KernelBot shapes (FullResult of the streaming endpoint, the
 * run rows of /user/submissions/{id}), plus our own fields.
 *
 * Every Result given here must have been redacted (kb_report_redact): the
 * secret run then carries nothing but whether it passed, and these
 * functions show what is left as it is.
 * Pure (no I/O) and thread-safe.
 */
#ifndef KB_GW_RESULTS_H
#define KB_GW_RESULTS_H

#include <jansson.h>
#include <stdint.h>

#include "kb.pb-c.h"
#include "store.h"

/* A JSON string of s (invalid UTF-8 replaced), or null for NULL. */
json_t *kb_gw_jstr(const char *s);
/* A JSON number from decimal text, or null when absent or not a number. */
json_t *kb_gw_jnum(const char *s);
/* Epoch milliseconds as an ISO 8601 string, or null when ms <= 0. */
json_t *kb_gw_jiso(int64_t ms);

/* Upstream's FullResult: {success, error, system, runs: {key: {start,
 * end, compilation, run, profile}}}. */
json_t *kb_gw_result_full(const Kb__Result *r);

/* The payload of the SSE "result" event: {"status": "success",
 * "results": [FullResult], "reports": [text], "submission_id", "verdict",
 * "score"}. */
json_t *kb_gw_result_event(const Kb__Result *r, uint64_t id);

/* Upstream's run rows: [{start_time, end_time, mode, secret, runner,
 * score, passed, result?}] (+ success, exit_code, duration, timed_out).
 * "result" only for public test and benchmark runs. */
json_t *kb_gw_result_runs(const Kb__Result *r);

/* Upstream's job object {status, error} for a stored submission:
 * status "pending" (queued), "running", "succeeded" (it ran: see the runs
 * and verdict), "timed_out", "failed" (infrastructure). */
json_t *kb_gw_job_json(const char *status, const char *verdict,
		       const char *error);

/* GET /user/submissions/{id} (and the admin view): the stored record and,
 * when done, its Result. board_id is the board's id (0 when the board is
 * gone). now_ms for "elapsed_ms" of unfinished ones. with_code adds the
 * code. */
json_t *kb_gw_submission_json(uint64_t id, const struct kb_gw_sub_rec *rec,
			      long board_id, int64_t now_ms, int with_code);

#endif
