#include "submission.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobdir.h"
#include "kb_util.h"
#include "pbutil.h"

#define TASK_FILE_MAX (16u << 20)

static void copy_strings(char ***dst, size_t *n, char *const *src, size_t count)
{
	for (size_t i = 0; i < count; i++)
		kb__pb_append(dst, n, kb__xstrdup(src[i]));
}

static int add_file(Kb__Task *pt, const struct kb_task *t,
		    const struct kb_task_file *tf,
		    const struct kb_submission_args *a, char *errstr,
		    size_t errstr_size)
{
	Kb__TaskFile *f = kb__xcalloc(1, sizeof(*f));

	kb__task_file__init(f);
	f->name = kb__xstrdup(tf->name);
	kb__pb_append(&pt->files, &pt->n_files, f);
	if (strcmp(tf->source, KB_SUBMISSION_MARK) == 0) {
		f->content.data = kb__xcalloc(1, a->code_len);
		memcpy(f->content.data, a->code, a->code_len);
		f->content.len = a->code_len;
	} else {
		char *data;
		size_t len;
		/* kb_task_read: a sealed task's harness files have absolute
		 * sources (kb_seal.h). */
		int rc = kb_task_read(t, tf->source, TASK_FILE_MAX, &data, &len,
				      errstr, errstr_size);

		if (rc < 0)
			return rc;
		f->content.data = (uint8_t *)data;
		f->content.len = len;
	}
	return 0;
}

static Kb__Task *build_task(const struct kb_task *t,
			    const struct kb_submission_args *a, char *errstr,
			    size_t errstr_size)
{
	Kb__Task *pt = kb__xcalloc(1, sizeof(*pt));

	kb__task__init(pt);
	pt->lang = kb__xstrdup(t->lang);
	pt->ranking_by = kb__xstrdup(t->ranking_by);
	pt->test_timeout = t->test_timeout;
	pt->benchmark_timeout = t->benchmark_timeout;
	pt->ranked_timeout = t->ranked_timeout;
	pt->multi_gpu = t->multi_gpu;
	pt->sealed = t->sealed;
	copy_strings(&pt->tests, &pt->n_tests, t->tests, t->ntests);
	copy_strings(&pt->benchmarks, &pt->n_benchmarks, t->benchmarks,
		     t->nbenchmarks);
	for (size_t i = 0; i < t->nconfig; i++) {
		Kb__Task__ConfigEntry *e = kb__xcalloc(1, sizeof(*e));

		kb__task__config_entry__init(e);
		e->key = kb__xstrdup(t->config[i].key);
		e->value = kb__xstrdup(t->config[i].value);
		kb__pb_append(&pt->config, &pt->n_config, e);
	}
	for (size_t i = 0; i < t->nfiles; i++)
		if (add_file(pt, t, &t->files[i], a, errstr, errstr_size) < 0) {
			kb__task__free_unpacked(pt, NULL);
			return NULL;
		}
	return pt;
}

Kb__Submission *kb_submission_build(const struct kb_task *t,
				    const struct kb_submission_args *a,
				    char *errstr, size_t errstr_size)
{
	Kb__Submission *s;
	Kb__Task *pt = build_task(t, a, errstr, errstr_size);

	if (!pt)
		return NULL;
	s = kb__xcalloc(1, sizeof(*s));
	kb__submission__init(s);
	s->id = a->id;
	s->user_id = kb__xstrdup(a->user_id);
	s->user_name = kb__xstrdup(a->user_name);
	s->leaderboard = kb__xstrdup(t->name);
	s->gpu = kb__xstrdup(a->gpu);
	s->mode = a->mode;
	s->file_name = kb__xstrdup(a->file_name);
	s->code.data = kb__xcalloc(1, a->code_len);
	memcpy(s->code.data, a->code, a->code_len);
	s->code.len = a->code_len;
	s->task = pt;
	s->has_secret_seed = a->has_secret_seed;
	s->secret_seed = a->has_secret_seed ? a->secret_seed : 0;
	s->submitted_at_ms = a->submitted_at_ms;
	if (a->profile && a->mode == KB__MODE__MODE_PROFILE) {
		Kb__ProfileRequest *pr = kb__xcalloc(1, sizeof(*pr));

		kb__profile_request__init(pr);
		pr->has_benchmark_index = a->profile->has_benchmark_index;
		pr->benchmark_index = a->profile->benchmark_index;
		pr->ncu_kernel_name = kb__xstrdup(a->profile->ncu_kernel_name);
		pr->ncu_kernel_name_base =
			kb__xstrdup(a->profile->ncu_kernel_name_base);
		pr->ncu_launch_count = a->profile->ncu_launch_count;
		s->profile = pr;
	}
	return s;
}
