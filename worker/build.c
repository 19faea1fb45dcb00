#include "build.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build_cu.h"
#include "jobdir.h"
#include "kb_elfcheck.h"
#include "kb_util.h"
#include "pbutil.h"

void kb_argv_push(struct kb_argv *a, const char *arg)
{
	a->v = kb__xrealloc(a->v, (a->n + 2) * sizeof(char *));
	a->v[a->n++] = kb__xstrdup(arg);
	a->v[a->n] = NULL;
}

void kb_argv_free(struct kb_argv *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
	a->v = NULL;
	a->n = 0;
}

static int shell_safe(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			    "0123456789_./=:,+@%^-", *s))
			return 0;
	return 1;
}

char *kb_argv_render(const struct kb_argv *a)
{
	size_t cap = 1;
	char *out, *p;

	for (size_t i = 0; i < a->n; i++)
		cap += 4 * strlen(a->v[i]) + 3;
	p = out = kb__xcalloc(1, cap);
	for (size_t i = 0; i < a->n; i++) {
		const char *s = a->v[i];

		if (i)
			*p++ = ' ';
		if (shell_safe(s)) {
			p = stpcpy(p, s);
			continue;
		}
		*p++ = '\'';
		for (; *s; s++)
			p = *s == '\'' ? stpcpy(p, "'\\''") : (*p = *s, p + 1);
		*p++ = '\'';
	}
	*p = '\0';
	return out;
}

const char *kb_builder_config(const Kb__Task *t, const char *key)
{
	for (size_t i = 0; i < t->n_config; i++)
		if (strcmp(t->config[i]->key, key) == 0)
			return t->config[i]->value;
	return NULL;
}

/* Pushes prefix+line for every non-blank line of a config list value.
 * With names set, every line must be a plain file name of the job
 * directory; returns -EINVAL with msg set when one is not. */
static int push_lines(struct kb_argv *a, const char *value,
		      const char *prefix, int names, char *msg,
		      size_t msg_size)
{
	while (value && *value) {
		size_t len = strcspn(value, "\n");
		char line[1024];
		char *s = line, *e;

		if (len >= sizeof(line)) {
			snprintf(msg, msg_size, "task config line too long");
			return -EINVAL;
		}
		memcpy(line, value, len);
		line[len] = '\0';
		value += len + (value[len] == '\n');
		while (*s == ' ' || *s == '\t')
			s++;
		e = s + strlen(s);
		while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
			*--e = '\0';
		if (!*s)
			continue;
		if (names && !kb_jobdir_name_ok(s)) {
			snprintf(msg, msg_size,
				 "task config names \"%s\", not a plain file "
				 "name", s);
			return -EINVAL;
		}
		if (prefix) {
			char *arg = kb__xasprintf("%s%s", prefix, s);

			kb_argv_push(a, arg);
			free(arg);
		} else {
			kb_argv_push(a, s);
		}
	}
	return 0;
}

int kb__build_push_lines(struct kb_argv *a, const char *value,
			 const char *prefix, int names, char *msg,
			 size_t msg_size)
{
	return push_lines(a, value, prefix, names, msg, msg_size);
}

/* Runs a compiler command line and turns its end into a build state. */
static enum kb_build_state run_compiler(const struct kb_build_ctx *c,
					const struct kb_argv *argv,
					Kb__CompileResult *cr, char *msg,
					size_t msg_size)
{
	const struct kb_build_cmd cmd = {argv, NULL, c->timeout_s};
	struct kb_sandbox_result r = {0};
	char err[256] = "";
	enum kb_build_state st;
	int rc;

	kb__pb_take_str(&cr->command, kb_argv_render(argv));
	rc = c->exec(c->exec_ctx, &cmd, &r, err, sizeof(err));
	cr->duration_s = r.wall_s;
	if (rc < 0 || r.infra_error) {
		snprintf(msg, msg_size, "%s", err[0] ? err : r.infra_msg);
		cr->exit_code = -1;
		kb_sandbox_result_clear(&r);
		return KB_BUILD_INFRA;
	}
	kb__pb_take_str(&cr->stdout, kb__pb_output(r.out, r.out_len,
						   r.out_dropped,
						   c->output_max));
	kb__pb_take_str(&cr->stderr, kb__pb_output(r.err, r.err_len,
						   r.err_dropped,
						   c->output_max));
	if (r.timed_out) {
		cr->exit_code = -1;
		st = KB_BUILD_TIMEOUT;
	} else if (r.signaled) {
		/* A compiler killed by a signal (memory limit, internal
		 * error on hostile input) is reported as its shell would. */
		cr->exit_code = 128 + r.signal;
		st = KB_BUILD_FAILED;
	} else if (r.exit_code == 127) {
		cr->exit_code = 127;
		snprintf(msg, msg_size, "compiler %s not found", argv->v[0]);
		st = KB_BUILD_INFRA;
	} else {
		cr->exit_code = r.exit_code;
		st = r.exit_code == 0 ? KB_BUILD_OK : KB_BUILD_FAILED;
	}
	cr->success = st == KB_BUILD_OK;
	kb_sandbox_result_clear(&r);
	return st;
}

