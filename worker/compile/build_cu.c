/* The "cu" builder (build.h): nvcc for the worker's architecture.
 *
 * Flags: CUDA sources get config.flags when the task sets it (it replaces
 * the default, as upstream's `flags` replaces its CUDA_FLAGS), else
 * upstream KernelBot's CUDA_FLAGS and -lineinfo (CU_FLAGS below); then
 * config.compile_flags, -I include_dirs, -D defines and
 * `-gencode=arch=compute_<arch>,code=sm_<arch>`. C sources (.c) of a
 * harness get `-O3 <gencode> -Xcompiler -std=gnu17` plus -I and -D.
 * config.libraries become -l flags of every link.
 *
 * Split tasks (build.h): the harness is compiled source by source and
 * linked with the shared CUDA runtime (-cudart shared), -lcuda and -ldl
 * into a cached eval.out; the submission alone becomes submission.so
 * (-shared, -fPIC, the shared runtime, so that the harness's child and
 * the submission share one runtime and one context), linked with
 * --no-undefined and --require-defined=custom_kernel so that a missing
 * function or entry point is a compile error here, not a failure to load
 * in the run, and with cuBLAS and cuBLASLt as needed (what competitors
 * reach for first; other libraries through config.libraries). One-shot tasks: one nvcc command over every source, with the
 * runtime upstream uses (static).
 *
 * The toolkit is <cuda_home>/bin/nvcc; its --version goes into the cache
 * key and its release into the Result ("CUDA 13.0").
 */
#include "build_int.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvidia.h"
#include "pbutil.h"

#define DEFAULT_CUDA_HOME "/usr/local/cuda"

/* Upstream KernelBot's CUDA_FLAGS (libkernelbot/consts.py), so that code
 * written for it compiles unchanged, and -lineinfo for profiles. */
static const char *const CU_FLAGS[] = {
	"--std=c++20",
	"-DNDEBUG",
	"-Xcompiler=-Wno-psabi",
	"-Xcompiler=-fno-strict-aliasing",
	"--expt-extended-lambda",
	"--expt-relaxed-constexpr",
	"-forward-unknown-to-host-compiler",
	"-O3",
	"-Xnvlink=--verbose",
	"-Xptxas=--verbose",
	"-Xptxas=--warn-on-spills",
	"-lineinfo",
	NULL,
};

struct cu {
	struct kb_build_ctx *c;
	struct kb__build_plan p;
	char nvcc[PATH_MAX];
	char gencode[96];
	struct kb_argv cuda_flags; /* CUDA sources, before the gencode */
	struct kb_argv c_flags;    /* -I and -D */
	struct kb_argv libs;       /* -l */
	char *version;             /* nvcc --version */
};

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Reads the task's config. Returns 0, or -1 with msg set. */
static int cu_flags(struct cu *b, char *msg, size_t msg_size)
{
	return kb__build_task_flags(b->c->task, CU_FLAGS, &b->cuda_flags,
				    &b->c_flags, &b->libs, msg, msg_size);
}

/* One harness compile (kb__compile_fn): nvcc, the flags for the source's
 * kind, -c, -o. */
static void compile_argv(const void *builder, struct kb_argv *a,
			 const char *src, const char *obj)
{
	const struct cu *b = builder;

	kb_argv_push(a, b->nvcc);
	if (ends_with(src, ".c")) {
		kb_argv_push(a, "-O3");
		kb_argv_push(a, b->gencode);
		kb_argv_push(a, "-Xcompiler");
		kb_argv_push(a, "-std=gnu17");
		kb__build_push_all(a, &b->c_flags);
	} else {
		kb__build_push_all(a, &b->cuda_flags);
		kb_argv_push(a, b->gencode);
	}
	kb_argv_push(a, "-c");
	kb_argv_push(a, src);
	kb_argv_push(a, "-o");
	kb_argv_push(a, obj);
}

/* The cached harness, linked with the shared CUDA runtime. */
static enum kb_build_state cu_harness(struct cu *b, struct kb__build_log *log,
				      char *msg, size_t msg_size)
{
	struct kb_argv link = {0}, tail = {0};
	enum kb_build_state st;

	kb_argv_push(&link, b->nvcc);
	kb_argv_push(&link, b->gencode);
	kb_argv_push(&link, "-o");
	kb_argv_push(&link, KB_BUILD_STEP KB_JOBDIR_BINARY);
	kb_argv_push(&tail, "-cudart");
	kb_argv_push(&tail, "shared");
	kb__build_push_all(&tail, &b->libs);
	kb_argv_push(&tail, "-lcuda");
	kb_argv_push(&tail, "-ldl");
	st = kb__build_harness(b->c, &b->p, b->version, compile_argv, b, &link,
			       &tail, &log->wall, msg, msg_size);
	kb_argv_free(&tail);
	return st;
}

