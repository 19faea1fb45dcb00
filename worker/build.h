/* kb_builder: how each task language is built and started.
 *
 * One table entry per language. build() compiles the materialized job
 * directory through the sandbox (the caller provides the runner, so
 * builders never fork) and fills the CompileResult; languages without a
 * build step leave it NULL. run_argv() gives the harness command line for
 * one run. A builder for a new language (nvcc for "cu", hipcc for "hip",
 * with cached harness objects) is one more entry: nothing else changes.
 *
 * Thread-safe (no shared state).
 */
#ifndef KB_BUILD_H
#define KB_BUILD_H

#include <stddef.h>

#include "kb.pb-c.h"
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

/* One command of a build. */
struct kb_build_cmd {
	const struct kb_argv *argv;
	const char *dir;  /* working directory, the only one writable; NULL =
			   * the job directory */
	double timeout_s; /* wall-clock limit */
};

/* Runs cmd under the sandbox with the build environment (no GPU, HOME and
 * TMPDIR = cmd->dir). Returns what kb_sandbox_run() returns. */
typedef int (*kb_build_exec_fn)(void *ctx, const struct kb_build_cmd *cmd,
				struct kb_sandbox_result *r, char *errstr,
				size_t errstr_size);

struct kb_build_ctx {
	const Kb__Task *task;
	const ProtobufCBinaryData *code; /* the submission, to find its file */
	const char *jobdir;     /* where the task files were materialized */
	const char *gpu;        /* the device type */
	double timeout_s;       /* per command the user's code takes part in */
	size_t output_max;      /* bytes kept of stdout/stderr */
	kb_build_exec_fn exec;
	void *exec_ctx;
	/* cu only: */
	const char *cuda_arch;  /* nvcc target ("90a"); NULL: cu cannot build */
	const char *cuda_home;  /* toolkit root; NULL = /usr/local/cuda */
	const char *cache_dir;  /* harness object cache; NULL = no cache */
	char *toolkit;          /* out, may be NULL: "CUDA 13.0" once known */
	size_t toolkit_size;
};

struct kb_builder {
	const char *lang;
	/* Builds; fills *cr. Returns the build state (OK, FAILED, TIMEOUT,
	 * UNSUPPORTED, INFRA) with msg set for UNSUPPORTED and INFRA. */
	enum kb_build_state (*build)(const struct kb_build_ctx *c,
				     Kb__CompileResult *cr, char *msg,
				     size_t msg_size);
	/* Fills argv for one harness run. Returns 0, or -EINVAL with msg set
	 * when the task's config cannot say how to run it. */
	int (*run_argv)(const Kb__Task *t, const char *harness_mode,
			const char *cases_file, struct kb_argv *argv,
			char *msg, size_t msg_size);
};

/* The builder for lang, or NULL when no worker knows the language. */
const struct kb_builder *kb_builder_find(const char *lang);

/* Value of a Task config key, or NULL. */
const char *kb_builder_config(const Kb__Task *t, const char *key);

#endif
