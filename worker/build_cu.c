/* kb_build_cu: see build_cu.h for the two build shapes and the flags;
 * the cache of harness objects is build_cu_cache.c.
 *
 * Every command runs through the caller's exec (the sandbox, no GPU).
 * Output of the user's steps (submission, seal, link; or the one-shot
 * build) goes into the CompileResult in order, cut after output_max bytes
 * (kb_truncate keeps the beginning: the first errors are the ones that
 * matter); a harness object that does not compile is the platform's
 * fault, logged and reported as infra.
 */
#include "build_cu.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpu.h"
#include "jobdir.h"
#include "kb_elfcheck.h"
#include "kb_log.h"
#include "kb_util.h"
#include "pbutil.h"

#define DEFAULT_CUDA_HOME "/usr/local/cuda"
#define FILL_TIMEOUT_MIN_S 300.0
#define FILL_TIMEOUT_MAX_S 1800.0
#define OBJECT_MAX ((size_t)256 << 20)

struct cu_build {
	const struct kb_build_ctx *c;
	Kb__CompileResult *cr;
	char nvcc[PATH_MAX];
	char gencode[96];
	long sub;                  /* the submission's task file, or < 0 */
	const char *sub_name;
	struct kb_argv sources;    /* config.sources */
	int split, seal;
	struct kb_argv cuda_flags; /* CUDA sources, before the gencode */
	struct kb_argv c_flags;    /* -I and -D, for C sources */
	struct kb_argv link_flags; /* the task's own flags, for the link */
	struct kb_argv libs;
	char *version;             /* nvcc --version */
	struct kb_buf out, err;    /* the user's steps' output, in order */
	struct kb_buf cmds;        /* the user's steps, " && " joined */
	double wall;
};

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int is_c_source(const char *name)
{
	return ends_with(name, ".c");
}

static void push_all(struct kb_argv *a, const struct kb_argv *from)
{
	for (size_t i = 0; i < from->n; i++)
		kb_argv_push(a, from->v[i]);
}

static int content_is(const ProtobufCBinaryData *d, const void *p, size_t n)
{
	return d->len == n && (n == 0 || memcmp(d->data, p, n) == 0);
}

long kb__cu_submission_file(const Kb__Task *t, const ProtobufCBinaryData *code)
{
	const size_t mark = strlen(KB_SUBMISSION_MARK);
	long found = -1;

	for (size_t i = 0; i < t->n_files; i++) {
		const ProtobufCBinaryData *d = &t->files[i]->content;

		if (!content_is(d, KB_SUBMISSION_MARK, mark) &&
		    !(code && content_is(d, code->data, code->len)))
			continue;
		if (found >= 0)
			return -2;
		found = (long)i;
	}
	return found;
}

/* Whether some other task file #includes the submission's file: then
 * objects of that file depend on the user's code and cannot be cached. */
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

static int task_has_file(const Kb__Task *t, const char *name, long except)
{
	for (size_t i = 0; i < t->n_files; i++)
		if ((long)i != except && strcmp(t->files[i]->name, name) == 0)
			return 1;
	return 0;
}

/* "kbg_main.cu" -> "kbg_main.o". */
static char *object_name(const char *source)
{
	const char *dot = strrchr(source, '.');
	size_t stem = dot && dot != source ? (size_t)(dot - source)
					   : strlen(source);

	return kb__xasprintf("%.*s.o", (int)stem, source);
}

/* One compile command: nvcc, the flags for the source's kind, -c, -o. */
static void compile_argv(const struct cu_build *b, struct kb_argv *a,
			 const char *src, const char *obj, int harness)
{
	kb_argv_push(a, b->nvcc);
	if (is_c_source(src)) {
		kb_argv_push(a, "-O3");
		kb_argv_push(a, b->gencode);
		kb_argv_push(a, "-Xcompiler");
		kb_argv_push(a, harness ? "-std=gnu17,-fvisibility=hidden"
					: "-std=gnu17");
		push_all(a, &b->c_flags);
	} else {
		push_all(a, &b->cuda_flags);
		kb_argv_push(a, b->gencode);
		if (harness) {
			kb_argv_push(a, "-Xcompiler");
			kb_argv_push(a, "-fvisibility=hidden");
		}
	}
	kb_argv_push(a, "-c");
	kb_argv_push(a, src);
	kb_argv_push(a, "-o");
	kb_argv_push(a, obj);
}

