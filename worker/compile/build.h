/* kb_builder: how each task language is built and started.
 *
 * One table entry per language. build() compiles the job through the
 * sandbox (the caller provides the runner, so builders never fork) and
 * fills the CompileResult; languages without a build step leave it NULL.
 * run_argv() gives the harness command line for one run.
 *
 * Where things are (jobdir.h): the task's files are in J/task, read-only;
 * a build command runs with J/task as its working directory (or another
 * directory the builder names) and writes into J/step, the one writable
 * directory, naming its outputs "../step/NAME"; what the build keeps is
 * copied by the worker into J/out, from where later commands read it as
 * "../out/NAME". Runs start in a fresh J/step: the harness is
 * "../out/eval.out", Python mains "../task/<main>".
 *
 * Two shapes, for c and cu alike:
 *
 *  - split, for tasks whose config says loader: "child" (our harnesses:
 *    the submission's file must then be one of config.sources and #included
 *    by no other file): the harness (every other source) is a
 *    trusted executable, built once per content, compiler and flags from
 *    the task's files alone and cached (build_cache.c); per job only the
 *    submission is compiled, into a shared object that the harness loads
 *    in its confined child, never in its own process (KBH_SUBMISSION
 *    names it; problems/harness/guard.h). Code of the user's that runs on
 *    load (constructors, ifunc resolvers, overrides of library functions)
 *    thus runs where user code is expected.
 *  - one-shot otherwise (upstream tasks: their harness calls or #includes
 *    the submission directly): one compiler command over every source, as
 *    upstream KernelBot runs it. Nothing in such a harness is trusted.
 *
 * Thread-safety: builds may run concurrently (threads, or other worker
 * processes sharing the cache); the cache fill is atomic.
 */
#ifndef KB_BUILD_H
#define KB_BUILD_H

#include <stddef.h>

#include "jobdir.h"
#include "kb.pb-c.h"
#include "kb_lang.h"
#include "kb_sandbox.h"
#include "verdict.h"

/* A NULL-terminated, malloc'd argument vector. */
struct kb_argv {
	char **v;
	size_t n;
};
void kb_argv_push(struct kb_argv *a, const char *arg);
void kb_argv_free(struct kb_argv *a);

/* Renders argv as one shell-style line for reports (single quotes where
 * needed). Returns a malloc'd string. */
char *kb_argv_render(const struct kb_argv *a);

/* Paths relative to a command's working directory (J/task, J/harness or
 * J/step). */
#define KB_BUILD_STEP "../" KB_JOBDIR_STEP "/"
#define KB_BUILD_OUT "../" KB_JOBDIR_OUT "/"
#define KB_BUILD_TASK "../" KB_JOBDIR_TASK "/"
/* The submission's shared object, in J/out, for split builds. */
#define KB_BUILD_SUBMISSION_SO "submission.so"
/* The symbol a split submission must define. */
#define KB_BUILD_ENTRY "custom_kernel"
/* config.loader of split tasks. */
#define KB_BUILD_LOADER_CHILD "child"

/* One command of a build: it runs in the current J/step. */
struct kb_build_cmd {
	const struct kb_argv *argv;
	const char *cwd;  /* working directory; NULL = J/task */
	double timeout_s; /* wall-clock limit */
	int gpu;          /* give it the device: a Python task's warm-up runs
			   * the user's code, which may touch it */
};

/* Runs cmd under the sandbox with the build environment (no GPU, HOME
 * J/home, TMPDIR J/step). Returns what kb_sandbox_run() returns. */
typedef int (*kb_build_exec_fn)(void *ctx, const struct kb_build_cmd *cmd,
				struct kb_sandbox_result *r, char *errstr,
				size_t errstr_size);

struct kb_build_ctx {
	const Kb__Task *task;
	const ProtobufCBinaryData *code; /* the submission, to find its file */
	struct kb_jobdir *jd; /* the job's directories (task/ written) */
	const char *gpu;      /* the device type */
	double timeout_s;     /* per command the user's code takes part in */
	size_t output_max;    /* bytes kept of stdout/stderr */
	kb_build_exec_fn exec;
	void *exec_ctx;
	const char *cache_dir; /* trusted harness cache; NULL = no cache */
	/* The submitter: a submission build is reused for the same user
	 * only, so that "compiled in 0.00 s" never tells one user that
	 * another submitted the same file (docs/deploy.md). */
	const char *user;
	/* cu only: */
	const char *cuda_arch; /* nvcc target ("90a"); NULL: cu cannot build */
	const char *cuda_home; /* toolkit root; NULL = /usr/local/cuda */
	/* hip only: */
	const char *hip_arch; /* hipcc target ("gfx942"); NULL: hip cannot
				 * build */
	const char *hip_home; /* ROCm root (<hip_home>/bin/hipcc); NULL =
				 * /usr */
	/* py only: the interpreter (NULL: "python3" on PATH) */
	const char *python;
	char *toolkit; /* out, may be NULL: "CUDA 13.0" once known */
	size_t toolkit_size;
	/* out: the harness loads J/out/KB_BUILD_SUBMISSION_SO */
	int loads_submission;
};

struct kb_builder {
	enum kb_lang_id lang; /* kb_lang_get(lang) says the rest of it */
	/* Builds; fills *cr. Returns the build state (OK, FAILED, TIMEOUT,
	 * UNSUPPORTED, INFRA) with msg set for UNSUPPORTED and INFRA; NONE
	 * when there was nothing to build (cr is then dropped). */
	enum kb_build_state (*build)(struct kb_build_ctx *c,
				     Kb__CompileResult *cr, char *msg,
				     size_t msg_size);
	/* Fills argv for one harness run (working directory J/step);
	 * python is the interpreter of py tasks (NULL: "python3"). Returns
	 * 0, or -EINVAL with msg set when the task's config cannot say how
	 * to run it. */
	int (*run_argv)(const Kb__Task *t, const char *python,
			const char *harness_mode, const char *cases_file,
			struct kb_argv *argv, char *msg, size_t msg_size);
};

/* The builder for lang (a kb_lang.h name), or NULL when lang is none
 * (builders.c). */
const struct kb_builder *kb_builder_find(const char *lang);

/* Whether the "py" builder runs its compile step (`python3 submission.py`)
 * for this code: only for code that uses torch.utils.cpp_extension. */
int kb_build_py_compiles(const ProtobufCBinaryData *code);

/* Value of a Task config key, or NULL. */
const char *kb_builder_config(const Kb__Task *t, const char *key);

/* Index of the task file holding the submission: the one whose content
 * is "@SUBMISSION@" or equals code. Returns the index, -1 when none, -2
 * when several files qualify (a submission identical to a task file). */
long kb_builder_submission_file(const Kb__Task *t,
				const ProtobufCBinaryData *code);

#endif
