/* The "c" builder (build.h): `cc -O3 -march=native -fopenmp`, the task's
 * include_dirs (-I), defines (-D), flags and compile_flags, and its
 * libraries (-l). The harness, our own code, is linked with -lm; the
 * submission is not (the CPU tasks say "no -lm": a task that offers libm
 * lists it, `libraries: [m]`).
 *
 * Split tasks: the harness (every source but the submission) is linked
 * into eval.out with -ldl and cached; the submission becomes
 * submission.so (-shared -fPIC), linked with --no-undefined so that a
 * missing function is a compile error here rather than a failure to load
 * in the run, and --require-defined=custom_kernel so that a submission
 * without its entry point is one too.
 */
#include "build_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pbutil.h"

/* cc and the task's common flags. */
static int c_argv_start(const Kb__Task *t, struct kb_argv *a, char *msg,
			size_t msg_size)
{
	kb_argv_push(a, "cc");
	kb_argv_push(a, "-O3");
	kb_argv_push(a, "-march=native");
	kb_argv_push(a, "-fopenmp");
	if (kb__build_push_lines(a, kb_builder_config(t, "include_dirs"), "-I",
				 0, msg, msg_size) < 0 ||
	    kb__build_push_lines(a, kb_builder_config(t, "defines"), "-D", 0,
				 msg, msg_size) < 0 ||
	    kb__build_push_lines(a, kb_builder_config(t, "flags"), NULL, 0, msg,
				 msg_size) < 0 ||
	    kb__build_push_lines(a, kb_builder_config(t, "compile_flags"), NULL,
				 0, msg, msg_size) < 0)
		return -1;
	return 0;
}

/* The task's libraries; libm too for a link that holds the harness. */
static int c_argv_libs(const Kb__Task *t, struct kb_argv *a, int harness,
		       char *msg, size_t msg_size)
{
	if (kb__build_push_lines(a, kb_builder_config(t, "libraries"), "-l", 0,
				 msg, msg_size) < 0)
		return -1;
	if (harness)
		kb_argv_push(a, "-lm");
	return 0;
}

/* The cached harness: every source but the submission, linked. */
static enum kb_build_state c_harness(struct kb_build_ctx *c,
				     const struct kb__build_plan *p,
				     struct kb__build_log *log, char *msg,
				     size_t msg_size)
{
	struct kb_argv a = {0};
	struct kb__harness h = {&a, 1, NULL, p->sub};
	enum kb_build_state st = KB_BUILD_INFRA;
	char *version = NULL;

	if (c_argv_start(c->task, &a, msg, msg_size) < 0)
		goto out;
	for (size_t i = 0; i < p->sources.n; i++)
		if (strcmp(p->sources.v[i], p->sub_name) != 0)
			kb_argv_push(&a, p->sources.v[i]);
	kb_argv_push(&a, "-o");
	kb_argv_push(&a, KB_BUILD_STEP KB_JOBDIR_BINARY);
	if (c_argv_libs(c->task, &a, 1, msg, msg_size) < 0)
		goto out;
	kb_argv_push(&a, "-ldl");
	if ((st = kb__build_version(c, "cc", &version, &log->wall, msg,
				    msg_size)) != KB_BUILD_OK)
		goto out;
	h.version = version;
	st = kb__cache_harness(c, &h, c->timeout_s * 5, &log->wall, msg,
			       msg_size);
out:
	free(version);
	kb_argv_free(&a);
	return st;
}

static enum kb_build_state c_submission(struct kb_build_ctx *c,
					const struct kb__build_plan *p,
					struct kb__build_log *log, char *msg,
					size_t msg_size)
{
	static const char *const outputs[] = {KB_BUILD_SUBMISSION_SO, NULL};
	struct kb_argv a = {0};
	enum kb_build_state st = KB_BUILD_INFRA;

	if (c_argv_start(c->task, &a, msg, msg_size) < 0)
		goto out;
	kb_argv_push(&a, "-shared");
	kb_argv_push(&a, "-fPIC");
	kb_argv_push(&a, "-Wl,--no-undefined");
	kb_argv_push(&a, "-Wl,--require-defined=" KB_BUILD_ENTRY);
	kb_argv_push(&a, p->sub_name);
	kb_argv_push(&a, "-o");
	kb_argv_push(&a, KB_BUILD_STEP KB_BUILD_SUBMISSION_SO);
	if (c_argv_libs(c->task, &a, 0, msg, msg_size) < 0)
		goto out;
	st = kb__build_user(c, log, &a, outputs, msg, msg_size);
	c->loads_submission = st == KB_BUILD_OK;
out:
	kb_argv_free(&a);
	return st;
}

static enum kb_build_state c_oneshot(struct kb_build_ctx *c,
				     const struct kb__build_plan *p,
				     struct kb__build_log *log, char *msg,
				     size_t msg_size)
{
	static const char *const outputs[] = {KB_JOBDIR_BINARY, NULL};
	struct kb_argv a = {0};
	enum kb_build_state st = KB_BUILD_INFRA;

	if (c_argv_start(c->task, &a, msg, msg_size) < 0)
		goto out;
	kb__build_push_all(&a, &p->sources);
	kb_argv_push(&a, "-o");
	kb_argv_push(&a, KB_BUILD_STEP KB_JOBDIR_BINARY);
	if (c_argv_libs(c->task, &a, 1, msg, msg_size) < 0)
		goto out;
	st = kb__build_user(c, log, &a, outputs, msg, msg_size);
out:
	kb_argv_free(&a);
	return st;
}

enum kb_build_state kb__build_c(struct kb_build_ctx *c, Kb__CompileResult *cr,
				char *msg, size_t msg_size)
{
	struct kb__build_plan p;
	struct kb__build_log log = {0};
	enum kb_build_state st = KB_BUILD_INFRA;

	if (kb__build_plan(c, &p, msg, msg_size) == 0) {
		if (!p.split)
			st = c_oneshot(c, &p, &log, msg, msg_size);
		else if ((st = c_harness(c, &p, &log, msg, msg_size)) ==
			 KB_BUILD_OK)
			st = c_submission(c, &p, &log, msg, msg_size);
	}
	kb__build_plan_free(&p);
	kb__build_finish(c, &log, st, cr);
	return st;
}
