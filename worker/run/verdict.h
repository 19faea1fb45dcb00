/* kb_verdict: from what happened during an evaluation to the Result's
 * verdict, fault, error line and score.
 *
 * The evaluation records each stage's outcome here (a setup failure, the
 * build, then one kb_run_outcome per harness run it started) and
 * kb_verdict_assemble() decides, in this order of precedence: an
 * infrastructure failure anywhere, then a failed build, then the first run
 * that did not pass, then a suspect measurement, else passed. A ranked
 * submission gets a score only when every planned run passed and nothing
 * was suspect.
 *
 * Error lines never carry anything derived from the secret run's output:
 * for it they say only that it failed, timed out or crashed.
 *
 * Pure and thread-safe.
 */
#ifndef KB_VERDICT_H
#define KB_VERDICT_H

#include <stddef.h>

#include "kb.pb-c.h"
#include "kb_popcorn.h"
#include "kb_score.h"

enum kb_build_state {
	KB_BUILD_NONE, /* not reached, or the language has no build */
	KB_BUILD_OK,
	KB_BUILD_FAILED,      /* the compiler rejected the code (user) */
	KB_BUILD_TIMEOUT,     /* the compiler ran past its limit (user) */
	KB_BUILD_UNSUPPORTED, /* this worker cannot build the language */
	KB_BUILD_INFRA,       /* the build could not be run at all */
};

struct kb_run_outcome {
	const char *key;   /* RunResult.key */
	const char *label; /* "tests", "ranked run", ... */
	enum kb_run_end end;
	int exited, exit_code;
	int signal;       /* nonzero when killed by a signal */
	int oom;          /* killed for exceeding the memory limit */
	double timeout_s; /* the run's limit, for the message */
	int bad_report;   /* the report was missing, cut or malformed */
	int user_started; /* the report said "user-code: started" */
	int suspect;      /* a measurement that must not be ranked */
	char why[192];    /* detail for suspect and infra ends, and
			       * for crashes the harness explained */
	double *means;    /* benchmark means (ns), malloc'd, or NULL */
	size_t nmeans;
};

struct kb_verdict_in {
	Kb__Mode mode;
	const char *ranking_by;
	const char *infra;    /* a setup failure, or NULL */
	const char *rejected; /* the submission's own request cannot
				      * be served (a profile request for a
				      * case the task lacks), or NULL */
	enum kb_build_state build;
	int build_exit_code;
	double build_timeout_s;
	const char *build_msg; /* extra words for UNSUPPORTED/INFRA */
	const struct kb_run_outcome *runs; /* in the order they ran */
	size_t nruns;
	size_t nplanned;
};

struct kb_verdict {
	Kb__Verdict verdict;
	Kb__Fault fault;
	int has_score;
	double score;    /* seconds */
	char error[256]; /* empty when passed */
};

void kb_verdict_assemble(const struct kb_verdict_in *in,
			 struct kb_verdict *out);

/* Inspects a parsed report for measurements that must not be ranked: a
 * benchmark.<i>.status of "suspect", or more device time reported
 * (sum of mean x runs) than the wall time the worker observed from
 * outside. Returns 1 with why set, else 0. */
int kb_verdict_suspect(const struct kb_popcorn *p, double wall_s, char *why,
		       size_t why_size);

/* 1 if a report key of the secret run may be kept in the Result: counts,
 * statuses and timings. Specs, messages and errors may quote seed-derived
 * values and are dropped. */
int kb_verdict_private_key_ok(const char *key);

/* Frees o->means. */
void kb_run_outcome_clear(struct kb_run_outcome *o);

#endif
