/* kb_report: a Result as people read it, and as the public may see it.
 *
 * kb_report_render() writes the readable report that `kb-worker eval`
 * prints and that the gateway shows users (the library depends only on the
 * generated protobuf code and kb_util): the build, each run with its tests
 * and benchmarks, the score and the verdict, in the manner of upstream
 * KernelBot's reports.
 *
 * The secret run is shown only as passed or failed: never its output, its
 * specs or its timings, which could reveal the secret seed.
 * kb_report_redact() applies the same rule to a Result before anything
 * else (JSON, an API response) shows it to a user.
 *
 * Pure and thread-safe.
 */
#ifndef KB_REPORT_H
#define KB_REPORT_H

#include "kb.pb-c.h"

/* Returns a malloc'd NUL-terminated text (ends with '\n'), or NULL when
 * out of memory. */
char *kb_report_render(const Kb__Result *r);

/* Removes from r everything of its secret ("private") run except key,
 * success, passed, exit_code, duration_s, timed_out and signal. */
void kb_report_redact(Kb__Result *r);

/* Lowercase names as the API and logs spell them ("compile_error",
 * "infra", "leaderboard"); "unknown" for values out of range. */
const char *kb_report_verdict_name(Kb__Verdict v);
const char *kb_report_fault_name(Kb__Fault f);
const char *kb_report_mode_name(Kb__Mode m);

#endif
