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
#include "store/store.h"

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
 * "score", "gpu", "mode", "job": {"status", "error"}}. */
json_t *kb_gw_result_event(const Kb__Result *r, uint64_t id);

/* Upstream's run rows: [{start_time, end_time, mode, secret, runner,
 * score, passed, result?, diagnostics?}] (+ success, exit_code, duration,
 * timed_out; profile for profile runs). "result" and "diagnostics"
 * (stdout, stderr, success, exit_code, duration, compilation) only for
 * public test and benchmark runs: the owner's view. A failed build is one
 * row, not passed, under kb_gw_first_run_key(). */
json_t *kb_gw_result_runs(const Kb__Result *r);

/* A submission's outcome as upstream's job object tells it, and as
 * popcorn-cli acts on it. status: "pending" (queued), "running",
 * "succeeded" (it ran and passed; a ranked one was ranked), "failed" (a
 * run failed, the build failed, a ranked submission was not ranked, or
 * the platform gave up on it), "timed_out" (a run ran out of its time),
 * "hacked" (our verdict "suspect": timings the device cannot reach).
 * error: why, in a sentence ("" for pending, running, succeeded); for a
 * ranked submission that is not ranked it ends "it will not appear on the
 * leaderboard". */
struct kb_gw_job {
	const char *status; /* static */
	char error[512];
};
/* What the outcome is decided from: the stored record's fields (any may
 * be NULL) and, when there is one, its (redacted) Result. */
struct kb_gw_job_in {
	uint64_t id;
	const char *status;  /* kb:sub status: queued, running, done, failed */
	const char *mode;    /* submission mode name */
	const char *verdict; /* verdict name, when done */
	int scored;          /* a score was recorded */
	const char *gpu;
	const char *error;        /* kb:sub error (the gateway's) */
	const Kb__Result *result; /* may be NULL (lists read no Result) */
};
void kb_gw_job_of(const struct kb_gw_job_in *in, struct kb_gw_job *out);
/* The same for a final Result alone (the SSE result event, Discord). */
void kb_gw_job_of_result(const Kb__Result *r, uint64_t id,
			 struct kb_gw_job *out);
/* {"status", "error"} of kb_gw_job_of(). */
json_t *kb_gw_job_json(const struct kb_gw_job_in *in);

/* The key of the first run a submission mode makes ("test", "benchmark",
 * "profile"; a ranked submission starts with "test"): where a failed
 * build is shown. Static. */
const char *kb_gw_first_run_key(Kb__Mode m);

/* GET /user/submissions/{id} (and the admin view): the stored record and,
 * when done, its Result. board_id is the board's id (0 when the board is
 * gone). now_ms for "elapsed_ms" of unfinished ones. with_code adds the
 * code. */
json_t *kb_gw_submission_json(uint64_t id, const struct kb_gw_sub_rec *rec,
			      long board_id, int64_t now_ms, int with_code);

#endif
