/* POST /admin/update-problems: upstream's problem sync (popcorn-cli's
 * `popcorn admin update-problems`).
 *
 * The body is {repository, branch, problem_set, force, visibility}; the
 * answer {"status": "ok", created, updated, skipped, errors} as upstream's.
 * repository is where the problem sets come from:
 *   - an absolute path on the gateway's host (a checkout);
 *   - an http(s) URL of a .tar.gz archive the gateway can reach;
 *   - "owner/name" on GitHub (the branch's tar.gz from codeload.github.com).
 * The source is staged under KB_PROBLEMS_DEV/sync-<time>-<pid>-<n>/ (the
 * archive extracted with tar, or the path copied), so that boards made
 * from it are recorded as directories under KB_PROBLEMS_DEV as the
 * admin-created boards are. The problem sets are the <set>.yaml files of
 * its "problems" directory (upstream's layout), or of its top level.
 *
 * Upstream's rules: a board that does not exist is created (a problem
 * without gpus is skipped); an existing one with no change is skipped
 * ("no changes"); a change of its files, config, language or benchmarks
 * needs force ("significant task changes require --force"); other
 * changes update it in place: a new board object with the new task takes
 * the old one's place under the same name (the old one is marked
 * deleted, as a deletion does, so requests already holding it finish on
 * it), and everything the store keeps under the name stays -- its
 * submissions, ranking, secret and visibility. The ranking is not
 * recomputed: runs scored under the old task keep their scores, as
 * upstream's forced update keeps them. kb:lbdyn names the new directory,
 * and other gateways swap their copy when they see it (events.c). Only
 * boards made by an admin or a sync can be updated so: a board of this
 * deployment's own problem sets (KB_PROBLEMS) is changed there, and
 * is reported in errors.
 *
 * The download and the copy run on the blocking pool (kb_gw_defer). */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <jansson.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <glob.h>

#include "gateway.h"
#include "http.h"
#include "kb_log.h"
#include "kb_util.h"
#include "store.h"

#define ARCHIVE_MAX (256L << 20)
#define DOWNLOAD_TIMEOUT_S 120L

extern char **environ;

struct sync {
	char repository[1024], branch[128], problem_set[128];
	int force, closed;
	json_t *created, *updated, *skipped, *errors;
	int status; /* 0, or an HTTP status for a refusal */
	char detail[512];
};

static void sync_free(void *arg)
{
	struct sync *s = arg;

	json_decref(s->created);
	json_decref(s->updated);
	json_decref(s->skipped);
	json_decref(s->errors);
	free(s);
}

static void add_error(struct sync *s, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void add_error(struct sync *s, const char *name, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_array_append_new(s->errors, json_pack("{s:s,s:s}", "name", name,
						   "error", msg));
}

static void add_skip(struct sync *s, const char *name, const char *reason)
{
	json_array_append_new(s->skipped, json_pack("{s:s,s:s}", "name", name,
						    "reason", reason));
}

/* Runs argv, waits. Returns 0 when it exited 0, else -1. */
static int run(char *const argv[])
{
	pid_t pid;
	int st;

	if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ) != 0)
		return -1;
	if (waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static size_t to_file(void *p, size_t size, size_t n, void *ud)
{
	return fwrite(p, size, n, ud);
}

/* Downloads url into path. Returns 0 or -1 with err set. */
static int download(const char *url, const char *path, char *err,
		    size_t err_size)
{
	FILE *f = fopen(path, "wbx");
	CURL *c = curl_easy_init();
	long code = 0;
	CURLcode cr = CURLE_FAILED_INIT;

	if (f && c) {
		curl_easy_setopt(c, CURLOPT_URL, url);
		curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
		curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
		curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
		curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
		curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE,
				 (curl_off_t)ARCHIVE_MAX);
		curl_easy_setopt(c, CURLOPT_TIMEOUT, DOWNLOAD_TIMEOUT_S);
		curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, to_file);
		curl_easy_setopt(c, CURLOPT_WRITEDATA, f);
		cr = curl_easy_perform(c);
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	}
	if (c)
		curl_easy_cleanup(c);
	if (f && fclose(f) != 0 && cr == CURLE_OK)
		cr = CURLE_WRITE_ERROR;
	if (cr != CURLE_OK || code != 200) {
		snprintf(err, err_size,
			 "Could not download repository from %s: %s", url,
			 cr != CURLE_OK ? curl_easy_strerror(cr)
					: "HTTP status not 200");
		return -1;
	}
	return 0;
}

