#include "selftest.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb_lang.h"
#include "kb_log.h"
#include "kb_task.h"
#include "kb_util.h"
#include "kb_report.h"
#include "submission.h"

#define SUBMISSION_MAX (1u << 20)
#define EXAMPLE "submission_ok."

/* The problem's example, dir/submission_ok.<anything>, into path. */
static int find_example(const char *dir, char *path, size_t size)
{
	DIR *d = dir ? opendir(dir) : NULL;
	struct dirent *e;
	int rc = -ENOENT;

	while (d && rc && (e = readdir(d)))
		if (strncmp(e->d_name, EXAMPLE, strlen(EXAMPLE)) == 0) {
			snprintf(path, size, "%s/%s", dir, e->d_name);
			rc = 0;
		}
	if (d)
		closedir(d);
	return rc;
}

/* Whether this worker builds lang at all (a CPU worker has no CUDA, an
 * NVIDIA worker no gfx target). */
static int serves(const struct kb_eval_opts *o, const char *lang)
{
	const struct kb_lang *l = kb_lang_find(lang);

	if (l && l->toolchain == KB_LANG_NVIDIA)
		return o->cuda_arch != NULL;
	if (l && l->toolchain == KB_LANG_AMD)
		return o->hip_arch != NULL;
	return 1;
}

/* Evaluates the example of t (full test run, or the build alone).
 * Returns 0, or -EIO with errstr set. */
static int check(const struct kb_eval_opts *o, const struct kb_task *t,
		 const char *example, int build_only, char *errstr,
		 size_t errstr_size)
{
	struct kb_submission_args a = {.user_id = "selftest",
				       .user_name = "selftest",
				       .mode = KB__MODE__MODE_TEST};
	struct kb_eval_opts eo = *o;
	char file[PATH_MAX], err[512], *code = NULL, *slash;
	Kb__Submission *s;
	Kb__Result *r;
	size_t len;
	int rc = 0;

	if (kb_read_file(example, SUBMISSION_MAX, &code, &len) < 0) {
		snprintf(errstr, errstr_size, "%s: cannot read %s", t->name,
			 example);
		return -EIO;
	}
	snprintf(file, sizeof(file), "%s", example);
	slash = strrchr(file, '/');
	a.gpu = o->gpu;
	a.file_name = slash ? slash + 1 : file;
	a.code = code;
	a.code_len = len;
	a.submitted_at_ms = kb_now_ms();
	s = kb_submission_build(t, &a, err, sizeof(err));
	free(code);
	if (!s) {
		snprintf(errstr, errstr_size, "%s: %s", t->name, err);
		return -EIO;
	}
	eo.build_only = build_only;
	eo.progress = NULL;
	r = kb_eval_run(&eo, s);
	if (r->verdict != KB__VERDICT__VERDICT_PASSED) {
		const char *why = r->error && *r->error ? r->error
				  : r->compile && r->compile->stderr
					  ? r->compile->stderr
					  : "";

		snprintf(errstr, errstr_size, "%s (%s): %s %s: %.300s", t->name,
			 t->lang, slash ? slash + 1 : file,
			 kb_report_verdict_name(r->verdict), why);
		rc = -EIO;
	}
	kb__result__free_unpacked(r, NULL);
	kb__submission__free_unpacked(s, NULL);
	return rc;
}

int kb_selftest_run(const struct kb_eval_opts *opts, const char *problems,
		    char *errstr, size_t errstr_size)
{
	struct kb_problemset ps = {0};
	char tested[8][8] = {{0}};
	size_t ntested = 0;
	int n = 0, rc = 0;

	if (kb_problemset_load(problems, &ps, errstr, errstr_size) < 0)
		return -EINVAL;
	for (size_t i = 0; i < ps.n && rc == 0; i++) {
		const struct kb_task *t = &ps.tasks[i];
		char example[PATH_MAX];
		int first = 1;
		double t0 = kb_mono_s();

		if (!kb_task_has_gpu(t, opts->gpu) || !serves(opts, t->lang) ||
		    find_example(t->dir, example, sizeof(example)) < 0)
			continue;
		for (size_t k = 0; k < ntested; k++)
			first &= strcmp(tested[k], t->lang) != 0;
		if (first && ntested < 8)
			snprintf(tested[ntested++], sizeof(tested[0]), "%s",
				 t->lang);
		rc = check(opts, t, example, !first, errstr, errstr_size);
		if (rc == 0) {
			kb_info("selftest %s (%s): %s in %.1f s", t->name,
				t->lang, first ? "passed" : "built",
				kb_mono_s() - t0);
			n++;
		}
	}
	kb_problemset_clear(&ps);
	return rc < 0 ? rc : n;
}
