/* What eval.c and eval_ready.c share: one job as it is evaluated, the
 * environment and sandbox options of its commands, and the steps each
 * file takes for the other. eval.c evaluates (kb_eval_run); eval_ready.c
 * keeps the held Python run a job may take for its first run
 * (eval_ready.h) and hands it over. Not for other callers.
 *
 * Thread-safety: a struct job belongs to the thread evaluating it; the
 * held run's hooks take the kb_eval_ready's lock themselves.
 */
#ifndef KB_EVAL_INT_H
#define KB_EVAL_INT_H

#include <limits.h>
#include <stddef.h>

#include "build.h"
#include "jobdir.h"
#include "kb.pb-c.h"
#include "kb_sandbox.h"
#include "plan.h"
#include "python.h"
#include "verdict.h"

struct kb_eval_opts;
struct kb_eval_ready;

struct job {
	const struct kb_eval_opts *o;
	const Kb__Submission *s;
	const Kb__Task *t;
	Kb__Result *r;
	struct kb_jobdir jd;
	char cache[PATH_MAX];
	char toolkit[64];
	int loads_submission;    /* the harness loads J/out/submission.so */
	int python;              /* a py task: the interpreter's environment */
	int seed_env;            /* give the run POPCORN_SEED (py secret run) */
	int ncu_env;             /* the run is under ncu: POPCORN_NCU=1 */
	char ncu[PATH_MAX];      /* profile mode of cu tasks: the ncu to run */
	char ncu_root[PATH_MAX]; /* its installation, bound into runs */
	struct kb_eval_ready *held; /* the held run this job took for its
				     * first run (J is the held run's), or
				     * NULL */
	size_t trace_left; /* bytes of traces the Result may still take */
	struct kb_plan_run plan[KB_PLAN_MAX];
	size_t nplan;
	struct kb_run_outcome runs[KB_PLAN_MAX];
	char infra[256];
	char rejected[256];
	char build_msg[256];
	struct kb_verdict_in vin;
};

/* The complete environment of one command: nothing is inherited. HOME is
 * the job's J/home (the user's caches, kept across the job's commands),
 * TMPDIR the command's own scratch. Python tasks also get their caches in
 * J/home and the interpreter's directory first on PATH (a virtual
 * environment's tools: ninja). The report channel's descriptor, the
 * submission's shared object and the secret seed (py: POPCORN_SEED, as
 * upstream's eval.py reads it) are given only to harness runs; the GPU's
 * variables to every command that gets the GPU. */
struct env {
	char *v[32];
	size_t n; /* entries of v */
	char home[PATH_MAX + 8], tmpdir[PATH_MAX + 8], path[2 * PATH_MAX + 64];
	char ld[PATH_MAX + 4096], visible[192], sub[PATH_MAX + 32];
	char cuda[PATH_MAX + 16], seed[48];
	char cache[4][PATH_MAX + 32];
};

/* A command's sandbox options and the storage they point into. */
struct sb_args {
	struct env e;
	char *ro[7 + KB_PYTHON_DIRS];
	char *rw[2];
	struct kb_sandbox_opts so;
};

/* ---- eval.c's, for the held run ---- */

/* The options of argv with J/step as its writable scratch, starting in
 * cwd (NULL = J/step): see eval.c. want_report: a harness run (the report
 * pipe, its variables); gpu: give it the device. */
void kb__eval_sandbox_args(const struct job *j, const struct kb_argv *argv,
			   const char *cwd, double timeout_s, int want_report,
			   int gpu, size_t output_limit, struct sb_args *a);

/* Makes the run's fresh scratch (unless J/step is a held run's, fresh
 * already) and writes its cases file there. Returns 0, or -1 with the
 * job's infra error set. */
int kb__eval_prepare_run(struct job *j, const struct kb_plan_run *p);

/* 1 when run p of the job runs under Nsight Compute. */
int kb__eval_under_ncu(const struct job *j, const struct kb_plan_run *p);

/* ---- eval_ready.c's, for a job ---- */

/* Waits for a held run still starting, which would disturb the job's
 * timings (at most a minute; one not ready by then is ended). */
void kb__eval_ready_settle(struct kb_eval_ready *rd);

/* Whether the job's first command can be the held run (its first harness
 * run, of a Python task, with the environment every held run has). */
int kb__eval_ready_fits(const struct job *j, const struct kb_builder *b);

/* Takes the held run for job j when one is waiting: J becomes the job's
 * directory (its J/step the scratch of the first run) and j->held rd. */
void kb__eval_ready_take(struct kb_eval_ready *rd, struct job *j);

/* Hands argv to the held run j took. Returns 1 when it runs there; 0
 * when it cannot (the held run ended): then J/step is fresh again with
 * the cases for a sandbox of its own; -1 with the infra error set. Either
 * way the job no longer holds it. */
int kb__eval_held_release(struct job *j, const struct kb_plan_run *p,
			  const struct kb_argv *argv);

/* Waits for the held run the job released, as kb_sandbox_run returns. */
int kb__eval_held_join(struct job *j, struct kb_sandbox_result *r, char *err,
		       size_t err_size);

/* Ends the held run j took if it still holds it (the job ended before
 * its first run). */
void kb__eval_held_drop(struct job *j);

#endif
