/* The "py" builder (build.h): upstream KernelBot's "compile" step,
 * `python3 submission.py` run once (120 s) before the harness, so that
 * torch.utils.cpp_extension (load_inline, load) builds the submission's
 * extension into TORCH_EXTENSIONS_DIR (in J/home, kept for the runs)
 * before anything is timed. Its output is the CompileResult.
 *
 * As upstream, the step never stops the job: whatever it ends with, the
 * runs follow (and show the same error again if there is one). It runs
 * only for submissions that use torch.utils.cpp_extension, the one thing
 * it warms (Triton compiles a kernel at its first call, which no import
 * makes); for the rest it would only cost an interpreter start and a
 * torch import per job. It runs like a run does: in a fresh J/step, with
 * the GPU (importing user code may touch it), without the report channel.
 */
#include "build_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pbutil.h"

#define PY_COMPILE_TIMEOUT_S 120.0

/* Whether the submission's code names torch.utils.cpp_extension. */
static int uses_cpp_extension(const ProtobufCBinaryData *code)
{
	return code && code->data &&
	       memmem(code->data, code->len, "cpp_extension", 13) != NULL;
}

int kb_build_py_compiles(const ProtobufCBinaryData *code)
{
	return uses_cpp_extension(code);
}

enum kb_build_state kb__build_py(struct kb_build_ctx *c, Kb__CompileResult *cr,
				 char *msg, size_t msg_size)
{
	const long sub = kb_builder_submission_file(c->task, c->code);
	struct kb__build_log log = {0};
	struct kb_sandbox_result r = {0};
	struct kb_argv a = {0};
	struct kb_build_cmd cmd = {&a, NULL, PY_COMPILE_TIMEOUT_S, 1};
	enum kb_build_state st = KB_BUILD_OK;
	char err[256] = "", *path, *line;
	int rc;

	if (sub < 0 || !uses_cpp_extension(c->code))
		return KB_BUILD_NONE;
	path = kb__xasprintf(KB_BUILD_TASK "%s", c->task->files[sub]->name);
	kb_argv_push(&a, c->python ? c->python : "python3");
	kb_argv_push(&a, path);
	free(path);
	if (kb_jobdir_step_begin(c->jd, err, sizeof(err)) < 0) {
		snprintf(msg, msg_size, "%s", err);
		kb_argv_free(&a);
		return KB_BUILD_INFRA;
	}
	cmd.cwd = c->jd->step;
	rc = c->exec(c->exec_ctx, &cmd, &r, err, sizeof(err));
	kb_jobdir_step_end(c->jd);
	line = kb_argv_render(&a);
	kb_buf_append(&log.cmds, line, strlen(line));
	free(line);
	log.wall = r.wall_s;
	if (rc < 0 || r.infra_error) {
		snprintf(msg, msg_size, "%s", err[0] ? err : r.infra_msg);
		st = KB_BUILD_INFRA;
	} else {
		if (r.out)
			kb_buf_append(&log.out, r.out, r.out_len);
		if (r.err)
			kb_buf_append(&log.err, r.err, r.err_len);
		log.exit_code = r.timed_out  ? -1
				: r.signaled ? 128 + r.signal
					     : r.exit_code;
	}
	kb_sandbox_result_clear(&r);
	kb_argv_free(&a);
	kb__build_finish(c, &log, st, cr);
	/* The step's own end is reported, not acted on. */
	cr->success = st == KB_BUILD_OK && log.exit_code == 0;
	cr->exit_code = st == KB_BUILD_OK ? log.exit_code : -1;
	return st;
}
