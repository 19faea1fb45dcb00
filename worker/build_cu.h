/* kb_build_cu: the "cu" builder (nvcc), and its cache of harness objects.
 *
 * Internal to the worker (build.c's table uses kb__build_cu); the pieces
 * below are declared here so that tests can check them one by one.
 *
 * A cu task is built in one of two shapes:
 *
 *  - split, when the submission's file is one of config.sources and no
 *    other task file #includes it: every other source (the harness and
 *    problem files) is compiled once per content and architecture and
 *    cached under KB_CACHE_DIR; per job only the submission is compiled
 *    (`nvcc -c`), sealed and checked when the task ships kbg_seal.sh
 *    (kb_elfcheck_nvcc: nothing of the user's may run before main; a
 *    refusal is a compile error), and linked with the cached objects.
 *    This is problems/harness/cuda/README.md's recipe ("Build"), flag for
 *    flag. Unsealed tasks (upstream harnesses, which fork nothing) are
 *    not checked.
 *  - one-shot otherwise (upstream tasks whose eval.cu includes the
 *    submission as a header, or lists no submission source): one nvcc
 *    command over every source, as upstream KernelBot runs it.
 *
 * Flags: CUDA sources get config.flags when the task sets it (it replaces
 * the default, as upstream's `flags` replaces its CUDA_FLAGS), else
 * `-O3 -std=c++17 -lineinfo`; then config.compile_flags, -I include_dirs,
 * -D defines and `-gencode=arch=compute_<arch>,code=sm_<arch>`. Harness
 * objects are also compiled with `-Xcompiler -fvisibility=hidden`. C
 * sources (.c) get `-O3 <gencode> -Xcompiler -std=gnu17[,-fvisibility=
 * hidden]` plus -I and -D. The link gets the gencode, the task's flags
 * and compile_flags when it sets them, the objects in config.sources
 * order with the submission last, -l libraries, -lcuda and -ldl.
 *
 * Thread-safety: builds may run concurrently (in threads or in other
 * worker processes sharing the cache); the cache fill is atomic (objects
 * are built in a private temporary directory and renamed into place; a
 * loser of the race discards its copy). One memo (the nvcc version) is
 * shared under a mutex.
 */
#ifndef KB_BUILD_CU_H
#define KB_BUILD_CU_H

#include <stddef.h>

#include "build.h"

/* A task file the worker runs on the submission's object when the task
 * ships it: `sh kbg_seal.sh submission.o custom_kernel` (exit 1: the
 * submission does not define custom_kernel, a compile error). */
#define KB_CU_SEAL_SCRIPT "kbg_seal.sh"
#define KB_CU_EXPORT "custom_kernel"
/* Where a job's copies of the cached objects go, inside the job dir. */
#define KB_CU_OBJDIR "kb-harness-objs"
#define KB_CU_SUBMISSION_OBJ "submission.o"

/* The builder of build.c's table (see build.h). */
enum kb_build_state kb__build_cu(const struct kb_build_ctx *c,
				 Kb__CompileResult *cr, char *msg,
				 size_t msg_size);

/* Index of the task file holding the submission: the one whose content
 * is "@SUBMISSION@" or equals code. Returns the index, -1 when none, -2
 * when several files qualify (a submission identical to a task file). */
long kb__cu_submission_file(const Kb__Task *t, const ProtobufCBinaryData *code);

/* The harness objects of a split build: one compile command per harness
 * source (run in a directory holding every task file but the
 * submission), each writing objects[i]. */
struct kb_cu_harness {
	const Kb__Task *task;
	long sub_index;          /* the task file left out; -1 = none */
	struct kb_argv *cmds;
	char **objects;
	size_t n;
};

/* The cache key: hex SHA-256 over a format tag, the arch, the nvcc
 * version text, every command of h (flags, source and object names) and
 * every task file but the submission (name and content). Pure. */
void kb__cu_cache_key(const struct kb_cu_harness *h, const char *arch,
		      const char *nvcc_version, char out[65]);

/* Makes sure <c->cache_dir>/cu-<key> holds h's objects, compiling them
 * through c->exec when it does not (each command with timeout_s), and
 * puts that directory into objdir. *wall_s gets the time spent in
 * commands. Returns KB_BUILD_OK, or KB_BUILD_INFRA with msg set (a
 * harness source that does not compile is the platform's fault). */
enum kb_build_state kb__cu_cache_get(const struct kb_build_ctx *c,
				     const struct kb_cu_harness *h,
				     const char *key, double timeout_s,
				     char *objdir, size_t objdir_size,
				     double *wall_s, char *msg,
				     size_t msg_size);

/* build.c's helper, shared: pushes prefix+line for every non-blank line of
 * a config list value; with names set every line must be a plain file
 * name. Returns 0, or -EINVAL with msg set. */
int kb__build_push_lines(struct kb_argv *a, const char *value,
			 const char *prefix, int names, char *msg,
			 size_t msg_size);

#endif
