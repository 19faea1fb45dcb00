/* The hosted problem set, prepared once at startup: every task file is read
 * from disk, the Task protobuf each Submission carries is built, and the
 * bodies of GET /leaderboards and GET /gpus/<lb> are rendered. After that
 * nothing here changes, so request threads share it without locks. */
#include "problems.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/cache.h"
#include "kb_cases.h"
#include "kb_seal.h"
#include "kb_taskstore.h"
#include "kb_time.h"
#include "kb_util.h"
#include "store/store.h"

#define TASK_FILE_MAX (16u << 20)
#define SUBMISSION_SOURCE "@SUBMISSION@"

static int read_task_file(const struct kb_task *t, const char *rel, char **out,
			  size_t *len, char *errstr, size_t errstr_size)
{
	return kb_task_read(t, rel, TASK_FILE_MAX, out, len, errstr,
			    errstr_size);
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
					&lb->file_contents[i],
					&lb->file_lens[i], errstr, errstr_size);
		if (rc < 0)
			return rc;
		lb->task_bytes += lb->file_lens[i];
		lb->pb_files[i].content.data = (uint8_t *)lb->file_contents[i];
		lb->pb_files[i].content.len = lb->file_lens[i];
	}
	if (lb->submission_file == SIZE_MAX) {
		snprintf(errstr, errstr_size, "%s: no file has source %s",
			 t->name, SUBMISSION_SOURCE);
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
	lb->pb.sealed = t->sealed ? 1 : 0;
	lb->pb.submission_file = t->files[lb->submission_file].name;
	/* The task as the content store keeps it (kb_taskstore.h): events
	 * name it by this reference. */
	lb->task_len = kb__task__get_packed_size(&lb->pb);
	lb->task_packed = malloc(lb->task_len ? lb->task_len : 1);
	if (!lb->task_packed) {
		snprintf(errstr, errstr_size, "out of memory");
		return -ENOMEM;
	}
	kb__task__pack(&lb->pb, lb->task_packed);
	kb_taskstore_ref(lb->task_packed, lb->task_len, lb->task_ref);
	atomic_init(&lb->task_stored, 0);

	json_t *gpus = json_array();
	for (size_t i = 0; i < t->ngpus; i++)
		json_array_append_new(gpus, json_string(t->gpus[i]));
	lb->gpus_json = json_dumps(gpus, JSON_COMPACT);
	json_decref(gpus);
	if (!lb->gpus_json) {
		snprintf(errstr, errstr_size, "%s: cannot render gpus",
			 t->name);
		return -EINVAL;
	}
	return 0;
}

/* Deadline text (ISO 8601) into epoch ms; -1 when none or unreadable. */
static int64_t deadline_of(const struct kb_task *t)
{
	int64_t ms;

	if (!t->deadline || !*t->deadline)
		return -1;
	return kb_time_parse_iso8601(t->deadline, &ms) == 0 ? ms : -1;
}

static pthread_mutex_t boards_mu = PTHREAD_MUTEX_INITIALIZER;

/* Frees a board that never made it into the table (or at exit). */
static void lb_free(struct kb_gw_lb *lb)
{
	if (!lb)
		return;
	for (size_t f = 0;
	     lb->file_contents && lb->task && f < lb->task->nfiles; f++)
		free(lb->file_contents[f]);
	free(lb->file_contents);
	free(lb->file_lens);
	free(lb->pb_files);
	free(lb->pb_file_ptrs);
	free(lb->pb_config);
	free(lb->pb_config_ptrs);
	free(lb->task_packed);
	free(lb->gpus_json);
	free(lb->directory);
	if (lb->own_task) {
		kb_task_clear(lb->own_task);
		free(lb->own_task);
	}
	free(lb);
}

/* Builds a board for t and appends it. Returns it or NULL (errstr set;
 * *full when the table is full). */
