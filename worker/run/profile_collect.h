/* kb_profile_collect: a profile run's Profile, from what the run left.
 *
 * Called by the evaluation (eval.c) right after a "profile.N" run, while
 * the run's scratch directory J/step still holds what the profiler wrote.
 * Everything there may have been written or replaced by the submission:
 * files are read through kb_jobdir_step_read() (no links, regular files,
 * bounded) and Nsight Compute's report is opened only by ncu itself, in
 * the sandbox, through c->exec. Nothing here decides a verdict: a profile
 * that cannot be taken says why in Profile.error.
 *
 * Not thread-safe per context; the callbacks run on the calling thread.
 */
#ifndef KB_PROFILE_COLLECT_H
#define KB_PROFILE_COLLECT_H

#include <stddef.h>

#include "build.h"
#include "jobdir.h"
#include "kb.pb-c.h"
#include "kb_sandbox.h"

/* Runs argv in the sandbox with J/step as its working directory, without
 * the GPU and the report channel, keeping up to output_limit bytes of
 * stdout. Same contract as kb_sandbox_run(). */
typedef int (*kb_profile_exec_fn)(void *ctx, const struct kb_argv *argv,
				  size_t output_limit,
				  struct kb_sandbox_result *r, char *err,
				  size_t err_size);

struct kb_profile_ctx {
	struct kb_jobdir *jd; /* J/step as the run left it */
	const char *ncu;      /* the ncu that ran (Nsight runs) */
	kb_profile_exec_fn exec;
	void *exec_ctx;
	size_t trace_max; /* the largest trace this run may return */
};

/* Where Nsight Compute really is. The toolkit's bin/ncu is a shell script
 * that searches for the installation -- <toolkit>/nsight-compute-<version>/
 * or, for the packaged one, <opt_dir>/<version>/ (/opt/nvidia/nsight-compute)
 * -- and runs the ncu there; inside the sandbox that search fails (/opt is
 * not bound), so the worker searches the same places and runs the
 * installation's ncu itself. ncu is the real path of the ncu found. Writes
 * the real path of the installation's ncu to out and returns 1 (the
 * toolkit's own before <opt_dir>'s, the newest version of either); 0 when
 * ncu is not such a script or no installation is found (out = ncu); -1
 * when out is too small. */
int kb_profile_ncu_locate(const char *ncu, const char *opt_dir, char *out,
			  size_t size);

/* Fills pf after a run under Nsight Compute; run is that run's result
 * (its stdout and stderr carry ncu's own messages). profiler "Nsight
 * Compute"; summary the speed-of-light table; trace a zip of the report
 * and its details as text and CSV, or of the details alone when the
 * report does not fit c->trace_max (the summary then says so), or none
 * (error says why). A host that refuses counters: error says what an
 * operator must set, nothing else. */
void kb_profile_collect_ncu(const struct kb_profile_ctx *c,
			    const struct kb_sandbox_result *run,
			    Kb__Profile *pf);

/* Fills pf after a Python run: profiler "PyTorch", summary the table the
 * harness reported (benchmark.0.report of rr), trace a zip of the table
 * and, where the harness left one, its Chrome trace. */
void kb_profile_collect_torch(const struct kb_profile_ctx *c,
			      const Kb__RunResult *rr, Kb__Profile *pf);

#endif