/* lang c. The submission is compiled on its own first and inspected
 * (services/kb_elfcheck.h) before it is linked with the task's other
 * sources: the harness forks the process that runs user code first thing in
 * main(), so nothing of the user's may run before main (constructors,
 * ifunc resolvers) or in the harness's own process (destructors, or a
 * definition of malloc, write, clock_gettime... which would replace libc's
 * for the harness too). Only the problem's ABI may have external linkage:
 * config "exports" (one name a line), default custom_kernel. A refused
 * object is a compile error carrying the check's message. A task whose
 * submission is not one of its C sources builds in one step, as before. */

#define KB_C_SUBMISSION_OBJ "submission.o"
#define KB_C_OBJECT_MAX ((size_t)256 << 20)
#define KB_C_EXPORTS_MAX 16

/* cc -O3 -march=native -fopenmp and the task's -I, -D and flags. */
static int c_argv_start(const Kb__Task *t, struct kb_argv *a, char *msg,
			size_t msg_size)
{
	kb_argv_push(a, "cc");
	kb_argv_push(a, "-O3");
	kb_argv_push(a, "-march=native");
	kb_argv_push(a, "-fopenmp");
	if (push_lines(a, kb_builder_config(t, "include_dirs"), "-I", 0, msg,
		       msg_size) < 0 ||
	    push_lines(a, kb_builder_config(t, "defines"), "-D", 0, msg,
		       msg_size) < 0 ||
	    push_lines(a, kb_builder_config(t, "flags"), NULL, 0, msg,
		       msg_size) < 0 ||
	    push_lines(a, kb_builder_config(t, "compile_flags"), NULL, 0, msg,
		       msg_size) < 0)
		return -EINVAL;
	return 0;
}

/* Puts the first step's command and output in front of the second's. */
static void c_join(char **field, char *first, const char *sep)
{
	const char *now = *field ? *field : "";

	if (first && *first)
		kb__pb_take_str(field, kb__xasprintf("%s%s%s", first,
						     *now ? sep : "", now));
	free(first);
}

/* Inspects the compiled submission. KB_BUILD_OK, KB_BUILD_FAILED (refused:
 * cr's stderr says why) or KB_BUILD_INFRA (msg set). */
static enum kb_build_state c_inspect(const struct kb_build_ctx *c,
				     const char *sub_name,
				     Kb__CompileResult *cr, char *msg,
				     size_t msg_size)
{
	const char *exports[KB_C_EXPORTS_MAX + 1] = {0};
	struct kb_argv names = {0};
	struct kb_elfcheck_policy pol = {exports, exports, sub_name};
	struct kb_elfcheck_result res;
	char path[PATH_MAX], err[256] = "", *obj = NULL;
	size_t len = 0;
	enum kb_build_state st = KB_BUILD_INFRA;
	int rc;

	if (push_lines(&names, kb_builder_config(c->task, "exports"), NULL, 0,
		       msg, msg_size) < 0)
		goto out;
	if (names.n == 0)
		kb_argv_push(&names, "custom_kernel");
	for (size_t i = 0; i < names.n && i < KB_C_EXPORTS_MAX; i++)
		exports[i] = names.v[i];
	snprintf(path, sizeof(path), "%s/%s", c->jobdir, KB_C_SUBMISSION_OBJ);
	if ((rc = kb_read_file(path, KB_C_OBJECT_MAX, &obj, &len)) < 0) {
		snprintf(msg, msg_size, "read %s: %s", path, strerror(-rc));
		goto out;
	}
	if (kb_elfcheck(obj, len, &pol, &res, err, sizeof(err)) < 0)
		snprintf(res.msg, sizeof(res.msg),
			 "%s: the compiled object could not be inspected (%s)",
			 sub_name, err);
	else if (!res.found) {
		st = KB_BUILD_OK;
		goto out;
	}
	kb__pb_take_str(&cr->stderr,
			kb__xasprintf("%s%s%s\n", cr->stderr,
				      *cr->stderr ? "\n" : "", res.msg));
	cr->exit_code = 1;
	cr->success = 0;
	st = KB_BUILD_FAILED;
out:
	free(obj);
	kb_argv_free(&names);
	return st;
}