/* ---- running commands ---- */

enum step_end {
	STEP_OK,
	STEP_EXIT,     /* exited nonzero */
	STEP_SIGNAL,
	STEP_TIMEOUT,
	STEP_INFRA,    /* the sandbox failed; msg says why */
};

static void append_stream(struct kb_buf *b, const char *s, size_t len,
			  size_t dropped)
{
	if (!s || !len)
		return;
	kb_buf_append(b, s, len);
	if (len && s[len - 1] != '\n')
		kb_buf_append(b, "\n", 1);
	if (dropped)
		kb_buf_printf(b, "[... %zu more bytes not captured]\n",
			      dropped);
}

/* Runs argv in dir; fills *r (the caller clears it). */
static enum step_end run(const struct kb_build_ctx *c, const struct kb_argv *a,
			 const char *dir, double timeout_s,
			 struct kb_sandbox_result *r, char *msg,
			 size_t msg_size)
{
	const struct kb_build_cmd cmd = {a, dir, timeout_s};
	char err[256] = "";
	int rc;

	memset(r, 0, sizeof(*r));
	rc = c->exec(c->exec_ctx, &cmd, r, err, sizeof(err));
	if (rc < 0 || r->infra_error) {
		snprintf(msg, msg_size, "%s", err[0] ? err : r->infra_msg);
		return STEP_INFRA;
	}
	if (r->timed_out)
		return STEP_TIMEOUT;
	if (r->signaled)
		return STEP_SIGNAL;
	return r->exit_code == 0 ? STEP_OK : STEP_EXIT;
}

/* A step of the user's build (submission, seal, link, one-shot): its
 * output goes to the CompileResult; its end becomes a build state. seal:
 * the seal script, whose only user-caused failure is exit 1. */
static enum kb_build_state user_step(struct cu_build *b,
				     const struct kb_argv *a, int seal,
				     char *msg, size_t msg_size)
{
	struct kb_sandbox_result r;
	enum step_end e;
	enum kb_build_state st;
	char *line = kb_argv_render(a);

	e = run(b->c, a, NULL, b->c->timeout_s, &r, msg, msg_size);
	b->wall += r.wall_s;
	append_stream(&b->out, r.out, r.out_len, r.out_dropped);
	append_stream(&b->err, r.err, r.err_len, r.err_dropped);
	if (b->cmds.len)
		kb_buf_append(&b->cmds, " && ", 4);
	kb_buf_append(&b->cmds, line, strlen(line));
	switch (e) {
	case STEP_OK:
		st = KB_BUILD_OK;
		break;
	case STEP_TIMEOUT:
		b->cr->exit_code = -1;
		st = KB_BUILD_TIMEOUT;
		break;
	case STEP_SIGNAL:
		/* As its shell would report it (memory limit, a crash on
		 * hostile input). */
		b->cr->exit_code = 128 + r.signal;
		st = KB_BUILD_FAILED;
		break;
	case STEP_EXIT:
		b->cr->exit_code = r.exit_code;
		if (r.exit_code == 127) {
			snprintf(msg, msg_size, "%s not found", a->v[0]);
			st = KB_BUILD_INFRA;
		} else if (seal && r.exit_code != 1) {
			snprintf(msg, msg_size, "%s failed with exit status %d",
				 KB_CU_SEAL_SCRIPT, r.exit_code);
			st = KB_BUILD_INFRA;
		} else {
			st = KB_BUILD_FAILED;
		}
		break;
	default:
		b->cr->exit_code = -1;
		st = KB_BUILD_INFRA;
		break;
	}
	if (st != KB_BUILD_OK)
		kb__pb_take_str(&b->cr->command, line);
	else
		free(line);
	kb_sandbox_result_clear(&r);
	return st;
}

