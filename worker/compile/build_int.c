/* build_int: what the builders (build_c.c, build_cu.c, build_hip.c,
 * build_py.c) share: flags from the task's config, the build's shape, the
 * user's commands and compiler versions (build_int.h). */
#include "build_int.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "build.h"
#include "jobdir.h"
#include "kb_util.h"
#include "pbutil.h"

int kb__build_push_lines(struct kb_argv *a, const char *value,
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
		while (e > s &&
		       (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
			*--e = '\0';
		if (!*s)
			continue;
		if (names && !kb_jobdir_name_ok(s)) {
			snprintf(msg, msg_size,
				 "task config names \"%s\", not a plain file "
				 "name",
				 s);
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

void kb__build_push_all(struct kb_argv *a, const struct kb_argv *from)
{
	for (size_t i = 0; i < from->n; i++)
		kb_argv_push(a, from->v[i]);
}

int kb__build_task_flags(const Kb__Task *t, const char *const *defaults,
			 struct kb_argv *flags, struct kb_argv *c_flags,
			 struct kb_argv *libs, char *msg, size_t msg_size)
{
	const char *set = kb_builder_config(t, "flags");

	if (set && set[strspn(set, " \t\r\n")] != '\0') {
		if (kb__build_push_lines(flags, set, NULL, 0, msg, msg_size) <
		    0)
			return -1;
	} else {
		for (size_t i = 0; defaults[i]; i++)
			kb_argv_push(flags, defaults[i]);
	}
	if (kb__build_push_lines(flags, kb_builder_config(t, "compile_flags"),
				 NULL, 0, msg, msg_size) < 0 ||
	    kb__build_push_lines(c_flags, kb_builder_config(t, "include_dirs"),
				 "-I", 0, msg, msg_size) < 0 ||
	    kb__build_push_lines(c_flags, kb_builder_config(t, "defines"), "-D",
				 0, msg, msg_size) < 0 ||
	    kb__build_push_lines(libs, kb_builder_config(t, "libraries"), "-l",
				 0, msg, msg_size) < 0)
		return -1;
	kb__build_push_all(flags, c_flags);
	return 0;
}

/* Whether some other task file #includes the submission's file: then the
 * harness cannot be built without the user's code. */
static int included_by_others(const Kb__Task *t, long sub)
{
	const char *name = t->files[sub]->name;
	const size_t nlen = strlen(name);

	for (size_t i = 0; i < t->n_files; i++) {
		const char *s = (const char *)t->files[i]->content.data;
		const size_t len = t->files[i]->content.len;
		const char *p = s, *end = s + len;

		if ((long)i == sub)
			continue;
		while (p && (p = memmem(p, (size_t)(end - p), name, nlen))) {
			const char *bol = p;

			while (bol > s && bol[-1] != '\n')
				bol--;
			if (memchr(bol, '#', (size_t)(p - bol)) &&
			    memmem(bol, (size_t)(p - bol), "include", 7))
				return 1;
			p += nlen;
		}
	}
	return 0;
}

int kb__build_plan(const struct kb_build_ctx *c, struct kb__build_plan *p,
		   char *msg, size_t msg_size)
{
	const Kb__Task *t = c->task;
	const char *loader;

	memset(p, 0, sizeof(*p));
	if (kb__build_push_lines(&p->sources, kb_builder_config(t, "sources"),
				 NULL, 1, msg, msg_size) < 0)
		return -EINVAL;
	if (p->sources.n == 0) {
		snprintf(msg, msg_size, "task config has no sources");
		return -EINVAL;
	}
	p->sub = kb_builder_submission_file(t, c->code);
	p->sub_name = p->sub >= 0 ? t->files[p->sub]->name : NULL;
	loader = kb_builder_config(t, "loader");
	if (!loader || !*loader)
		return 0;
	if (strcmp(loader, KB_BUILD_LOADER_CHILD) != 0) {
		snprintf(msg, msg_size,
			 "task config loader \"%s\" is not "
			 "\"" KB_BUILD_LOADER_CHILD "\"",
			 loader);
		return -EINVAL;
	}
	for (size_t i = 0; p->sub_name && i < p->sources.n; i++)
		p->split |= strcmp(p->sources.v[i], p->sub_name) == 0;
	if (!p->split || p->sources.n < 2 || included_by_others(t, p->sub)) {
		snprintf(msg, msg_size,
			 "task config loader \"%s\" needs the "
			 "submission among the sources, with the harness, and "
			 "#included by no other file",
			 loader);
		return -EINVAL;
	}
	return 0;
}

void kb__build_plan_free(struct kb__build_plan *p)
{
	kb_argv_free(&p->sources);
}

/* ---- the user's commands ---- */

static void append_stream(struct kb_buf *b, const char *s, size_t len,
			  size_t dropped)
{
	if (!s || !len)
		return;
	kb_buf_append(b, s, len);
	if (s[len - 1] != '\n')
		kb_buf_append(b, "\n", 1);
	if (dropped)
		kb_buf_printf(b, "[... %zu more bytes not captured]\n",
			      dropped);
}

/* Copies the outputs out of J/step. Returns OK or INFRA with msg set. */
static enum kb_build_state take_outputs(const struct kb_build_ctx *c,
					const char *const *outputs, char *msg,
					size_t msg_size)
{
	char err[256];

	for (size_t i = 0; outputs && outputs[i]; i++)
		if (kb_jobdir_step_take(c->jd, outputs[i], -1, 0755, err,
					sizeof(err)) < 0) {
			snprintf(msg, msg_size,
				 "the build reported success but left no "
				 "usable output: %s",
				 err);
			return KB_BUILD_INFRA;
		}
	return KB_BUILD_OK;
}

enum kb_build_state kb__build_user(const struct kb_build_ctx *c,
				   struct kb__build_log *log,
				   const struct kb_argv *a,
				   const char *const *outputs, char *msg,
				   size_t msg_size)
{
	const struct kb_build_cmd cmd = {a, NULL, c->timeout_s, 0};
	struct kb_sandbox_result r = {0};
	char err[256] = "", *line = kb_argv_render(a);
	enum kb_build_state st;
	int rc;

	if ((rc = kb_jobdir_step_begin(c->jd, err, sizeof(err))) < 0) {
		snprintf(msg, msg_size, "%s", err);
		free(line);
		return KB_BUILD_INFRA;
	}
	rc = c->exec(c->exec_ctx, &cmd, &r, err, sizeof(err));
	log->wall += r.wall_s;
	if (log->cmds.len)
		kb_buf_append(&log->cmds, " && ", 4);
	kb_buf_append(&log->cmds, line, strlen(line));
	if (rc < 0 || r.infra_error) {
		snprintf(msg, msg_size, "%s", err[0] ? err : r.infra_msg);
		st = KB_BUILD_INFRA;
		log->exit_code = -1;
		goto out;
	}
	append_stream(&log->out, r.out, r.out_len, r.out_dropped);
	append_stream(&log->err, r.err, r.err_len, r.err_dropped);
	if (r.timed_out) {
		log->exit_code = -1;
		st = KB_BUILD_TIMEOUT;
	} else if (r.signaled) {
		/* A compiler killed by a signal (memory limit, an internal
		 * error on hostile input) is reported as its shell would. */
		log->exit_code = 128 + r.signal;
		st = KB_BUILD_FAILED;
	} else if (r.exit_code == 127) {
		log->exit_code = 127;
		snprintf(msg, msg_size, "compiler %s not found", a->v[0]);
		st = KB_BUILD_INFRA;
	} else if (r.exit_code != 0) {
		log->exit_code = r.exit_code;
		st = KB_BUILD_FAILED;
	} else {
		log->exit_code = 0;
		st = take_outputs(c, outputs, msg, msg_size);
	}
out:
	kb_jobdir_step_end(c->jd);
	if (st != KB_BUILD_OK && !log->failed_cmd) {
		log->failed_cmd = line;
		line = NULL;
	}
	free(line);
	kb_sandbox_result_clear(&r);
	return st;
}

void kb__build_finish(const struct kb_build_ctx *c, struct kb__build_log *log,
		      enum kb_build_state st, Kb__CompileResult *cr)
{
	cr->duration_s = log->wall;
	cr->success = st == KB_BUILD_OK;
	cr->exit_code = st == KB_BUILD_OK ? 0
			: log->exit_code  ? log->exit_code
					  : -1;
	kb__pb_take_str(&cr->command,
			log->failed_cmd
				? log->failed_cmd
				: kb__xstrdup(log->cmds.data ? log->cmds.data
							     : ""));
	log->failed_cmd = NULL;
	kb__pb_take_str(&cr->stdout, kb__pb_output(log->out.data, log->out.len,
						   0, c->output_max));
	kb__pb_take_str(&cr->stderr, kb__pb_output(log->err.data, log->err.len,
						   0, c->output_max));
	kb_buf_free(&log->out);
	kb_buf_free(&log->err);
	kb_buf_free(&log->cmds);
}

/* ---- compiler versions, remembered per binary ---- */

#define VERSION_MEMO 4

static pthread_mutex_t memo_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
	char compiler[PATH_MAX];
	struct stat st; /* zero when the compiler is found through PATH */
	char *text;
} memo[VERSION_MEMO];

static int same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	       a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

static char *memo_find(const char *compiler, const struct stat *st)
{
	char *text = NULL;

	pthread_mutex_lock(&memo_mu);
	for (int i = 0; i < VERSION_MEMO && !text; i++)
		if (memo[i].text && strcmp(memo[i].compiler, compiler) == 0 &&
		    same_file(&memo[i].st, st))
			text = kb__xstrdup(memo[i].text);
	pthread_mutex_unlock(&memo_mu);
	return text;
}

static void memo_add(const char *compiler, const struct stat *st,
		     const char *text)
{
	static int next;
	int i;

	pthread_mutex_lock(&memo_mu);
	i = next++ % VERSION_MEMO;
	free(memo[i].text);
	snprintf(memo[i].compiler, sizeof(memo[i].compiler), "%s", compiler);
	memo[i].st = *st;
	memo[i].text = kb__xstrdup(text);
	pthread_mutex_unlock(&memo_mu);
}

enum kb_build_state kb__build_version(const struct kb_build_ctx *c,
				      const char *compiler, char **text,
				      double *wall_s, char *msg,
				      size_t msg_size)
{
	struct kb_argv a = {0};
	struct kb_build_cmd cmd = {&a, NULL, c->timeout_s, 0};
	struct kb_sandbox_result r = {0};
	struct stat st = {0};
	char err[256] = "";
	int rc;

	/* A path can be checked for a new binary; a name looked up in PATH
	 * is taken to stay what it was. What the sandbox cannot find, it
	 * reports below. */
	if (strchr(compiler, '/') && stat(compiler, &st) < 0)
		memset(&st, 0, sizeof(st));
	if ((*text = memo_find(compiler, &st)))
		return KB_BUILD_OK;
	if (kb_jobdir_step_begin(c->jd, err, sizeof(err)) < 0) {
		snprintf(msg, msg_size, "%s", err);
		return KB_BUILD_INFRA;
	}
	kb_argv_push(&a, compiler);
	kb_argv_push(&a, "--version");
	rc = c->exec(c->exec_ctx, &cmd, &r, err, sizeof(err));
	kb_jobdir_step_end(c->jd);
	kb_argv_free(&a);
	*wall_s += r.wall_s;
	if (rc < 0 || r.infra_error || r.timed_out || r.signaled ||
	    r.exit_code != 0 || !r.out || !r.out[0]) {
		if (rc < 0 || r.infra_error)
			snprintf(msg, msg_size, "%s",
				 err[0] ? err : r.infra_msg);
		else
			snprintf(msg, msg_size, "%s --version failed%s%s",
				 compiler,
				 r.exit_code == 127 ? ": not found" : "",
				 r.timed_out ? ": timed out" : "");
		kb_sandbox_result_clear(&r);
		return KB_BUILD_INFRA;
	}
	*text = kb__xstrdup(r.out);
	kb_sandbox_result_clear(&r);
	memo_add(compiler, &st, *text);
	return KB_BUILD_OK;
}