static struct kb_gw_lb *board_add(struct kb_gw *g, const struct kb_task *t,
				  struct kb_task *own, const char *directory,
				  int hidden, int *full, char *errstr,
				  size_t errstr_size)
{
	struct kb_gw_lb *lb = calloc(1, sizeof(*lb));

	*full = 0;
	if (!lb) {
		snprintf(errstr, errstr_size, "out of memory");
		return NULL;
	}
	atomic_init(&lb->closed, 0);
	atomic_init(&lb->deleted, hidden);
	lb->own_task = own;
	if (build_lb(lb, t, errstr, errstr_size) < 0) {
		lb->own_task = NULL; /* the caller still owns it on failure */
		lb_free(lb);
		return NULL;
	}
	lb->deadline_ms = deadline_of(t);
	lb->dynamic = directory != NULL;
	lb->directory = directory ? strdup(directory) : NULL;
	pthread_mutex_lock(&boards_mu);
	size_t n = atomic_load(&g->nboards);
	if (n == g->cap_boards) {
		pthread_mutex_unlock(&boards_mu);
		*full = 1;
		snprintf(errstr, errstr_size,
			 "the leaderboard table is full "
			 "(KB_MAX_DYNAMIC_BOARDS)");
		lb->own_task = NULL;
		lb_free(lb);
		return NULL;
	}
	lb->index = (long)n;
	if (lb->task_bytes > g->task_bytes_max)
		g->task_bytes_max = lb->task_bytes;
	g->boards[n] = lb;
	/* Readers load nboards with acquire: they see the board complete. */
	atomic_store(&g->nboards, n + 1);
	atomic_fetch_add(&g->boards_gen, 1);
	pthread_mutex_unlock(&boards_mu);
	return lb;
}

int kb_gw_lbs_load(struct kb_gw *g, char *errstr, size_t errstr_size)
{
	int full, rc = kb_problemset_load(g->cfg.problems, &g->ps, errstr,
					  errstr_size);

	if (rc < 0)
		return rc;
	g->cap_boards = g->ps.n + (size_t)g->cfg.max_dynamic_boards;
	g->boards =
		calloc(g->cap_boards ? g->cap_boards : 1, sizeof(*g->boards));
	if (!g->boards) {
		snprintf(errstr, errstr_size, "out of memory");
		return -ENOMEM;
	}
	atomic_init(&g->nboards, 0);
	atomic_init(&g->boards_gen, 0);
	for (size_t i = 0; i < g->ps.n; i++)
		if (!board_add(g, &g->ps.tasks[i], NULL, NULL, 0, &full, errstr,
			       errstr_size))
			return -EINVAL;
	return 0;
}

struct kb_gw_lb *kb_gw_lb_add_dynamic(struct kb_gw *g, const char *directory,
				      const char *name, int hidden, int *status,
				      char *errstr, size_t errstr_size)
{
	char path[PATH_MAX], rel[PATH_MAX];
	struct kb_task *t;
	struct kb_gw_lb *lb;
	int full, rc;

	*status = 400;
	if (!g->cfg.problems_dev || !*g->cfg.problems_dev) {
		snprintf(errstr, errstr_size,
			 "no problem directory for admin-created "
			 "leaderboards is configured (KB_PROBLEMS_DEV)");
		return NULL;
	}
	/* A board under KB_PROBLEMS_DEV is confined to the top directory it
	 * lies in there: an admin's <dir>, or the copy a sync kept. */
	if (kb_path_beneath("", directory, rel, sizeof(rel)) < 0 || !*rel) {
		snprintf(errstr, errstr_size,
			 "directory '%s' is not inside "
			 "KB_PROBLEMS_DEV",
			 directory);
		return NULL;
	}
	size_t top = strcspn(rel, "/");
	if (snprintf(path, sizeof(path), "%s/%.*s", g->cfg.problems_dev,
		     (int)top, rel) >= (int)sizeof(path)) {
		snprintf(errstr, errstr_size, "directory name too long");
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		*status = 500;
		snprintf(errstr, errstr_size, "out of memory");
		return NULL;
	}
	rc = kb_task_load_confined(path, rel[top] ? rel + top + 1 : "", name, t,
				   errstr, errstr_size);
	if (rc < 0) {
		free(t);
		return NULL;
	}
	if (t->ngpus == 0) {
		snprintf(errstr, errstr_size,
			 "no gpus specified in task.yml; add a "
			 "'gpus:' list");
		kb_task_clear(t);
		free(t);
		return NULL;
	}
	lb = board_add(g, t, t, directory, hidden, &full, errstr, errstr_size);
	if (!lb) {
		*status = full ? 507 : 400;
		kb_task_clear(t);
		free(t);
		return NULL;
	}
	*status = 0;
	return lb;
}

struct kb_gw_lb *kb_gw_lb_add_task(struct kb_gw *g, struct kb_task *t,
				   const char *directory, int hidden,
				   int *status, char *errstr,
				   size_t errstr_size)
{
	int full;
	struct kb_gw_lb *lb = board_add(g, t, t, directory, hidden, &full,
					errstr, errstr_size);

	*status = lb ? 0 : full ? 507 : 400;
	return lb;
}

