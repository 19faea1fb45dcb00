/* POST /admin/update-problems: upstream's problem sync (popcorn-cli's
 * `popcorn admin update-problems`).
 *
 * The body is {repository, branch, problem_set, force, visibility}; the
 * answer {"status": "ok", created, updated, skipped, errors} as upstream's.
 * repository is where the problem sets come from:
 *   - an absolute path on the gateway's host (a checkout);
 *   - an http(s) URL of a .tar.gz archive the gateway can reach;
 *   - "owner/name" on GitHub (the branch's tar.gz from codeload.github.com).
 * A problem source is untrusted input (docs/deploy.md, "Security"). An
 * archive is extracted with libarchive (services/kb_archive.h: regular
 * files and directories only, under KB_SYNC_MAX_BYTES and
 * KB_SYNC_MAX_ENTRIES) into a private stage, KB_PROBLEMS_DEV/.sync-XXXXXX
 * (mode 0700), removed when the sync ends, whatever its outcome; a path
 * on the host is read in place. Either way the sets and tasks are loaded
 * confined to the source (kb_problemset_load_confined): every directory
 * and file they name resolves inside it, through no link. The problem
 * sets are the <set>.yaml files of its "problems" directory (upstream's
 * layout), or of its top level.
 *
 * A board created or updated keeps a copy of exactly the files its task
 * names (task.yml, sources, templates), at their places relative to the
 * source, in KB_PROBLEMS_DEV/sync-<time>-<pid>-<n>/ of its own, so that
 * it is recorded as a directory under KB_PROBLEMS_DEV as the
 * admin-created boards are; what the boards keep counts against
 * KB_SYNC_MAX_BYTES too.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <dirent.h>
#include <fcntl.h>

#include "base/gateway.h"
#include "core/problems.h"
#include "kb_archive.h"
#include "kb_log.h"
#include "kb_seal.h"
#include "kb_util.h"
#include "routes.h"
#include "store/store.h"

#define ARCHIVE_MAX (256L << 20)
#define DOWNLOAD_TIMEOUT_S 120L

#define SYNC_MAX_DEPTH 32
#define TASK_FILE_MAX (16u << 20)

struct sync {
	char repository[1024], branch[128], problem_set[128];
	int force, closed;
	const char *root;   /* the source: a host path or the stage's src */
	uint64_t kept_left; /* bytes the boards' copies may still take */
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

