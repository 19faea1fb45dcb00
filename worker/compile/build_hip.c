/* The "hip" builder (build.h): hipcc for the worker's AMD gfx target.
 *
 * Flags: HIP sources get config.flags when the task sets it (it replaces
 * the default), else HIP_FLAGS below; then config.compile_flags, -I
 * include_dirs, -D defines and --offload-arch=<gfx>. C sources (.c) of a
 * harness get `-O3 --offload-arch=<gfx> -std=gnu17` plus -I and -D (the
 * target keeps hipcc from asking rocm_agent_enumerator for one).
 * config.libraries become -l flags of every link.
 *
 * Split tasks (build.h): the harness (problems/harness/cuda, built by
 * hipcc: problems/harness/hip) is compiled source by source and linked
 * with -ldl into a cached eval.out; hipcc links the shared HIP runtime
 * (libamdhip64) by default, so the harness's child and the submission
 * share one runtime. The submission alone becomes submission.so
 * (-shared, -fPIC) linked with --no-undefined and
 * --require-defined=custom_kernel, so that a missing function or entry
 * point is a compile error here. One-shot tasks: one hipcc command over
 * every source.
 *
 * The compiler is <hip_home>/bin/hipcc (KB_HIP_HOME, default /usr: where
 * Debian's hipcc lives; /opt/rocm for AMD's packages); its --version goes
 * into the cache key and its HIP version into the Result ("HIP 5.2").
 */
#include "build_int.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amd.h"
#include "pbutil.h"

#define DEFAULT_HIP_HOME "/usr"

static const char *const HIP_FLAGS[] = {
	"-std=c++20", "-DNDEBUG", "-O3", "-fno-strict-aliasing", NULL,
};

struct hip {
	struct kb_build_ctx *c;
	struct kb__build_plan p;
	char hipcc[PATH_MAX];
	char target[64];          /* --offload-arch=<gfx> */
	struct kb_argv hip_flags; /* HIP sources, before the target */
	struct kb_argv c_flags;   /* -I and -D */
	struct kb_argv libs;      /* -l */
	char *version;            /* hipcc --version */
};

/* Reads the task's config. Returns 0, or -1 with msg set. */
static int hip_config(struct hip *b, char *msg, size_t msg_size)
{
	return kb__build_task_flags(b->c->task, HIP_FLAGS, &b->hip_flags,
				    &b->c_flags, &b->libs, msg, msg_size);
}

static int is_c_source(const char *s)
{
	size_t n = strlen(s);

	return n > 2 && strcmp(s + n - 2, ".c") == 0;
}

/* One harness compile (kb__compile_fn): hipcc, the flags for the source's
 * kind, -c, -o. */
static void compile_argv(const void *builder, struct kb_argv *a,
			 const char *src, const char *obj)
{
	const struct hip *b = builder;

	kb_argv_push(a, b->hipcc);
	if (is_c_source(src)) {
		kb_argv_push(a, "-O3");
		kb_argv_push(a, b->target);
		kb_argv_push(a, "-std=gnu17");
		kb__build_push_all(a, &b->c_flags);
	} else {
		kb__build_push_all(a, &b->hip_flags);
		kb_argv_push(a, b->target);
	}
	kb_argv_push(a, "-c");
	kb_argv_push(a, src);
	kb_argv_push(a, "-o");
	kb_argv_push(a, obj);
}

/* The cached harness (hipcc links the shared HIP runtime itself). */
static enum kb_build_state hip_harness(struct hip *b, struct kb__build_log *log,
				       char *msg, size_t msg_size)
{
	struct kb_argv link = {0}, tail = {0};
	enum kb_build_state st;

	kb_argv_push(&link, b->hipcc);
	kb_argv_push(&link, b->target);
	kb_argv_push(&link, "-o");
	kb_argv_push(&link, KB_BUILD_STEP KB_JOBDIR_BINARY);
	kb__build_push_all(&tail, &b->libs);
	kb_argv_push(&tail, "-ldl");
	st = kb__build_harness(b->c, &b->p, b->version, compile_argv, b, &link,
			       &tail, &log->wall, msg, msg_size);
	kb_argv_free(&tail);
	return st;
}