/* The directory holding the problem sets in the staged tree at root:
 * root's single top-level directory is entered (archives have one),
 * then "problems" when it exists. */
static void problems_dir(const char *root, char *out, size_t size)
{
	char pattern[PATH_MAX], cand[PATH_MAX];
	glob_t gl;
	struct stat st;

	snprintf(out, size, "%s", root);
	snprintf(pattern, sizeof(pattern), "%s/*", root);
	if (glob(pattern, 0, NULL, &gl) == 0) {
		if (gl.gl_pathc == 1 && stat(gl.gl_pathv[0], &st) == 0 &&
		    S_ISDIR(st.st_mode))
			snprintf(out, size, "%s", gl.gl_pathv[0]);
		globfree(&gl);
	}
	snprintf(cand, sizeof(cand), "%s/problems", out);
	if (stat(cand, &st) == 0 && S_ISDIR(st.st_mode))
		snprintf(out, size, "%s", cand);
}

/* Stages the source under stage. Returns 0 or -1 with an error recorded
 * under "download". */
static int stage_source(struct sync *s, const char *stage)
{
	char url[1400], archive[PATH_MAX], err[1600];
	const char *repo = s->repository;

	if (repo[0] == '/') {
		char src[PATH_MAX + 4];
		snprintf(src, sizeof(src), "%s/.", repo);
		char *argv[] = {"cp", "-R", "--", src, (char *)stage, NULL};
		if (run(argv) < 0) {
			add_error(s, "download", "Could not copy %s", repo);
			return -1;
		}
		return 0;
	}
	if (strncmp(repo, "http://", 7) == 0 ||
	    strncmp(repo, "https://", 8) == 0)
		snprintf(url, sizeof(url), "%s", repo);
	else
		snprintf(url, sizeof(url),
			 "https://codeload.github.com/%s/tar.gz/%s", repo,
			 s->branch);
	snprintf(archive, sizeof(archive), "%s.tar.gz", stage);
	if (download(url, archive, err, sizeof(err)) < 0) {
		unlink(archive);
		add_error(s, "download", "%s", err);
		return -1;
	}
	/* GNU tar drops leading slashes and refuses members with "..". */
	char *argv[] = {"tar",
			"-xzf",
			archive,
			"-C",
			(char *)stage,
			"--no-same-owner",
			"--no-same-permissions",
			NULL};
	int rc = run(argv);
	unlink(archive);
	if (rc < 0) {
		add_error(s, "download",
			  "Could not extract the archive from %s", url);
		return -1;
	}
	return 0;
}

static int same_kv(const struct kb_kv *a, size_t na, const struct kb_kv *b,
		   size_t nb)
{
	if (na != nb)
		return 0;
	for (size_t i = 0; i < na; i++)
		if (strcmp(a[i].key, b[i].key) ||
		    strcmp(a[i].value, b[i].value))
			return 0;
	return 1;
}

static int same_list(char **a, size_t na, char **b, size_t nb)
{
	if (na != nb)
		return 0;
	for (size_t i = 0; i < na; i++)
		if (strcmp(a[i], b[i]))
			return 0;
	return 1;
}

/* 1 when a task file of t differs from what the board holds. */
static int files_differ(const struct kb_gw_lb *lb, const struct kb_task *t)
{
	const struct kb_task *o = lb->task;

	if (o->nfiles != t->nfiles)
		return 1;
	for (size_t i = 0; i < t->nfiles; i++) {
		char path[PATH_MAX], *data = NULL;
		size_t len = 0;
		if (strcmp(o->files[i].name, t->files[i].name) ||
		    strcmp(o->files[i].source, t->files[i].source))
			return 1;
		if (i == lb->submission_file)
			continue;
		snprintf(path, sizeof(path), "%s/%s", t->dir,
			 t->files[i].source);
		if (kb_read_file(path, 16u << 20, &data, &len) < 0)
			return 1;
		int diff = len != lb->file_lens[i] ||
			   memcmp(data, lb->file_contents[i], len);
		free(data);
		if (diff)
			return 1;
	}
	return 0;
}

