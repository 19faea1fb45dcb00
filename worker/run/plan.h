/* kb_plan: which harness runs a submission mode asks for.
 *
 * This is docs/internals.md's run table in code: each entry says the run's
 * key in the Result, the harness mode, which cases it gets, whether their
 * seeds are combined with the secret, the progress stage and the wall-clock
 * limit. Each later run happens only if the earlier one passed (the caller
 * enforces that).
 *
 * Pure and thread-safe; the plan points into static strings and into the
 * task it was made from.
 */
#ifndef KB_PLAN_H
#define KB_PLAN_H

#include <stddef.h>

#include "kb.pb-c.h"

/* Ranked runs are 3; profile mode has one run per profiled benchmark
 * case, at most this many (later cases are not profiled). */
#define KB_PLAN_MAX 16
#define KB_PLAN_DEFAULT_TIMEOUT_S 180.0

enum kb_cases_sel {
	KB_CASES_TESTS,
	KB_CASES_BENCHMARKS,
	KB_CASES_LAST_BENCHMARK, /* ranked run of a task ranked by "last" */
	KB_CASES_ONE_BENCHMARK,  /* the benchmark case `index` alone */
};

struct kb_plan_run {
	char key[24];             /* RunResult.key: "test", "profile.3" */
	const char *harness_mode; /* argv[1] of the harness */
	const char *label;        /* for reports: "tests", "ranked run" */
	const char *progress;     /* for progress: "testing", ... */
	enum kb_cases_sel cases;
	int secret; /* combine case seeds with the secret seed */
	Kb__Stage stage;
	double timeout_s; /* the task's limit for this run, capped */
	size_t index;     /* KB_CASES_ONE_BENCHMARK's case */
	int profile;      /* run under the profiler (profile.N) */
};

/* Fills out[] with the runs of mode for task t. A task timeout of 0 means
 * KB_PLAN_DEFAULT_TIMEOUT_S; cap_s > 0 caps every limit. Profile mode, as
 * upstream's: one run "profile.N" per benchmark case N, with that case
 * alone (the first KB_PLAN_MAX cases), or only case req->benchmark_index
 * when the request names one (req may be NULL). Returns the number of
 * runs (1..KB_PLAN_MAX); -EINVAL for an unknown mode; -ERANGE when the
 * request names a case the task does not have, or the task has no
 * benchmark cases to profile. */
int kb_plan_make(Kb__Mode mode, const Kb__Task *t,
		 const Kb__ProfileRequest *req, double cap_s,
		 struct kb_plan_run out[KB_PLAN_MAX]);

/* The case lines run r gets from t: a pointer into t->tests or
 * t->benchmarks, with *n set (0 when the task has none). */
char *const *kb_plan_cases(const struct kb_plan_run *r, const Kb__Task *t,
			   size_t *n);

#endif