/* The sealed submission object, inspected before it is linked
 * (kb_elfcheck_nvcc): the harness forks first thing in main(), so code of
 * the user's that runs before main -- a constructor, a namespace-scope
 * object's initialiser, anything nvcc's own registration constructor is
 * made to call -- would run in its trusted parent. Returns KB_BUILD_OK,
 * KB_BUILD_FAILED (a compile error: the message goes to the build's
 * stderr) or KB_BUILD_INFRA (msg set). */
static enum kb_build_state inspect(struct cu_build *b, char *msg,
				   size_t msg_size)
{
	static const char *const exports[] = {KB_CU_EXPORT, NULL};
	const struct kb_elfcheck_policy pol = {exports, exports, b->sub_name};
	struct kb_elfcheck_result res;
	char path[PATH_MAX], err[256] = "", *obj = NULL;
	size_t len = 0;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", b->c->jobdir,
		 KB_CU_SUBMISSION_OBJ);
	rc = kb_read_file(path, OBJECT_MAX, &obj, &len);
	if (rc == -EFBIG) {
		snprintf(res.msg, sizeof(res.msg),
			 "%s: the compiled object is larger than %zu MiB, too "
			 "large to inspect", b->sub_name, OBJECT_MAX >> 20);
	} else if (rc < 0) {
		snprintf(msg, msg_size, "read %s: %s", path, strerror(-rc));
		return KB_BUILD_INFRA;
	} else if (kb_elfcheck_nvcc(obj, len, &pol, &res, err,
				    sizeof(err)) < 0) {
		snprintf(res.msg, sizeof(res.msg),
			 "%s: the compiled object could not be inspected (%s)",
			 b->sub_name, err);
	} else if (!res.found) {
		free(obj);
		return KB_BUILD_OK;
	}
	free(obj);
	kb_buf_printf(&b->err, "%s\n", res.msg);
	b->cr->exit_code = 1;
	kb__pb_take_str(&b->cr->command, kb__xstrdup(b->cmds.data));
	return KB_BUILD_FAILED;
}

/* ---- nvcc --version, remembered per binary ---- */

static pthread_mutex_t memo_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
	char path[PATH_MAX];
	struct stat st;
	char *text;
} memo;

static int same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	       a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

static enum kb_build_state nvcc_version(struct cu_build *b, char *msg,
					size_t msg_size)
{
	struct kb_argv a = {0};
	struct kb_sandbox_result r;
	struct stat st;
	enum step_end e;
	const int known = stat(b->nvcc, &st) == 0;

	if (known) {
		pthread_mutex_lock(&memo_mu);
		if (memo.text && strcmp(memo.path, b->nvcc) == 0 &&
		    same_file(&memo.st, &st))
			b->version = kb__xstrdup(memo.text);
		pthread_mutex_unlock(&memo_mu);
		if (b->version)
			return KB_BUILD_OK;
	}
	kb_argv_push(&a, b->nvcc);
	kb_argv_push(&a, "--version");
	e = run(b->c, &a, NULL, b->c->timeout_s, &r, msg, msg_size);
	kb_argv_free(&a);
	b->wall += r.wall_s;
	if (e != STEP_OK || !r.out || !r.out[0]) {
		if (e != STEP_INFRA)
			snprintf(msg, msg_size, "%s --version failed%s%s",
				 b->nvcc,
				 e == STEP_EXIT && r.exit_code == 127
					 ? ": not found (KB_CUDA_HOME?)" : "",
				 e == STEP_TIMEOUT ? ": timed out" : "");
		kb_sandbox_result_clear(&r);
		return KB_BUILD_INFRA;
	}
	b->version = kb__xstrdup(r.out);
	kb_sandbox_result_clear(&r);
	if (known) {
		pthread_mutex_lock(&memo_mu);
		free(memo.text);
		snprintf(memo.path, sizeof(memo.path), "%s", b->nvcc);
		memo.st = st;
		memo.text = kb__xstrdup(b->version);
		pthread_mutex_unlock(&memo_mu);
	}
	return KB_BUILD_OK;
}