static const char *str0(const char *s)
{
	return s ? s : "";
}

/* The board's directory, relative to KB_PROBLEMS_DEV, into rel. */
static void board_dir(const struct kb_task *t, const char *stage_rel,
		      const char *set_dir, char rel[PATH_MAX])
{
	const char *sub = t->dir + strlen(set_dir);

	snprintf(rel, PATH_MAX, "%s%s%s", stage_rel, *sub == '/' ? "" : "/",
		 sub);
}

/* An existing admin-made board takes the new task in place (see the top
 * of the file). t is taken (left zeroed) when the update goes through. */
static void update_board(struct kb_gw *g, struct sync *s, struct kb_gw_lb *old,
			 struct kb_task *t, const char *rel)
{
	char err[512], name[128];
	struct kb_task *own = malloc(sizeof(*own));
	struct kb_gw_lb *lb;
	int st;

	snprintf(name, sizeof(name), "%s", t->name);
	if (!own) {
		add_error(s, name, "update failed: out of memory");
		return;
	}
	*own = *t;
	memset(t, 0, sizeof(*t));
	lb = kb_gw_lb_add_task(g, own, rel, 1, &st, err, sizeof(err));
	if (!lb) {
		kb_task_clear(own);
		free(own);
		add_error(s, name, "update failed: %s", err);
		return;
	}
	/* The store's state stays: visibility NULL keeps it, the secret is
	 * only set where none is; the deadline is the new task's. */
	if (kb_gw_store_init_board(g, lb, NULL, err, sizeof(err)) < 0 ||
	    kb_gw_board_record(g, name, rel) < 0) {
		add_error(s, name, "update failed: the store is unavailable");
		return; /* the new board stays hidden */
	}
	kb_gw_lb_swap(g, old, lb);
	kb_info("update-problems updated board %s from %s", name, rel);
	json_array_append_new(s->updated, json_string(name));
}

/* One problem of a set: created, updated, skipped, or an error. */
static void sync_task(struct kb_gw *g, struct sync *s, struct kb_task *t,
		      const char *stage_rel, const char *set_dir)
{
	const struct kb_gw_lb *old = kb_gw_lb_find(g, t->name);
	char rel[PATH_MAX], err[512];
	int st;

	if (old && strcmp(old->task->name, t->name) != 0)
		old = NULL; /* only the same spelling is the same board */
	board_dir(t, stage_rel, set_dir, rel);
	if (old) {
		const struct kb_task *o = old->task;
		int significant = files_differ(old, t) ||
				  strcmp(o->lang, t->lang) ||
				  !same_kv(o->config, o->nconfig, t->config,
					   t->nconfig) ||
				  !same_list(o->benchmarks, o->nbenchmarks,
					     t->benchmarks, t->nbenchmarks);
		int changed =
			significant ||
			strcmp(str0(o->deadline), str0(t->deadline)) ||
			!same_list(o->tests, o->ntests, t->tests, t->ntests) ||
			strcmp(str0(o->description), str0(t->description)) ||
			!same_list(o->gpus, o->ngpus, t->gpus, t->ngpus);
		if (!changed)
			add_skip(s, t->name, "no changes");
		else if (significant && !s->force)
			add_skip(s, t->name,
				 "significant task changes require --force");
		else if (!old->dynamic)
			add_error(s, t->name,
				  "update failed: the board comes from this "
				  "gateway's own problem sets (KB_PROBLEMS); "
				  "change it there");
		else if (t->ngpus == 0)
			add_skip(s, t->name,
				 "No GPUs specified in task.yml or YAML");
		else {
			kb_gw_boards_change_lock();
			/* Swapped by the sync (another gateway's update) since
			 * it was looked up: compare against that one next time. */
			if (atomic_load(&old->deleted))
				add_error(s, t->name,
					  "update failed: the board changed "
					  "meanwhile; sync again");
			else
				update_board(g, s, (struct kb_gw_lb *)old, t,
					     rel);
			kb_gw_boards_change_unlock();
		}
		return;
	}
	if (t->ngpus == 0) {
		add_skip(s, t->name, "No GPUs specified in task.yml or YAML");
		return;
	}
	struct kb_task *own = malloc(sizeof(*own));
	if (!own) {
		add_error(s, t->name, "create failed: out of memory");
		return;
	}
	*own = *t;
	memset(t, 0, sizeof(*t)); /* the board (or own) has it now */
	struct kb_gw_lb *lb =
		kb_gw_lb_add_task(g, own, rel, 0, &st, err, sizeof(err));
	if (!lb) {
		char name[128];
		snprintf(name, sizeof(name), "%s", own->name);
		kb_task_clear(own);
		free(own);
		add_error(s, name, "create failed: %s", err);
		return;
	}
	int rc = kb_gw_store_init_board(g, lb, s->closed ? "closed" : "public",
					err, sizeof(err));
	if (rc == 0)
		rc = kb_gw_board_record(g, lb->task->name, rel);
	if (rc < 0) {
		atomic_store(&lb->deleted, 1);
		add_error(s, lb->task->name,
			  "create failed: the store is unavailable");
		return;
	}
	atomic_fetch_add(&g->boards_gen, 1);
	kb_info("update-problems created board %s from %s", lb->task->name,
		rel);
	json_array_append_new(s->created, json_string(lb->task->name));
}