static enum kb_build_state build_c(const struct kb_build_ctx *c,
				   Kb__CompileResult *cr, char *msg,
				   size_t msg_size)
{
	const Kb__Task *t = c->task;
	const char *sources = kb_builder_config(t, "sources");
	struct kb_argv a = {0}, srcs = {0};
	enum kb_build_state st = KB_BUILD_INFRA;
	long sub = kb__cu_submission_file(t, c->code);
	const char *sub_name = sub >= 0 ? t->files[sub]->name : NULL;
	char *cmd1 = NULL, *out1 = NULL, *err1 = NULL;
	double dur1 = 0;
	int split = 0;

	if (!sources || !*sources) {
		snprintf(msg, msg_size, "task config has no sources");
		return KB_BUILD_INFRA;
	}
	if (push_lines(&srcs, sources, NULL, 1, msg, msg_size) < 0)
		goto out;
	for (size_t i = 0; sub_name && i < srcs.n; i++)
		split |= strcmp(srcs.v[i], sub_name) == 0;
	if (split) {
		/* 1. the submission alone */
		if (c_argv_start(t, &a, msg, msg_size) < 0)
			goto out;
		kb_argv_push(&a, "-c");
		kb_argv_push(&a, sub_name);
		kb_argv_push(&a, "-o");
		kb_argv_push(&a, KB_C_SUBMISSION_OBJ);
		st = run_compiler(c, &a, cr, msg, msg_size);
		kb_argv_free(&a);
		/* 2. the check */
		if (st == KB_BUILD_OK)
			st = c_inspect(c, sub_name, cr, msg, msg_size);
		if (st != KB_BUILD_OK)
			goto out;
	}
	/* 3. the link (or the one step) */
	if (split) {
		cmd1 = kb__xstrdup(cr->command);
		out1 = kb__xstrdup(cr->stdout);
		err1 = kb__xstrdup(cr->stderr);
		dur1 = cr->duration_s;
	}
	st = KB_BUILD_INFRA;
	if (c_argv_start(t, &a, msg, msg_size) < 0)
		goto out;
	for (size_t i = 0; i < srcs.n; i++)
		kb_argv_push(&a, split && strcmp(srcs.v[i], sub_name) == 0
					 ? KB_C_SUBMISSION_OBJ
					 : srcs.v[i]);
	kb_argv_push(&a, "-o");
	kb_argv_push(&a, KB_JOBDIR_BINARY);
	if (push_lines(&a, kb_builder_config(t, "libraries"), "-l", 0, msg,
		       msg_size) < 0)
		goto out;
	kb_argv_push(&a, "-lm");
	st = run_compiler(c, &a, cr, msg, msg_size);
	c_join(&cr->command, cmd1, " && ");
	c_join(&cr->stdout, out1, "");
	c_join(&cr->stderr, err1, "");
	cmd1 = out1 = err1 = NULL;
	cr->duration_s += dur1;
out:
	free(cmd1);
	free(out1);
	free(err1);
	kb_argv_free(&a);
	kb_argv_free(&srcs);
	return st;
}

static enum kb_build_state build_unsupported(const struct kb_build_ctx *c,
					     Kb__CompileResult *cr, char *msg,
					     size_t msg_size)
{
	snprintf(msg, msg_size, "lang %s is not supported on this worker (%s)",
		 c->task->lang, c->gpu);
	cr->success = 0;
	cr->exit_code = -1;
	kb__pb_set_str(&cr->stderr, msg);
	return KB_BUILD_UNSUPPORTED;
}

static int argv_binary(const Kb__Task *t, const char *harness_mode,
		       const char *cases_file, struct kb_argv *argv, char *msg,
		       size_t msg_size)
{
	kb_argv_push(argv, "./" KB_JOBDIR_BINARY);
	kb_argv_push(argv, harness_mode);
	kb_argv_push(argv, cases_file);
	return 0;
}

static int argv_python(const Kb__Task *t, const char *harness_mode,
		       const char *cases_file, struct kb_argv *argv, char *msg,
		       size_t msg_size)
{
	const char *main_file = kb_builder_config(t, "main");

	if (!main_file || !kb_jobdir_name_ok(main_file)) {
		snprintf(msg, msg_size,
			 "task config \"main\" must name a file of the task");
		return -EINVAL;
	}
	kb_argv_push(argv, "python3");
	kb_argv_push(argv, main_file);
	kb_argv_push(argv, harness_mode);
	kb_argv_push(argv, cases_file);
	return 0;
}

static const struct kb_builder builders[] = {
	{"c", build_c, argv_binary},
	{"py", NULL, argv_python},
	{"cu", kb__build_cu, argv_binary},
	/* Until the hipcc builder lands, hip stops at the build with a
	 * message saying why. */
	{"hip", build_unsupported, argv_binary},
};

const struct kb_builder *kb_builder_find(const char *lang)
{
	for (size_t i = 0; i < sizeof(builders) / sizeof(builders[0]); i++)
		if (lang && strcmp(builders[i].lang, lang) == 0)
			return &builders[i];
	return NULL;
}