/* "CUDA 13.0" from "... Cuda compilation tools, release 13.0, V13.0.88". */
static void toolkit_release(const char *version, char *out, size_t size)
{
	const char *p = version ? strstr(version, "release ") : NULL;

	if (!out || !size)
		return;
	if (!p) {
		out[0] = '\0';
		return;
	}
	p += strlen("release ");
	snprintf(out, size, "CUDA %.*s", (int)strcspn(p, ", \n"), p);
}

/* ---- the two shapes ---- */

static int copy_file(const char *src, const char *dst)
{
	char *data;
	size_t len;
	int rc = kb_read_file(src, SIZE_MAX, &data, &len);

	if (rc < 0)
		return rc;
	rc = kb_write_file(dst, data, len, 0644);
	free(data);
	return rc;
}

static enum kb_build_state build_split(struct cu_build *b, char *msg,
				       size_t msg_size)
{
	const struct kb_build_ctx *c = b->c;
	struct kb_cu_harness h = {.task = c->task, .sub_index = b->sub};
	struct kb_argv link = {0}, sub = {0}, seal = {0};
	char key[65], objdir[PATH_MAX], dir[PATH_MAX + 32];
	char src[PATH_MAX + 300], dst[PATH_MAX + 300];
	enum kb_build_state st = KB_BUILD_INFRA;
	double fill_s = 0, fill_timeout;
	int rc;

	h.cmds = kb__xcalloc(b->sources.n, sizeof(*h.cmds));
	h.objects = kb__xcalloc(b->sources.n, sizeof(*h.objects));
	for (size_t i = 0; i < b->sources.n; i++) {
		const char *s = b->sources.v[i];

		if (strcmp(s, b->sub_name) == 0)
			continue;
		h.objects[h.n] = object_name(s);
		for (size_t k = 0; k < h.n; k++)
			if (strcmp(h.objects[k], h.objects[h.n]) == 0) {
				snprintf(msg, msg_size,
					 "task sources %s and %s compile to "
					 "the same object", b->sources.v[k], s);
				h.n++;
				goto out;
			}
		compile_argv(b, &h.cmds[h.n], s, h.objects[h.n], 1);
		h.n++;
	}
	kb__cu_cache_key(&h, c->cuda_arch, b->version, key);
	fill_timeout = 5 * c->timeout_s;
	fill_timeout = fill_timeout < FILL_TIMEOUT_MIN_S ? FILL_TIMEOUT_MIN_S
		     : fill_timeout > FILL_TIMEOUT_MAX_S ? FILL_TIMEOUT_MAX_S
							 : fill_timeout;
	st = kb__cu_cache_get(c, &h, key, fill_timeout, objdir, sizeof(objdir),
			      &fill_s, msg, msg_size);
	b->wall += fill_s;
	if (st != KB_BUILD_OK)
		goto out;
	st = KB_BUILD_INFRA;
	snprintf(dir, sizeof(dir), "%s/%s", c->jobdir, KB_CU_OBJDIR);
	if (mkdir(dir, 0755) < 0) {
		snprintf(msg, msg_size, "mkdir %s: %s", dir, strerror(errno));
		goto out;
	}
	for (size_t i = 0; i < h.n; i++) {
		snprintf(src, sizeof(src), "%s/%s", objdir, h.objects[i]);
		snprintf(dst, sizeof(dst), "%s/%s", dir, h.objects[i]);
		if ((rc = copy_file(src, dst)) < 0) {
			snprintf(msg, msg_size, "copy %s: %s", src,
				 strerror(-rc));
			goto out;
		}
	}

	compile_argv(b, &sub, b->sub_name, KB_CU_SUBMISSION_OBJ, 0);
	if ((st = user_step(b, &sub, 0, msg, msg_size)) != KB_BUILD_OK)
		goto out;
	if (b->seal) {
		kb_argv_push(&seal, "/bin/sh");
		kb_argv_push(&seal, KB_CU_SEAL_SCRIPT);
		kb_argv_push(&seal, KB_CU_SUBMISSION_OBJ);
		kb_argv_push(&seal, KB_CU_EXPORT);
		if ((st = user_step(b, &seal, 1, msg, msg_size)) !=
			    KB_BUILD_OK ||
		    (st = inspect(b, msg, msg_size)) != KB_BUILD_OK)
			goto out;
	}
	kb_argv_push(&link, b->nvcc);
	kb_argv_push(&link, b->gencode);
	push_all(&link, &b->link_flags);
	kb_argv_push(&link, "-o");
	kb_argv_push(&link, KB_JOBDIR_BINARY);
	for (size_t i = 0; i < h.n; i++) {
		snprintf(dst, sizeof(dst), "%s/%s", KB_CU_OBJDIR, h.objects[i]);
		kb_argv_push(&link, dst);
	}
	kb_argv_push(&link, KB_CU_SUBMISSION_OBJ);
	push_all(&link, &b->libs);
	st = user_step(b, &link, 0, msg, msg_size);
out:
	for (size_t i = 0; i < h.n; i++) {
		kb_argv_free(&h.cmds[i]);
		free(h.objects[i]);
	}
	free(h.cmds);
	free(h.objects);
	kb_argv_free(&sub);
	kb_argv_free(&seal);
	kb_argv_free(&link);
	return st;
}