/* The submission alone (split) or every source (one-shot), by the user's
 * side of the build. */
static enum kb_build_state hip_user(struct hip *b, struct kb__build_log *log,
				    char *msg, size_t msg_size)
{
	static const char *const so_out[] = {KB_BUILD_SUBMISSION_SO, NULL};
	static const char *const bin_out[] = {KB_JOBDIR_BINARY, NULL};
	struct kb_argv a = {0};
	enum kb_build_state st;

	kb_argv_push(&a, b->hipcc);
	kb__build_push_all(&a, &b->hip_flags);
	kb_argv_push(&a, b->target);
	if (b->p.split) {
		kb_argv_push(&a, "-shared");
		kb_argv_push(&a, "-fPIC");
		kb_argv_push(&a, "-Wl,--no-undefined");
		kb_argv_push(&a, "-Wl,--require-defined=" KB_BUILD_ENTRY);
		kb_argv_push(&a, b->p.sub_name);
		kb_argv_push(&a, "-o");
		kb_argv_push(&a, KB_BUILD_STEP KB_BUILD_SUBMISSION_SO);
	} else {
		kb__build_push_all(&a, &b->p.sources);
		kb_argv_push(&a, "-o");
		kb_argv_push(&a, KB_BUILD_STEP KB_JOBDIR_BINARY);
	}
	kb__build_push_all(&a, &b->libs);
	st = b->p.split ? kb__build_user_cached(b->c, log, &a, so_out,
						b->version, msg, msg_size)
			: kb__build_user(b->c, log, &a, bin_out, msg, msg_size);
	if (b->p.split)
		b->c->loads_submission = st == KB_BUILD_OK;
	kb_argv_free(&a);
	return st;
}

void kb__hip_release(const char *version, char *out, size_t size)
{
	const char *p = version ? strstr(version, "HIP version: ") : NULL;
	int major, minor;

	if (!out || !size)
		return;
	out[0] = '\0';
	if (p &&
	    sscanf(p + strlen("HIP version: "), "%d.%d", &major, &minor) == 2)
		snprintf(out, size, "HIP %d.%d", major, minor);
}

enum kb_build_state kb__build_hip(struct kb_build_ctx *c, Kb__CompileResult *cr,
				  char *msg, size_t msg_size)
{
	struct hip b = {.c = c};
	struct kb__build_log log = {0};
	const char *home = c->hip_home && c->hip_home[0] ? c->hip_home
							 : DEFAULT_HIP_HOME;
	enum kb_build_state st = KB_BUILD_INFRA;

	if (!c->hip_arch || !kb_amd_arch_valid(c->hip_arch)) {
		/* Not an AMD worker, or one that could not tell its device:
		 * retrying here cannot help. */
		snprintf(msg, msg_size,
			 "lang hip is not supported on this worker (%s): no "
			 "AMD gfx target known for its device (KB_HIP_ARCH)",
			 c->gpu ? c->gpu : "?");
		cr->success = 0;
		cr->exit_code = -1;
		kb__pb_set_str(&cr->stderr, msg);
		return KB_BUILD_UNSUPPORTED;
	}
	snprintf(b.hipcc, sizeof(b.hipcc), "%s/bin/hipcc", home);
	snprintf(b.target, sizeof(b.target), "--offload-arch=%s", c->hip_arch);
	if (kb__build_plan(c, &b.p, msg, msg_size) < 0 ||
	    hip_config(&b, msg, msg_size) < 0)
		goto out;
	st = kb__build_version(c, b.hipcc, &b.version, &log.wall, msg,
			       msg_size);
	if (st != KB_BUILD_OK)
		goto out;
	kb__hip_release(b.version, c->toolkit, c->toolkit_size);
	if (b.p.split)
		st = hip_harness(&b, &log, msg, msg_size);
	if (st == KB_BUILD_OK)
		st = hip_user(&b, &log, msg, msg_size);
out:
	kb__build_finish(c, &log, st, cr);
	kb__build_plan_free(&b.p);
	kb_argv_free(&b.hip_flags);
	kb_argv_free(&b.c_flags);
	kb_argv_free(&b.libs);
	free(b.version);
	return st;
}