/* Whether rel beneath root is a directory, reached through no link. */
static int is_dir_beneath(const char *root, const char *rel)
{
	int fd = kb_open_beneath(root, rel, 1);

	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

/* The directory holding the problem sets, relative to the source root:
 * its single top-level directory is entered (archives have one), then
 * "problems" when it exists. */
static void problems_dir(const char *root, char *out, size_t size)
{
	int fd = kb_open_beneath(root, "", 1), n = 0;
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	char only[256] = "", cand[PATH_MAX];

	if (!d && fd >= 0)
		close(fd);
	while (d && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		n++;
		snprintf(only, sizeof(only), "%s", de->d_name);
	}
	if (d)
		closedir(d);
	snprintf(out, size, "%s",
		 n == 1 && is_dir_beneath(root, only) ? only : "");
	snprintf(cand, sizeof(cand), "%s%sproblems", out, *out ? "/" : "");
	if (is_dir_beneath(root, cand))
		snprintf(out, size, "%s", cand);
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The <set>.yaml names (without .yaml) of dir beneath root, sorted, as a
 * NULL-terminated malloc'd array of malloc'd strings. Only regular files
 * count: a link is never a set. */
static char **set_names(const char *root, const char *dir)
{
	int fd = kb_open_beneath(root, dir, 1);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	char **v = calloc(1, sizeof(*v));
	size_t n = 0;

	if (!d && fd >= 0)
		close(fd);
	while (d && v && (de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		struct stat st;
		char **nv;
		if (len <= 5 || de->d_name[0] == '.' ||
		    strcmp(de->d_name + len - 5, ".yaml") != 0 ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) <
			    0 ||
		    !S_ISREG(st.st_mode))
			continue;
		nv = realloc(v, (n + 2) * sizeof(*v));
		if (!nv)
			break;
		v = nv;
		if ((v[n] = strndup(de->d_name, len - 5)) != NULL)
			n++;
		v[n] = NULL;
	}
	if (d)
		closedir(d);
	if (v)
		qsort(v, n, sizeof(*v), cmp_name);
	return v;
}

static void free_names(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* Stages the source: an archive is downloaded and extracted into
 * stage/src; a host path is used in place. Sets s->root. Returns 0 or -1
 * with an error recorded under "download" (or "archive" when its content
 * is refused). */
static int stage_source(struct kb_gw *g, struct sync *s, const char *stage,
			char *src, size_t src_size)
{
	char url[1400], archive[PATH_MAX], err[1600];
	const char *repo = s->repository;
	struct kb_archive_limits lim = {(uint64_t)g->cfg.sync_max_bytes,
					(size_t)g->cfg.sync_max_entries,
					SYNC_MAX_DEPTH};
	struct stat st;

	if (repo[0] == '/') {
		if (stat(repo, &st) < 0 || !S_ISDIR(st.st_mode)) {
			add_error(s, "download", "Could not read %s: %s", repo,
				  errno ? strerror(errno) : "not a directory");
			return -1;
		}
		s->root = repo;
		return 0;
	}
	if (strncmp(repo, "http://", 7) == 0 ||
	    strncmp(repo, "https://", 8) == 0)
		snprintf(url, sizeof(url), "%s", repo);
	else
		snprintf(url, sizeof(url),
			 "https://codeload.github.com/%s/tar.gz/%s", repo,
			 s->branch);
	snprintf(archive, sizeof(archive), "%s/archive.tar.gz", stage);
	snprintf(src, src_size, "%s/src", stage);
	if (download(url, archive, err, sizeof(err)) < 0) {
		add_error(s, "download", "%s", err);
		return -1;
	}
	if (mkdir(src, 0700) < 0) {
		add_error(s, "download", "Could not make %s: %s", src,
			  strerror(errno));
		return -1;
	}
	int rc = kb_archive_extract(archive, src, &lim, err, sizeof(err));
	unlink(archive);
	if (rc < 0) {
		add_error(s, "archive", "The archive from %s is refused: %s",
			  url, err);
		return -1;
	}
	s->root = src;
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
		char err[256], *data = NULL;
		size_t len = 0;
		if (strcmp(o->files[i].name, t->files[i].name) ||
		    strcmp(o->files[i].source, t->files[i].source))
			return 1;
		if (i == lb->submission_file)
			continue;
		if (kb_task_read(t, t->files[i].source, TASK_FILE_MAX, &data,
				 &len, err, sizeof(err)) < 0)
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

/* Copies file rel of t (relative to t->dir) into pub, at its place
 * relative to the source root. A file named twice is copied once. */
static int keep_file(struct sync *s, const struct kb_task *t, const char *pub,
		     const char *rel, char *err, size_t err_size)
{
	char at[PATH_MAX], *data = NULL;
	size_t len = 0;
	int rc = kb_path_beneath(kb_task_rel_dir(t), rel, at, sizeof(at));

	if (rc == 0)
		rc = kb_task_read(t, rel, TASK_FILE_MAX, &data, &len, err,
				  err_size);
	else
		snprintf(err, err_size, "'%s' leaves the problem source", rel);
	if (rc < 0)
		return rc;
	if (len > s->kept_left) {
		free(data);
		snprintf(err, err_size,
			 "the boards of this sync would keep more than "
			 "KB_SYNC_MAX_BYTES");
		return -EFBIG;
	}
	rc = kb_tree_write(pub, at, data, len);
	free(data);
	if (rc == -EEXIST)
		return 0;
	if (rc < 0) {
		snprintf(err, err_size, "cannot keep %s: %s", at,
			 strerror(-rc));
		return rc;
	}
	s->kept_left -= len;
	return 0;
}

/* Keeps a copy of what t names in a directory of its own under
 * KB_PROBLEMS_DEV and points t there (root and dir). rel gets the board's
 * directory relative to KB_PROBLEMS_DEV, pub the copy's top. Returns 0 or
 * -1 with err set and nothing left behind. */
static int publish(struct kb_gw *g, struct sync *s, struct kb_task *t,
		   char rel[PATH_MAX], char pub[PATH_MAX], char *err,
		   size_t err_size)
{
	static unsigned long seq;
	char top[96];
	const char *sub = kb_task_rel_dir(t);
	int rc = 0;

	snprintf(top, sizeof(top), "sync-%lld-%d-%lu", (long long)time(NULL),
		 (int)getpid(), __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
	snprintf(pub, PATH_MAX, "%s/%s", g->cfg.problems_dev, top);
	if (mkdir(pub, 0755) < 0) {
		snprintf(err, err_size, "cannot make %s: %s", pub,
			 strerror(errno));
		return -1;
	}
	rc = keep_file(s, t, pub, "task.yml", err, err_size);
	/* The source's own files: a sealed task's harness is the
	 * operator's (KB_HARNESS_DIR), and the eval.py it dropped is kept,
	 * since the kept copy loads from its task.yml again. */
	for (size_t i = 0; rc == 0 && i < t->nfiles; i++)
		if (strcmp(t->files[i].source, "@SUBMISSION@") != 0 &&
		    !kb_seal_is_harness_file(t, t->files[i].source))
			rc = keep_file(s, t, pub, t->files[i].source, err,
				       err_size);
	if (rc == 0 && t->upstream_eval)
		rc = keep_file(s, t, pub, t->upstream_eval, err, err_size);
	for (size_t i = 0; rc == 0 && i < t->ntemplates; i++)
		rc = keep_file(s, t, pub, t->templates[i].value, err, err_size);
	char *root = rc == 0 ? strdup(pub) : NULL;
	char *dir = root ? (*sub ? malloc(strlen(pub) + strlen(sub) + 2)
				 : strdup(pub))
			 : NULL;
	if (rc == 0 && (!root || !dir))
		snprintf(err, err_size, "out of memory");
	if (rc < 0 || !root || !dir) {
		free(root);
		free(dir);
		kb_tree_remove(pub);
		return -1;
	}
	if (*sub)
		sprintf(dir, "%s/%s", pub, sub);
	snprintf(rel, PATH_MAX, "%s%s%s", top, *sub ? "/" : "", sub);
	free(t->root);
	free(t->dir);
	t->root = root;
	t->dir = dir;
	return 0;
}

/* An existing admin-made board takes the new task in place (see the top
 * of the file). t is taken (left zeroed) when the update goes through. */
static void update_board(struct kb_gw *g, struct sync *s, struct kb_gw_lb *old,
			 struct kb_task *t)
{
	char err[512], name[128];
	struct kb_task *own = malloc(sizeof(*own));
	struct kb_gw_lb *lb;
	int st;

	char rel[PATH_MAX], pub[PATH_MAX];

	snprintf(name, sizeof(name), "%s", t->name);
	if (!own) {
		add_error(s, name, "update failed: out of memory");
		return;
	}
	if (publish(g, s, t, rel, pub, err, sizeof(err)) < 0) {
		free(own);
		add_error(s, name, "update failed: %s", err);
		return;
	}
	*own = *t;
	memset(t, 0, sizeof(*t));
	lb = kb_gw_lb_add_task(g, own, rel, 1, &st, err, sizeof(err));
	if (!lb) {
		kb_task_clear(own);
		free(own);
		kb_tree_remove(pub);
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
static void sync_task(struct kb_gw *g, struct sync *s, struct kb_task *t)
{
	const struct kb_gw_lb *old = kb_gw_lb_find(g, t->name);
	char rel[PATH_MAX], pub[PATH_MAX], err[512];
	int st;

	if (old && strcmp(old->task->name, t->name) != 0)
		old = NULL; /* only the same spelling is the same board */
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
				update_board(g, s, (struct kb_gw_lb *)old, t);
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
	if (publish(g, s, t, rel, pub, err, sizeof(err)) < 0) {
		free(own);
		add_error(s, t->name, "create failed: %s", err);
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
		kb_tree_remove(pub);
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

/* One <set>.yaml of the source (dir/set.yaml relative to its root). */
static void sync_set(struct kb_gw *g, struct sync *s, const char *dir,
		     const char *set)
{
	struct kb_problemset ps;
	char err[512], rel[PATH_MAX];

	snprintf(rel, sizeof(rel), "%s%s%s.yaml", dir, *dir ? "/" : "", set);
	if (kb_problemset_load_confined(s->root, rel, &ps, err, sizeof(err)) <
	    0) {
		add_error(s, set, "%s", err);
		return;
	}
	for (size_t i = 0; i < ps.n; i++)
		sync_task(g, s, &ps.tasks[i]);
	kb_problemset_clear(&ps);
}

/* The sync proper, once the source is in place. */
static void sync_sets(struct kb_gw *g, struct sync *s)
{
	char dir[PATH_MAX];
	char **sets;
	size_t n = 0;

	problems_dir(s->root, dir, sizeof(dir));
	sets = set_names(s->root, dir);
	if (!sets) {
		add_error(s, "download", "out of memory");
		return;
	}
	while (sets[n])
		n++;
	if (s->problem_set[0]) {
		size_t i = 0;
		while (i < n && strcmp(sets[i], s->problem_set) != 0)
			i++;
		if (i < n) {
			sync_set(g, s, dir, sets[i]);
		} else {
			json_t *avail = json_array();
			for (i = 0; i < n; i++)
				json_array_append_new(avail,
						      json_string(sets[i]));
			char *list = json_dumps(avail, JSON_COMPACT);
			add_error(s, s->problem_set,
				  "Problem set not found. Available: %s",
				  list ? list : "[]");
			free(list);
			json_decref(avail);
		}
	} else if (n == 0) {
		add_error(
			s, "download",
			"No problem set (<set>.yaml) found in the repository");
	} else {
		for (size_t i = 0; i < n; i++)
			sync_set(g, s, dir, sets[i]);
	}
	free_names(sets);
}

static void sync_work(struct kb_gw_req *r)
{
	struct sync *s = r->pending;
	struct kb_gw *g = r->g;
	char stage[PATH_MAX], src[PATH_MAX];

	/* Private (mkdtemp: 0700) and hidden: not a directory anyone may
	 * name as a board. */
	snprintf(stage, sizeof(stage), "%s/.sync-XXXXXX", g->cfg.problems_dev);
	if (!mkdtemp(stage)) {
		add_error(s, "download", "Could not make a stage in %s: %s",
			  g->cfg.problems_dev, strerror(errno));
		return;
	}
	s->kept_left = (uint64_t)g->cfg.sync_max_bytes;
	if (stage_source(g, s, stage, src, sizeof(src)) == 0)
		sync_sets(g, s);
	if (kb_tree_remove(stage) < 0)
		kb_warn("update-problems: cannot remove its stage %s", stage);
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
	/* The set's name, or its file's ("pmpp_v2.yaml"): both mean it. */
	size_t psl = strlen(s->problem_set);
	if (psl > 5 && strcmp(s->problem_set + psl - 5, ".yaml") == 0)
		s->problem_set[psl - 5] = '\0';
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
