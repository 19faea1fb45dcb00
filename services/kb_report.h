/* kb_report: a Result as people read it, and as the public may see it.
 *
 * kb_report_render() writes the readable report that `kb-worker eval`
 * prints and that the gateway shows users (the library depends only on the
 * generated protobuf code and kb_util): the build, each run with its tests
 * and benchmarks, the score and the verdict, in the manner of upstream
 * KernelBot's reports.
 *
 * What of a secret ("private") run anyone may see, written once here for
 * every service: whether it passed, nothing else. Not its output, specs or
 * timings, which could reveal its seed; not its duration, exit status,
 * timeout or signal, through which a submission could signal what it
 * computed from its secret cases; not when it began, so its Progress is
 * shown as the ranked run it continues. kb_report_redact() applies the
 * rule to a Result before anything else (JSON, an API response, Discord)
 * shows it; kb_report_stage_name() to stages.
 *
 * Pure and thread-safe.
 */
#ifndef KB_REPORT_H
#define KB_REPORT_H

#include "kb.pb-c.h"

/* Returns a malloc'd NUL-terminated text (ends with '\n'), or NULL when
 * out of memory. */
char *kb_report_render(const Kb__Result *r);

/* Clears everything of r's secret ("private") run but its key and
 * passed; success becomes passed (one bit, not two). */
void kb_report_redact(Kb__Result *r);

/* 1 for the stage of the secret run. */
int kb_report_stage_secret(Kb__Stage s);

/* The name a stage is shown under ("queued", "compiling", "testing",
 * "benchmarking", "ranked_run", "done", "unspecified"): the secret run's
 * is "ranked_run". Static. */
const char *kb_report_stage_name(Kb__Stage s);

/* Lowercase names as the API and logs spell them ("compile_error",
 * "infra"); "unknown" for values out of range. A mode's is
 * kb_mode_label() (kb_mode.h). */
const char *kb_report_verdict_name(Kb__Verdict v);
const char *kb_report_fault_name(Kb__Fault f);

#endif