static pthread_mutex_t change_mu = PTHREAD_MUTEX_INITIALIZER;

void kb_gw_boards_change_lock(void)
{
	pthread_mutex_lock(&change_mu);
}

void kb_gw_boards_change_unlock(void)
{
	pthread_mutex_unlock(&change_mu);
}

void kb_gw_lb_swap(struct kb_gw *g, struct kb_gw_lb *old,
		   struct kb_gw_lb *fresh)
{
	atomic_store(&fresh->deleted, 0);
	atomic_store(&old->deleted, 1);
	atomic_fetch_add(&g->boards_gen, 1);
}

int kb_gw_lb_delete(struct kb_gw *g, struct kb_gw_lb *lb, int purge)
{
	char prefix[160];
	int rc = kb_gw_board_mark_deleted(g, lb->task->name, purge);

	if (rc < 0)
		return rc;
	atomic_store(&lb->deleted, 1);
	atomic_fetch_add(&g->boards_gen, 1);
	if (g->cache) {
		snprintf(prefix, sizeof(prefix), "%s|", lb->task->name);
		kb_gw_cache_invalidate(g->cache, prefix);
	}
	return 0;
}

void kb_gw_lbs_free(struct kb_gw *g)
{
	size_t n = atomic_load(&g->nboards);

	for (size_t i = 0; g->boards && i < n; i++)
		lb_free(g->boards[i]);
	free(g->boards);
	g->boards = NULL;
	atomic_store(&g->nboards, 0);
	kb_problemset_clear(&g->ps);
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
	json_t *task = json_object(), *files = json_object(),
	       *cfg = json_object();
	json_t *tests = json_array(), *benches = json_array(),
	       *tpl = json_object();

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
	json_object_set_new(task, "test_timeout",
			    json_integer(t->test_timeout));
	json_object_set_new(task, "benchmark_timeout",
			    json_integer(t->benchmark_timeout));
	json_object_set_new(task, "ranked_timeout",
			    json_integer(t->ranked_timeout));
	json_object_set_new(task, "ranking_by",
			    json_string(t->ranking_by ? t->ranking_by
						      : "last"));
	/* The task's public seed (task.yml), not the leaderboard's secret. */
	json_object_set_new(task, "seed",
			    t->has_seed ? json_integer((json_int_t)t->seed)
					: json_null());
	json_object_set_new(task, "multi_gpu", json_boolean(t->multi_gpu));
	return task;
}

char *kb_gw_render_leaderboards(const struct kb_gw *g, int with_closed)
{
	json_t *list = json_array();
	size_t n = atomic_load(&g->nboards);
	char *out;

	for (size_t i = 0; i < n; i++) {
		const struct kb_gw_lb *lb = g->boards[i];
		const struct kb_task *t = lb->task;

		if (atomic_load(&lb->deleted) ||
		    (!with_closed && atomic_load(&lb->closed)))
			continue;
		json_t *o = json_object(), *gpus = json_array();
		for (size_t k = 0; k < t->ngpus; k++)
			json_array_append_new(gpus, json_string(t->gpus[k]));
		json_object_set_new(o, "id",
				    json_integer((json_int_t)lb->index + 1));
		json_object_set_new(o, "name", json_string(t->name));
		json_object_set_new(o, "description",
				    json_string(t->description ? t->description
							       : ""));
		json_object_set_new(o, "deadline",
				    t->deadline ? json_string(t->deadline)
						: json_null());
		json_object_set_new(o, "gpu_types", gpus);
		json_object_set_new(o, "creator_id", json_integer(0));
		json_object_set_new(o, "forum_id", json_integer(-1));
		json_object_set_new(o, "visibility",
				    json_string(atomic_load(&lb->closed)
							? "closed"
							: "public"));
		json_object_set_new(o, "task", task_json(lb));
		/* Ours: whether the trusted side times the board (kb_seal.h). */
		const char *why = kb_seal_not_sealed(t);
		json_object_set_new(o, "sealed", json_boolean(!why));
		json_object_set_new(o, "seal_reason",
				    why ? json_string(why) : json_null());
		json_array_append_new(list, o);
	}
	out = json_dumps(list, JSON_COMPACT);
	json_decref(list);
	return out;
}