static enum kb_build_state build_oneshot(struct cu_build *b, char *msg,
					 size_t msg_size)
{
	struct kb_argv a = {0};
	enum kb_build_state st;

	kb_argv_push(&a, b->nvcc);
	push_all(&a, &b->cuda_flags);
	kb_argv_push(&a, b->gencode);
	push_all(&a, &b->sources);
	kb_argv_push(&a, "-o");
	kb_argv_push(&a, KB_JOBDIR_BINARY);
	push_all(&a, &b->libs);
	st = user_step(b, &a, 0, msg, msg_size);
	kb_argv_free(&a);
	return st;
}

/* Reads the task's config into b. Returns 0, or -EINVAL with msg set. */
static int plan(struct cu_build *b, char *msg, size_t msg_size)
{
	const Kb__Task *t = b->c->task;
	const char *flags = kb_builder_config(t, "flags");
	const char *cflags = kb_builder_config(t, "compile_flags");
	const char *incs = kb_builder_config(t, "include_dirs");
	const char *defs = kb_builder_config(t, "defines");
	struct kb_argv own = {0};
	int rc;

	if (kb__build_push_lines(&b->sources, kb_builder_config(t, "sources"),
				 NULL, 1, msg, msg_size) < 0)
		return -EINVAL;
	if (b->sources.n == 0) {
		snprintf(msg, msg_size, "task config has no sources");
		return -EINVAL;
	}
	/* The task's own flags: config.flags replaces the default. */
	rc = kb__build_push_lines(&own, flags, NULL, 0, msg, msg_size);
	if (rc == 0)
		rc = kb__build_push_lines(&own, cflags, NULL, 0, msg, msg_size);
	if (rc < 0) {
		kb_argv_free(&own);
		return rc;
	}
	if (!flags || flags[strspn(flags, " \t\r\n")] == '\0') {
		kb_argv_push(&b->cuda_flags, "-O3");
		kb_argv_push(&b->cuda_flags, "-std=c++17");
		kb_argv_push(&b->cuda_flags, "-lineinfo");
	}
	push_all(&b->cuda_flags, &own);
	push_all(&b->link_flags, &own);
	kb_argv_free(&own);
	if (kb__build_push_lines(&b->c_flags, incs, "-I", 0, msg,
				 msg_size) < 0 ||
	    kb__build_push_lines(&b->c_flags, defs, "-D", 0, msg,
				 msg_size) < 0 ||
	    kb__build_push_lines(&b->libs, kb_builder_config(t, "libraries"),
				 "-l", 0, msg, msg_size) < 0)
		return -EINVAL;
	push_all(&b->cuda_flags, &b->c_flags);
	kb_argv_push(&b->libs, "-lcuda");
	kb_argv_push(&b->libs, "-ldl");

	b->sub = kb__cu_submission_file(t, b->c->code);
	b->sub_name = b->sub >= 0 ? t->files[b->sub]->name : NULL;
	b->seal = task_has_file(t, KB_CU_SEAL_SCRIPT, b->sub);
	b->split = 0;
	if (b->sub_name && b->sources.n >= 2 &&
	    !included_by_others(t, b->sub))
		for (size_t i = 0; i < b->sources.n; i++)
			b->split |= strcmp(b->sources.v[i], b->sub_name) == 0;
	if (b->seal && !b->split)
		kb_warn("cu task ships %s but its submission is not a separate "
			"source: built in one step, unsealed",
			KB_CU_SEAL_SCRIPT);
	return 0;
}