static void sync_set(struct kb_gw *g, struct sync *s, const char *yaml,
		     const char *stage_rel, const char *set_dir)
{
	struct kb_problemset ps;
	char err[512], name[256];
	const char *base = strrchr(yaml, '/');

	snprintf(name, sizeof(name), "%s", base ? base + 1 : yaml);
	name[strcspn(name, ".")] = '\0';
	if (kb_problemset_load(yaml, &ps, err, sizeof(err)) < 0) {
		add_error(s, name, "%s", err);
		return;
	}
	for (size_t i = 0; i < ps.n; i++)
		sync_task(g, s, &ps.tasks[i], stage_rel, set_dir);
	kb_problemset_clear(&ps);
}

static void sync_work(struct kb_gw_req *r)
{
	struct sync *s = r->pending;
	struct kb_gw *g = r->g;
	static unsigned long seq;
	char stage_rel[96], stage[PATH_MAX], dir[PATH_MAX],
		pattern[PATH_MAX + 16];
	glob_t gl;

	snprintf(stage_rel, sizeof(stage_rel), "sync-%lld-%d-%lu",
		 (long long)time(NULL), (int)getpid(),
		 __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
	snprintf(stage, sizeof(stage), "%s/%s", g->cfg.problems_dev, stage_rel);
	if (mkdir(stage, 0755) < 0) {
		add_error(s, "download", "Could not make %s: %s", stage,
			  strerror(errno));
		return;
	}
	if (stage_source(s, stage) < 0)
		return;
	problems_dir(stage, dir, sizeof(dir));
	if (s->problem_set[0])
		snprintf(pattern, sizeof(pattern), "%s/%s.yaml", dir,
			 s->problem_set);
	else
		snprintf(pattern, sizeof(pattern), "%s/*.yaml", dir);
	int rc = glob(pattern, 0, NULL, &gl);
	if (rc != 0 && s->problem_set[0]) {
		json_t *avail = json_array();
		snprintf(pattern, sizeof(pattern), "%s/*.yaml", dir);
		if (glob(pattern, 0, NULL, &gl) == 0) {
			for (size_t i = 0; i < gl.gl_pathc; i++) {
				char *b = strrchr(gl.gl_pathv[i], '/') + 1;
				json_array_append_new(
					avail, json_stringn(b, strlen(b) - 5));
			}
			globfree(&gl);
		}
		char *list = json_dumps(avail, JSON_COMPACT);
		add_error(s, s->problem_set,
			  "Problem set not found. Available: %s",
			  list ? list : "[]");
		free(list);
		json_decref(avail);
		return;
	}
	if (rc != 0) {
		add_error(
			s, "download",
			"No problem set (<set>.yaml) found in the repository");
		return;
	}
	/* A set's task directories are relative to it: the board records
	 * them relative to KB_PROBLEMS_DEV through the stage. */
	for (size_t i = 0; i < gl.gl_pathc; i++)
		sync_set(g, s, gl.gl_pathv[i], stage_rel, stage);
	globfree(&gl);
}

static void sync_done(struct kb_gw_req *r)
{
	struct sync *s = r->pending;

	kb_gw_reply_json(r, 200,
			 json_pack("{s:s,s:O,s:O,s:O,s:O}", "status", "ok",
				   "created", s->created, "updated", s->updated,
				   "skipped", s->skipped, "errors", s->errors));
}

static void update_begin(struct kb_gw_req *r)
{
	if (kb_gw_require_admin(r) == 0)
		kb_gw_expect_json(r, 64 * 1024);
}

/* A string member, or def when absent; -1 (replied) when not a string or
 * too long. */
static int member(struct kb_gw_req *r, json_t *o, const char *key,
		  const char *def, char *out, size_t size)
{
	json_t *v = json_object_get(o, key);

	if (!v || json_is_null(v)) {
		snprintf(out, size, "%s", def);
		return 0;
	}
	if (!json_is_string(v) || json_string_length(v) >= size ||
	    strlen(json_string_value(v)) != json_string_length(v)) {
		kb_gw_reply_error(r, 400,
				  "%s must be a string of at most %zu bytes",
				  key, size - 1);
		return -1;
	}
	snprintf(out, size, "%s", json_string_value(v));
	return 0;
}

static void update_finish(struct kb_gw_req *r)
{
	json_error_t je;
	json_t *o =
		json_loadb(r->json, r->json_len, JSON_REJECT_DUPLICATES, &je);
	struct sync *s = calloc(1, sizeof(*s));
	char vis[16];

	if (!s) {
		json_decref(o);
		kb_gw_reply_error(r, 500, "out of memory");
		return;
	}
	if (!json_is_object(o)) {
		kb_gw_reply_error(r, 400, "the body must be a JSON object");
		goto out;
	}
	if (member(r, o, "repository", "gpu-mode/reference-kernels",
		   s->repository, sizeof(s->repository)) < 0 ||
	    member(r, o, "branch", "main", s->branch, sizeof(s->branch)) < 0 ||
	    member(r, o, "problem_set", "", s->problem_set,
		   sizeof(s->problem_set)) < 0 ||
	    member(r, o, "visibility", "public", vis, sizeof(vis)) < 0)
		goto out;
	json_t *f = json_object_get(o, "force");
	if (f && !json_is_boolean(f) && !json_is_null(f)) {
		kb_gw_reply_error(r, 400, "force must be true or false");
		goto out;
	}
	s->force = json_is_true(f);
	if (strcmp(vis, "public") != 0 && strcmp(vis, "closed") != 0) {
		kb_gw_reply_error(r, 400,
				  "visibility must be public or closed");
		goto out;
	}
	s->closed = strcmp(vis, "closed") == 0;
	if (strchr(s->branch, '/') || !*s->branch) {
		kb_gw_reply_error(
			r, 400, "Branch names with slashes are not supported");
		goto out;
	}
	if (strchr(s->problem_set, '/') || strstr(s->problem_set, "..")) {
		kb_gw_reply_error(r, 400, "invalid problem_set");
		goto out;
	}
	if (s->repository[0] != '/' &&
	    strncmp(s->repository, "http://", 7) != 0 &&
	    strncmp(s->repository, "https://", 8) != 0 &&
	    (!strchr(s->repository, '/') ||
	     strspn(s->repository,
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
		    "0123456789-_./") != strlen(s->repository))) {
		kb_gw_reply_error(
			r, 400,
			"repository must be owner/name, an absolute path "
			"or an http(s) URL of a .tar.gz archive");
		goto out;
	}
	if (!r->g->cfg.problems_dev || !*r->g->cfg.problems_dev) {
		kb_gw_reply_error(
			r, 400,
			"no problem directory for admin-created "
			"leaderboards is configured (KB_PROBLEMS_DEV)");
		goto out;
	}
	s->created = json_array();
	s->updated = json_array();
	s->skipped = json_array();
	s->errors = json_array();
	json_decref(o);
	r->pending = s;
	r->pending_free = sync_free;
	kb_gw_defer(r, sync_work, sync_done);
	return;
out:
	json_decref(o);
	free(s);
}

const struct kb_gw_handler kb_gw_problems_handlers[KB_ROUTE_COUNT] = {
	[KB_ROUTE_ADMIN_UPDATE_PROBLEMS] = {update_begin, update_finish},
};
