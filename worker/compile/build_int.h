/* build_int.h: what the builders (build_c.c, build_cu.c, build_hip.c,
 * build_py.c), the language table (builders.c) and the trusted harness
 * cache (build_cache.c) share. The helpers are defined in build_int.c, the
 * cache's in build_cache.c. Not an interface of the worker: eval.c uses
 * build.h alone.
 */
#ifndef KB_BUILD_INT_H
#define KB_BUILD_INT_H

#include <stddef.h>

#include "build.h"
#include "kb_util.h"

/* Pushes prefix+line for every non-blank line of a config list value.
 * With names set, every line must be a plain file name of the task;
 * returns -EINVAL with msg set when one is not. */
int kb__build_push_lines(struct kb_argv *a, const char *value,
			 const char *prefix, int names, char *msg,
			 size_t msg_size);

void kb__build_push_all(struct kb_argv *a, const struct kb_argv *from);

/* A GPU task's flags (cu, hip): config.flags when set (it replaces
 * defaults, NULL-terminated), else the defaults; then config.compile_flags;
 * -I include_dirs and -D defines into c_flags and after them into flags;
 * config.libraries as -l into libs. Returns 0, or -1 with msg set. */
int kb__build_task_flags(const Kb__Task *t, const char *const *defaults,
			 struct kb_argv *flags, struct kb_argv *c_flags,
			 struct kb_argv *libs, char *msg, size_t msg_size);

/* How a task builds: its sources, the submission's file among them, and
 * the shape (build.h). */
struct kb__build_plan {
	struct kb_argv sources; /* config.sources */
	long sub;               /* the submission's task file, or < 0 */
	const char *sub_name;
	int split;
};

/* Reads config.sources and config.loader and decides the shape. Returns
 * 0, or -EINVAL with msg set (a task without sources, or with a loader
 * that cannot work, is the platform's fault). */
int kb__build_plan(const struct kb_build_ctx *c, struct kb__build_plan *p,
		   char *msg, size_t msg_size);
void kb__build_plan_free(struct kb__build_plan *p);

/* What the user sees of a build: the commands the user's code took part
 * in and their output, in order. */
struct kb__build_log {
	struct kb_buf out, err;
	struct kb_buf cmds; /* " && " joined */
	double wall;
	int exit_code;    /* of the command that failed */
	char *failed_cmd; /* that command, rendered */
};

/* Runs a user-facing command in a fresh J/step with J/task as its working
 * directory, then copies its outputs (NULL-terminated names, written as
 * KB_BUILD_STEP NAME) into J/out. Returns OK, FAILED (a nonzero exit or a
 * signal: the compiler's or the code's fault), TIMEOUT, or INFRA with msg
 * set (the sandbox failed, the compiler is missing, an output is
 * missing after success). */
enum kb_build_state kb__build_user(const struct kb_build_ctx *c,
				   struct kb__build_log *log,
				   const struct kb_argv *argv,
				   const char *const *outputs, char *msg,
				   size_t msg_size);

/* kb__build_user through the cache of submission builds (build_cache.c):
 * when c->cache_dir holds a successful build of the same command, code,
 * task files and compiler (version: its --version text), its outputs go
 * into J/out and what it printed into the log, and nothing runs; else the
 * command runs and a success is kept. Same contract as kb__build_user. */
enum kb_build_state
kb__build_user_cached(const struct kb_build_ctx *c, struct kb__build_log *log,
		      const struct kb_argv *argv, const char *const *outputs,
		      const char *version, char *msg, size_t msg_size);

/* Removes the least recently used entries of the submission cache dir
 * until keep remain. */
void kb__user_cache_trim(const char *dir, size_t keep);

/* Fills cr from the log and the build's end; frees the log. */
void kb__build_finish(const struct kb_build_ctx *c, struct kb__build_log *log,
		      enum kb_build_state st, Kb__CompileResult *cr);

/* `<compiler> --version`, run once per compiler binary and remembered.
 * Returns OK with *text set (malloc'd), or INFRA with msg set. */
enum kb_build_state kb__build_version(const struct kb_build_ctx *c,
				      const char *compiler, char **text,
				      double *wall_s, char *msg,
				      size_t msg_size);

/* A trusted harness executable: commands run in J/harness (the task's
 * files without the submission) and one J/step, the last of which writes
 * KB_BUILD_STEP KB_JOBDIR_BINARY. */
struct kb__harness {
	const struct kb_argv *cmds;
	size_t n;
	const char *version; /* the compiler's --version text */
	long sub_index;      /* the task file left out */
};

/* The cache key: hex SHA-256 over a format tag, the compiler version, every
 * command and every task file but the submission (name and content).
 * Pure. */
void kb__cache_key(const Kb__Task *t, const struct kb__harness *h,
		   char out[65]);

/* Puts the harness executable into J/out/eval.out: from the cache
 * (c->cache_dir/h-<key>) when it holds it, else built through c->exec
 * (each command with timeout_s) and added. *wall_s gets the time spent in
 * commands. Returns OK, or INFRA with msg set (a harness that does not
 * build is the platform's fault; its compiler output is logged). */
enum kb_build_state kb__cache_harness(const struct kb_build_ctx *c,
				      const struct kb__harness *h,
				      double timeout_s, double *wall_s,
				      char *msg, size_t msg_size);

/* How a builder compiles one harness source into obj: the whole command
 * into a (compiler, flags for the source's kind, -c src -o obj). */
typedef void (*kb__compile_fn)(const void *builder, struct kb_argv *a,
			       const char *src, const char *obj);

/* The cached harness of a split task (kb__cache_harness): every source of
 * p but the submission compiled one by one by compile() into
 * J/step/<stem>.o, then `link` (the compiler, its flags and -o, as the
 * builder gives them) with the objects and then link_tail appended. link
 * is consumed (freed). wall_s: as kb__cache_harness's. */
enum kb_build_state
kb__build_harness(const struct kb_build_ctx *c, const struct kb__build_plan *p,
		  const char *version, kb__compile_fn compile,
		  const void *builder, struct kb_argv *link,
		  const struct kb_argv *link_tail, double *wall_s, char *msg,
		  size_t msg_size);

/* Builders of builders.c's table. */
enum kb_build_state kb__build_c(struct kb_build_ctx *c, Kb__CompileResult *cr,
				char *msg, size_t msg_size);
enum kb_build_state kb__build_cu(struct kb_build_ctx *c, Kb__CompileResult *cr,
				 char *msg, size_t msg_size);
enum kb_build_state kb__build_hip(struct kb_build_ctx *c, Kb__CompileResult *cr,
				  char *msg, size_t msg_size);
/* "HIP 5.2" from `hipcc --version` ("HIP version: 5.2.21153-0"), or "". */
void kb__hip_release(const char *version, char *out, size_t size);
enum kb_build_state kb__build_py(struct kb_build_ctx *c, Kb__CompileResult *cr,
				 char *msg, size_t msg_size);

#endif