enum kb_build_state kb__build_cu(const struct kb_build_ctx *c,
				 Kb__CompileResult *cr, char *msg,
				 size_t msg_size)
{
	struct cu_build b = {.c = c, .cr = cr};
	const char *home = c->cuda_home && c->cuda_home[0] ? c->cuda_home
							   : DEFAULT_CUDA_HOME;
	enum kb_build_state st = KB_BUILD_INFRA;

	cr->exit_code = -1;
	if (!c->cuda_arch || !kb_gpu_arch_valid(c->cuda_arch)) {
		/* A CPU worker, or a GPU worker that could not tell its
		 * device: retrying here cannot help. */
		snprintf(msg, msg_size,
			 "lang cu is not supported on this worker (%s): no "
			 "CUDA architecture known for its device "
			 "(KB_CUDA_ARCH)", c->gpu ? c->gpu : "?");
		kb__pb_set_str(&cr->stderr, msg);
		return KB_BUILD_UNSUPPORTED;
	}
	snprintf(b.nvcc, sizeof(b.nvcc), "%s/bin/nvcc", home);
	snprintf(b.gencode, sizeof(b.gencode),
		 "-gencode=arch=compute_%s,code=sm_%s", c->cuda_arch,
		 c->cuda_arch);
	if (plan(&b, msg, msg_size) < 0)
		goto out;
	if ((st = nvcc_version(&b, msg, msg_size)) != KB_BUILD_OK)
		goto out;
	toolkit_release(b.version, c->toolkit, c->toolkit_size);
	st = b.split ? build_split(&b, msg, msg_size)
		     : build_oneshot(&b, msg, msg_size);
out:
	cr->duration_s = b.wall;
	cr->success = st == KB_BUILD_OK;
	if (st == KB_BUILD_OK) {
		cr->exit_code = 0;
		kb__pb_take_str(&cr->command, kb__xstrdup(b.cmds.data));
	}
	kb__pb_take_str(&cr->stdout, kb__pb_output(b.out.data, b.out.len, 0,
						   c->output_max));
	kb__pb_take_str(&cr->stderr, kb__pb_output(b.err.data, b.err.len, 0,
						   c->output_max));
	kb_argv_free(&b.sources);
	kb_argv_free(&b.cuda_flags);
	kb_argv_free(&b.c_flags);
	kb_argv_free(&b.link_flags);
	kb_argv_free(&b.libs);
	kb_buf_free(&b.out);
	kb_buf_free(&b.err);
	kb_buf_free(&b.cmds);
	free(b.version);
	return st;
}
