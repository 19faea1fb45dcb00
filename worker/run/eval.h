/* kb_eval: one Submission in, one Result out.
 *
 * Pure of Kafka and Redis: the service loop and `kb-worker eval` both call
 * kb_eval_run(). It makes a fresh job directory under opts->workdir,
 * writes the task files and, per run, the cases file (seeds combined with
 * the secret only for the secret run), builds through the language's
 * builder, runs the harness once per entry of the run plan through the
 * sandbox, and turns what happened into a verdict, a fault and, for a
 * ranked submission whose runs all passed, a score. System info comes
 * from the harness's system.* keys where it reports them, else from
 * the worker's own readings at the job's start and end (sysinfo.h).
 * Progress is reported through a callback as each stage starts.
 *
 * The secret seed (the gateway's per-submission derivation of the board's
 * secret) reaches the secret run only: inside the combined case seeds of
 * its cases file, or, for Python tasks, as POPCORN_SEED in its environment
 * (upstream's protocol: the harness combines). It is in no argv, no other
 * command's environment or file and no log line, and the secret run's
 * stdout, stderr, specs and messages are left out of the Result.
 *
 * Python tasks: a worker may start the next job's first harness run ahead
 * (eval_ready.h): a sandbox of its own, like any run's, whose
 * interpreter has imported torch before the job comes. The job takes it
 * for its first run when that run fits (not secret, not under Nsight
 * Compute, no compile step first); every other run, and every job when
 * none is waiting, runs as usual.
 *
 * Thread-safety: one evaluation at a time per process (the sandbox waits
 * for its own children); the callback runs on the calling thread. A
 * kb_eval_ready may be shared by the evaluations of one worker.
 */
#ifndef KB_EVAL_H
#define KB_EVAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "kb.pb-c.h"
#include "kb_sandbox.h"
#include "python.h"

struct kb_eval_ready;

typedef void (*kb_eval_progress_fn)(void *ctx, Kb__Stage stage,
				    const char *message, int64_t elapsed_ms);

/* Same contract as kb_sandbox_run(); tests substitute fakes. */
typedef int (*kb_eval_sandbox_fn)(const struct kb_sandbox_opts *o,
				  struct kb_sandbox_result *r, char *errstr,
				  size_t errstr_size);

#define KB_EVAL_OUTPUT_MAX (16 * 1024)
#define KB_EVAL_REPORT_MAX (256 * 1024)

struct kb_eval_opts {
	const char *workdir; /* parent of job directories; created */
	const char *worker;  /* Result.worker */
	const char *gpu;     /* device type this worker serves */
	double build_timeout_s;
	double run_timeout_cap_s; /* caps the task's timeouts; 0 = none */
	long memory_limit_mb;     /* per sandboxed command; 0 = none */
	int isolate;              /* kb_sandbox_opts.isolate */
	int keep_workdir;         /* leave the job directory for debugging */
	size_t output_max;        /* bytes kept per stream; 0 = default */
	double t0; /* kb_mono_s() when the job was taken; 0 = now */
	kb_eval_progress_fn progress; /* may be NULL */
	void *progress_ctx;
	kb_eval_sandbox_fn sandbox; /* NULL = kb_sandbox_run */
	int build_only;             /* stop after the build (start-up
				       * builds of the harness cache) */
	const atomic_int *cancel; /* when set nonzero, no new command starts */

	/* GPU workers (gpu's device family has a device: device.h); all
	 * may stay zero. Builds run without the GPU; harness runs get the
	 * device nodes, PATH with <cuda_home>/bin, LD_LIBRARY_PATH and the
	 * family's run_env (CUDA_VISIBLE_DEVICES). */
	const char *cuda_arch;   /* nvcc target ("90a"); NULL: no cu builds */
	const char *cuda_home;   /* toolkit root; NULL = /usr/local/cuda */
	const char *cache_dir;   /* harness objects; NULL = <workdir>/cache */
	const char *gpu_ld_path; /* LD_LIBRARY_PATH of runs; NULL = default */
	const char *gpu_visible; /* run_env's value for runs, or NULL */
	int gpu_restrict;        /* runs see the device's own node alone: */
	int gpu_index;           /* its number (kb_device.node) */
	/* AMD workers: the hipcc target ("gfx942"; NULL: no hip builds) and
	 * ROCm's root (hipcc is <hip_home>/bin/hipcc; NULL = /usr). */
	const char *hip_arch;
	const char *hip_home;
	const struct kb_device_info *device; /* the probed device, or NULL */

	/* Python tasks: the interpreter (KB_PYTHON); NULL: "python3" on the
	 * sandbox's PATH, unless python_why says why there is none (then py
	 * tasks end as infra errors). */
	const struct kb_python *python;
	const char *python_why;
	/* KB_PY_SENTINEL: Python runs get KBH_SENTINEL=1, with which the
	 * harness times benchmark and leaderboard runs on NVIDIA GPUs with
	 * its sentinel (problems/harness/python/README.md, "The sentinel,
	 * not yet the default"). */
	int py_sentinel;
	/* The held run (eval_ready.h) a Python job may take for its
	 * first run, or NULL. The caller starts the next one
	 * (kb_eval_ready_start) when the worker is idle: never while a job
	 * runs, whose timings the interpreter's start would disturb. */
	struct kb_eval_ready *ready;
};

/* LD_LIBRARY_PATH of GPU runs when opts->gpu_ld_path is NULL, after
 * <cuda_home>/lib64: where container runtimes put the driver's
 * libraries. */
#define KB_EVAL_GPU_LD_PATH "/usr/local/nvidia/lib64:/usr/lib/x86_64-linux-gnu"
/* Where NVIDIA's packages install Nsight Compute, one folder per version
 * (the toolkit's bin/ncu looks there too). */
#define KB_EVAL_NCU_OPT_DIR "/opt/nvidia/nsight-compute"

/* Evaluates s and returns its Result, never NULL: every failure, the
 * platform's included, is a verdict (out of memory aborts). The caller
 * owns the Result and frees it with kb__result__free_unpacked(r, NULL). */
Kb__Result *kb_eval_run(const struct kb_eval_opts *o, const Kb__Submission *s);

/* The Result of a job the worker will not evaluate (any more): an
 * infrastructure error with why as its error, never charged to the user.
 * Same ownership as kb_eval_run(). */
Kb__Result *kb_eval_given_up(const struct kb_eval_opts *o,
			     const Kb__Submission *s, const char *why);

#endif
