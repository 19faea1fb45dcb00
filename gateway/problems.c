/* The hosted problem set, prepared once at startup: every task file is read
 * from disk, the Task protobuf each Submission carries is built, and the
 * bodies of GET /leaderboards and GET /gpus/<lb> are rendered. After that
 * nothing here changes, so request threads share it without locks. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway.h"
#include "kb_cases.h"
#include "kb_util.h"

#define TASK_FILE_MAX (16u << 20)
#define SUBMISSION_SOURCE "@SUBMISSION@"

static int read_task_file(const struct kb_task *t, const char *rel, char **out,
			  size_t *len, char *errstr, size_t errstr_size)
{
	char path[PATH_MAX];
	int rc;

	if (snprintf(path, sizeof(path), "%s/%s", t->dir, rel) >= (int)sizeof(path)) {
		snprintf(errstr, errstr_size, "%s: path of %s too long", t->name, rel);
		return -ENAMETOOLONG;
	}
	rc = kb_read_file(path, TASK_FILE_MAX, out, len);
	if (rc < 0)
		snprintf(errstr, errstr_size, "%s: cannot read %s: %s", t->name,
			 path, strerror(-rc));
	return rc;
}

static int build_lb(struct kb_gw_lb *lb, const struct kb_task *t, char *errstr,
		    size_t errstr_size)
{
	Kb__Task init = KB__TASK__INIT;
	size_t nf = t->nfiles, nc = t->nconfig;

	lb->task = t;
	lb->submission_file = SIZE_MAX;
	lb->pb = init;
	lb->pb_files = calloc(nf ? nf : 1, sizeof(*lb->pb_files));
	lb->pb_file_ptrs = calloc(nf ? nf : 1, sizeof(*lb->pb_file_ptrs));
	lb->file_contents = calloc(nf ? nf : 1, sizeof(*lb->file_contents));
	lb->file_lens = calloc(nf ? nf : 1, sizeof(*lb->file_lens));
	lb->pb_config = calloc(nc ? nc : 1, sizeof(*lb->pb_config));
	lb->pb_config_ptrs = calloc(nc ? nc : 1, sizeof(*lb->pb_config_ptrs));
	if (!lb->pb_files || !lb->pb_file_ptrs || !lb->file_contents ||
	    !lb->file_lens || !lb->pb_config || !lb->pb_config_ptrs) {
		snprintf(errstr, errstr_size, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < nf; i++) {
		Kb__TaskFile fi = KB__TASK_FILE__INIT;
		lb->pb_files[i] = fi;
		lb->pb_files[i].name = t->files[i].name;
		lb->pb_file_ptrs[i] = &lb->pb_files[i];
		if (strcmp(t->files[i].source, SUBMISSION_SOURCE) == 0) {
			lb->submission_file = i;
			continue;
		}
		int rc = read_task_file(t, t->files[i].source,
					&lb->file_contents[i], &lb->file_lens[i],
					errstr, errstr_size);
		if (rc < 0)
			return rc;
		lb->task_bytes += lb->file_lens[i];
		lb->pb_files[i].content.data = (uint8_t *)lb->file_contents[i];
		lb->pb_files[i].content.len = lb->file_lens[i];
	}
	if (lb->submission_file == SIZE_MAX) {
		snprintf(errstr, errstr_size, "%s: no file has source %s", t->name,
			 SUBMISSION_SOURCE);
		return -EINVAL;
	}
	for (size_t i = 0; i < nc; i++) {
		Kb__Task__ConfigEntry ce = KB__TASK__CONFIG_ENTRY__INIT;
		lb->pb_config[i] = ce;
		lb->pb_config[i].key = t->config[i].key;
		lb->pb_config[i].value = t->config[i].value;
		lb->pb_config_ptrs[i] = &lb->pb_config[i];
	}
	lb->pb.lang = t->lang;
	lb->pb.n_files = nf;
	lb->pb.files = lb->pb_file_ptrs;
	lb->pb.n_config = nc;
	lb->pb.config = lb->pb_config_ptrs;
	lb->pb.n_tests = t->ntests;
	lb->pb.tests = t->tests;
	lb->pb.n_benchmarks = t->nbenchmarks;
	lb->pb.benchmarks = t->benchmarks;
	lb->pb.test_timeout = t->test_timeout;
	lb->pb.benchmark_timeout = t->benchmark_timeout;
	lb->pb.ranked_timeout = t->ranked_timeout;
	lb->pb.ranking_by = t->ranking_by ? t->ranking_by : "last";
	lb->pb.multi_gpu = t->multi_gpu ? 1 : 0;

	json_t *gpus = json_array();
	for (size_t i = 0; i < t->ngpus; i++)
		json_array_append_new(gpus, json_string(t->gpus[i]));
	lb->gpus_json = json_dumps(gpus, JSON_COMPACT);
	json_decref(gpus);
	if (!lb->gpus_json) {
		snprintf(errstr, errstr_size, "%s: cannot render gpus", t->name);
		return -EINVAL;
	}
	return 0;
}

int kb_gw_lbs_load(struct kb_gw *g, char *errstr, size_t errstr_size)
{
	int rc = kb_problemset_load(g->cfg.problems, &g->ps, errstr, errstr_size);

	if (rc < 0)
		return rc;
	g->lbs = calloc(g->ps.n ? g->ps.n : 1, sizeof(*g->lbs));
	if (!g->lbs) {
		snprintf(errstr, errstr_size, "out of memory");
		return -ENOMEM;
	}
	g->nlbs = g->ps.n;
	for (size_t i = 0; i < g->ps.n; i++) {
		rc = build_lb(&g->lbs[i], &g->ps.tasks[i], errstr, errstr_size);
		if (rc < 0)
			return rc;
		if (g->lbs[i].task_bytes > g->task_bytes_max)
			g->task_bytes_max = g->lbs[i].task_bytes;
	}
	g->leaderboards_json = kb_gw_render_leaderboards(g);
	if (!g->leaderboards_json) {
		snprintf(errstr, errstr_size, "cannot render the leaderboard list");
		return -EINVAL;
	}
	return 0;
}

void kb_gw_lbs_free(struct kb_gw *g)
{
	for (size_t i = 0; i < g->nlbs; i++) {
		struct kb_gw_lb *lb = &g->lbs[i];
		for (size_t f = 0; lb->file_contents && f < lb->task->nfiles; f++)
			free(lb->file_contents[f]);
		free(lb->file_contents);
		free(lb->file_lens);
		free(lb->pb_files);
		free(lb->pb_file_ptrs);
		free(lb->pb_config);
		free(lb->pb_config_ptrs);
		free(lb->gpus_json);
	}
	free(g->lbs);
	g->lbs = NULL;
	g->nlbs = 0;
	free(g->leaderboards_json);
	g->leaderboards_json = NULL;
	kb_problemset_clear(&g->ps);
}

const struct kb_gw_lb *kb_gw_lb_find(const struct kb_gw *g, const char *name)
{
	for (size_t i = 0; i < g->nlbs; i++)
		if (strcmp(g->lbs[i].task->name, name) == 0)
			return &g->lbs[i];
	return NULL;
}

int kb_gw_lb_has_gpu(const struct kb_gw_lb *lb, const char *gpu)
{
	return kb_task_has_gpu(lb->task, gpu);
}

/* A case line as upstream's task dict: {"k": v}, integers as numbers. A
 * line that does not parse stays a string rather than vanish. */