static enum kb_build_state cu_submission(struct cu *b,
					 struct kb__build_log *log, char *msg,
					 size_t msg_size)
{
	static const char *const outputs[] = {KB_BUILD_SUBMISSION_SO, NULL};
	struct kb_argv a = {0};
	enum kb_build_state st;

	kb_argv_push(&a, b->nvcc);
	kb__build_push_all(&a, &b->cuda_flags);
	kb_argv_push(&a, b->gencode);
	kb_argv_push(&a, "-shared");
	kb_argv_push(&a, "-Xcompiler=-fPIC");
	kb_argv_push(&a, "-cudart");
	kb_argv_push(&a, "shared");
	kb_argv_push(&a, "-Xlinker=--no-undefined");
	kb_argv_push(&a, "-Xlinker=--require-defined=" KB_BUILD_ENTRY);
	kb_argv_push(&a, b->p.sub_name);
	kb_argv_push(&a, "-o");
	kb_argv_push(&a, KB_BUILD_STEP KB_BUILD_SUBMISSION_SO);
	kb__build_push_all(&a, &b->libs);
	/* The libraries competitors reach for, linked only when used. */
	kb_argv_push(&a, "-Xlinker=--as-needed");
	kb_argv_push(&a, "-lcublas");
	kb_argv_push(&a, "-lcublasLt");
	kb_argv_push(&a, "-lcuda");
	st = kb__build_user_cached(b->c, log, &a, outputs, b->version, msg,
				   msg_size);
	b->c->loads_submission = st == KB_BUILD_OK;
	kb_argv_free(&a);
	return st;
}

static enum kb_build_state cu_oneshot(struct cu *b, struct kb__build_log *log,
				      char *msg, size_t msg_size)
{
	static const char *const outputs[] = {KB_JOBDIR_BINARY, NULL};
	struct kb_argv a = {0};
	enum kb_build_state st;

	kb_argv_push(&a, b->nvcc);
	kb__build_push_all(&a, &b->cuda_flags);
	kb_argv_push(&a, b->gencode);
	kb__build_push_all(&a, &b->p.sources);
	kb_argv_push(&a, "-o");
	kb_argv_push(&a, KB_BUILD_STEP KB_JOBDIR_BINARY);
	kb__build_push_all(&a, &b->libs);
	kb_argv_push(&a, "-lcuda");
	st = kb__build_user(b->c, log, &a, outputs, msg, msg_size);
	kb_argv_free(&a);
	return st;
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

enum kb_build_state kb__build_cu(struct kb_build_ctx *c, Kb__CompileResult *cr,
				 char *msg, size_t msg_size)
{
	struct cu b = {.c = c};
	struct kb__build_log log = {0};
	const char *home = c->cuda_home && c->cuda_home[0] ? c->cuda_home
							   : DEFAULT_CUDA_HOME;
	enum kb_build_state st = KB_BUILD_INFRA;

	if (!c->cuda_arch || !kb_nvidia_arch_valid(c->cuda_arch)) {
		/* A CPU worker, or a GPU worker that could not tell its
		 * device: retrying here cannot help. */
		snprintf(msg, msg_size,
			 "lang cu is not supported on this worker (%s): no "
			 "CUDA architecture known for its device "
			 "(KB_CUDA_ARCH)",
			 c->gpu ? c->gpu : "?");
		cr->success = 0;
		cr->exit_code = -1;
		kb__pb_set_str(&cr->stderr, msg);
		return KB_BUILD_UNSUPPORTED;
	}
	snprintf(b.nvcc, sizeof(b.nvcc), "%s/bin/nvcc", home);
	snprintf(b.gencode, sizeof(b.gencode),
		 "-gencode=arch=compute_%s,code=sm_%s", c->cuda_arch,
		 c->cuda_arch);
	if (kb__build_plan(c, &b.p, msg, msg_size) < 0 ||
	    cu_flags(&b, msg, msg_size) < 0)
		goto out;
	st = kb__build_version(c, b.nvcc, &b.version, &log.wall, msg, msg_size);
	if (st != KB_BUILD_OK)
		goto out;
	toolkit_release(b.version, c->toolkit, c->toolkit_size);
	if (!b.p.split)
		st = cu_oneshot(&b, &log, msg, msg_size);
	else if ((st = cu_harness(&b, &log, msg, msg_size)) == KB_BUILD_OK)
		st = cu_submission(&b, &log, msg, msg_size);
out:
	kb__build_finish(c, &log, st, cr);
	kb__build_plan_free(&b.p);
	kb_argv_free(&b.cuda_flags);
	kb_argv_free(&b.c_flags);
	kb_argv_free(&b.libs);
	free(b.version);
	return st;
}