static json_t *case_json(const char *line)
{
	struct kb_case c;
	char err[128];
	json_t *o;

	if (kb_case_parse(line, &c, err, sizeof(err)) != 0)
		return json_string(line);
	o = json_object();
	for (size_t i = 0; i < c.n; i++) {
		const char *v = c.kv[i].value;
		char *end;
		errno = 0;
		long long n = strtoll(v, &end, 10);
		if (*v && *end == '\0' && errno == 0 &&
		    (v[0] != '0' || v[1] == '\0'))
			json_object_set_new(o, c.kv[i].key, json_integer(n));
		else
			json_object_set_new(o, c.kv[i].key, json_string(v));
	}
	kb_case_clear(&c);
	return o;
}

static json_t *task_json(const struct kb_gw_lb *lb)
{
	const struct kb_task *t = lb->task;
	json_t *task = json_object(), *files = json_object(), *cfg = json_object();
	json_t *tests = json_array(), *benches = json_array(), *tpl = json_object();

	for (size_t i = 0; i < t->nfiles; i++) {
		if (i == lb->submission_file)
			json_object_set_new(files, t->files[i].name,
					    json_string(SUBMISSION_SOURCE));
		else
			json_object_set_new(files, t->files[i].name,
					    json_stringn(lb->file_contents[i],
							 lb->file_lens[i]));
	}
	for (size_t i = 0; i < t->nconfig; i++)
		json_object_set_new(cfg, t->config[i].key,
				    json_string(t->config[i].value));
	for (size_t i = 0; i < t->ntests; i++)
		json_array_append_new(tests, case_json(t->tests[i]));
	for (size_t i = 0; i < t->nbenchmarks; i++)
		json_array_append_new(benches, case_json(t->benchmarks[i]));
	for (size_t i = 0; i < t->ntemplates; i++) {
		char *code = NULL;
		size_t len = 0;
		char err[256];
		/* A template that cannot be read is left out, not fatal: it is
		 * a convenience for clients, not part of the task. */
		if (read_task_file(t, t->templates[i].value, &code, &len, err,
				   sizeof(err)) == 0)
			json_object_set_new(tpl, t->templates[i].key,
					    json_stringn(code, len));
		free(code);
	}
	json_object_set_new(task, "lang", json_string(t->lang));
	json_object_set_new(task, "description",
			    json_string(t->description ? t->description : ""));
	json_object_set_new(task, "files", files);
	json_object_set_new(task, "config", cfg);
	json_object_set_new(task, "tests", tests);
	json_object_set_new(task, "benchmarks", benches);
	json_object_set_new(task, "templates", tpl);
	json_object_set_new(task, "test_timeout", json_integer(t->test_timeout));
	json_object_set_new(task, "benchmark_timeout",
			    json_integer(t->benchmark_timeout));
	json_object_set_new(task, "ranked_timeout", json_integer(t->ranked_timeout));
	json_object_set_new(task, "ranking_by",
			    json_string(t->ranking_by ? t->ranking_by : "last"));
	/* The task's public seed (task.yml), not the leaderboard's secret. */
	json_object_set_new(task, "seed",
			    t->has_seed ? json_integer((json_int_t)t->seed) : json_null());
	json_object_set_new(task, "multi_gpu", json_boolean(t->multi_gpu));
	return task;
}

char *kb_gw_render_leaderboards(const struct kb_gw *g)
{
	json_t *list = json_array();
	char *out;

	for (size_t i = 0; i < g->nlbs; i++) {
		const struct kb_gw_lb *lb = &g->lbs[i];
		const struct kb_task *t = lb->task;
		json_t *o = json_object(), *gpus = json_array();

		for (size_t k = 0; k < t->ngpus; k++)
			json_array_append_new(gpus, json_string(t->gpus[k]));
		json_object_set_new(o, "id", json_integer((json_int_t)i + 1));
		json_object_set_new(o, "name", json_string(t->name));
		json_object_set_new(o, "description",
				    json_string(t->description ? t->description : ""));
		json_object_set_new(o, "deadline",
				    t->deadline ? json_string(t->deadline) : json_null());
		json_object_set_new(o, "gpu_types", gpus);
		json_object_set_new(o, "creator_id", json_integer(0));
		json_object_set_new(o, "forum_id", json_integer(-1));
		json_object_set_new(o, "task", task_json(lb));
		json_array_append_new(list, o);
	}
	out = json_dumps(list, JSON_COMPACT);
	json_decref(list);
	return out;
}
