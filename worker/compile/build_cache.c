/* The cache of trusted harness executables (build_int.h).
 *
 * The cache (KB_CACHE_DIR, default $KB_WORKDIR/cache, the worker's own,
 * mode 0700, never bound into a command) holds one directory per key,
 * h-<sha256>, with eval.out and a MANIFEST. The key covers everything the
 * executable depends on: the compiler's version text, every command (flags
 * and the architecture included) and the name and content of every task
 * file but the submission; the submission is never part of it, and is
 * never in the directory where the harness is built (J/harness), so no
 * executable in the cache can depend on a user's code.
 *
 * Fill: the harness's commands run in one J/step (working directory
 * J/harness); the worker copies eval.out out of it into a fresh
 * <cache>/.tmp-XXXXXX, writes the MANIFEST and renames the directory to
 * h-<key>. rename(2) of a directory is atomic and fails when the target
 * exists and is not empty, so concurrent workers each build their own
 * copy, one wins, the others discard theirs, and a reader sees either no
 * directory or a complete one. An h-<key> without a valid MANIFEST can
 * only be damage (it is written before the rename): it is moved aside
 * and rebuilt. Temporary directories older than STALE_TMP_S (a worker
 * killed mid-fill) are removed by the next fill. Entries are never
 * evicted: a new toolkit or harness version gets new keys; deleting the
 * directory while workers are stopped is always safe.
 *
 * Submission builds (kb__build_user_cached) have a cache of their own,
 * <cache>/user/s-<key>: a resubmission of the same code to the same task
 * -- test, then benchmark, then leaderboard mode of one file, as
 * popcorn-cli users go -- takes the first build's outputs instead of
 * compiling again (nvcc alone takes 2-3 s for a small file on the H100,
 * bench/RESULTS.md). An entry holds the outputs, what the build printed
 * (STDOUT, STDERR: the user sees it again) and a MANIFEST naming the
 * outputs; only successful builds are kept. The key covers the compiler's
 * version text, the command and every file of J/task, the submission's
 * included (name and content): nothing else reaches a build (a fresh
 * J/step, a new job's empty J/home), so whoever submits the same code gets
 * what their own build would have made (only __DATE__ and __TIME__ can
 * tell). The key covers the submitter too: a hit (a build that took no
 * time) would otherwise tell a user that someone else submitted that
 * exact file. These files are user-built, unlike h-*: they are only ever copied
 * into J/out for the confined child to load, as a fresh build would be.
 * Filled atomically as h-* is; above USER_KEEP entries the least recently
 * used are removed.
 */
#include "build_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "jobdir.h"
#include "kb_log.h"
#include "kb_util.h"
#include "pbutil.h"

#define KEY_FORMAT "kb-harness-cache-2"
#define MANIFEST "MANIFEST"
#define ENTRY_PREFIX "h-"
#define TMP_PREFIX ".tmp-"
#define STALE_TMP_S (6 * 3600)
/* A fill compiles a whole harness: more than one user build may take. */
#define FILL_TIMEOUT_MIN_S 300.0
#define FILL_TIMEOUT_MAX_S 1800.0
#define LOG_OUTPUT_MAX 4000
#define USER_DIR "user"
#define USER_FORMAT "kb-submission-cache-2"
#define USER_PREFIX "s-"
#define USER_KEEP 256
#define USER_OUT "STDOUT"
#define USER_ERR "STDERR"
/* What a build printed, kept and shown again: at most this much. */
#define USER_LOG_MAX (1u << 20)

static void hash_field(crypto_hash_sha256_state *st, const void *p, size_t n)
{
	unsigned char len[8];

	for (int i = 0; i < 8; i++)
		len[i] = (unsigned char)((uint64_t)n >> (8 * i));
	crypto_hash_sha256_update(st, len, sizeof(len));
	if (n)
		crypto_hash_sha256_update(st, p, n);
}

static void hash_str(crypto_hash_sha256_state *st, const char *s)
{
	hash_field(st, s, strlen(s));
}

/* Every task file, name and content; file sub is left out (code NULL)
 * or hashed with code as its content. */
static void hash_files(crypto_hash_sha256_state *st, const Kb__Task *t,
		       long sub, const ProtobufCBinaryData *code)
{
	for (size_t i = 0; i < t->n_files; i++) {
		const Kb__TaskFile *f = t->files[i];
		const ProtobufCBinaryData *data = &f->content;

		if ((long)i == sub) {
			if (!code)
				continue;
			data = code;
		}
		hash_str(st, "file");
		hash_str(st, f->name);
		hash_field(st, data->data, data->len);
	}
}

/* The digest as 64 hex digits and a NUL. */
static void hash_hex(crypto_hash_sha256_state *st, char out[65])
{
	unsigned char d[crypto_hash_sha256_BYTES];

	crypto_hash_sha256_final(st, d);
	for (size_t i = 0; i < sizeof(d); i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

void kb__cache_key(const Kb__Task *t, const struct kb__harness *h, char out[65])
{
	crypto_hash_sha256_state st;

	crypto_hash_sha256_init(&st);
	hash_str(&st, KEY_FORMAT);
	hash_str(&st, h->version ? h->version : "");
	for (size_t i = 0; i < h->n; i++) {
		hash_str(&st, "cmd");
		for (size_t k = 0; k < h->cmds[i].n; k++)
			hash_str(&st, h->cmds[i].v[k]);
	}
	hash_files(&st, t, h->sub_index, NULL);
	hash_hex(&st, out);
}

static const char manifest[] = KEY_FORMAT "\n" KB_JOBDIR_BINARY "\n";

/* 1 if dir holds a valid MANIFEST and a regular eval.out. */
static int entry_ok(const char *dir)
{
	char path[PATH_MAX + 64], *text = NULL;
	size_t len;
	struct stat st;
	int ok;

	snprintf(path, sizeof(path), "%s/%s", dir, MANIFEST);
	if (kb_read_file(path, 1 << 20, &text, &len) < 0)
		return 0;
	ok = strcmp(text, manifest) == 0;
	free(text);
	snprintf(path, sizeof(path), "%s/%s", dir, KB_JOBDIR_BINARY);
	return ok && lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Removes temporary directories of fills that died long ago. */
static void remove_stale(const char *cache)
{
	DIR *d = opendir(cache);
	const time_t now = time(NULL);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[PATH_MAX + 300];
		struct stat st;

		if (strncmp(e->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", cache, e->d_name);
		if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode) &&
		    now - st.st_mtime > STALE_TMP_S) {
			kb_info("removing stale cache fill %s", path);
			kb_jobdir_remove(path);
		}
	}
	closedir(d);
}

/* Moves a damaged entry out of the way (renaming is atomic; removing it
 * afterwards is not, and needs not be). */
static void quarantine(const char *cache, const char *final)
{
	char aside[PATH_MAX + 32];

	snprintf(aside, sizeof(aside), "%s/" TMP_PREFIX "broken-XXXXXX", cache);
	if (!mkdtemp(aside))
		return;
	if (rename(final, aside) == 0 || errno == ENOENT)
		kb_warn("cache entry %s was incomplete: rebuilding it", final);
	kb_jobdir_remove(aside);
}

/* Runs one harness command in J/step. Returns 0, or -1 with msg set; a
 * compiler error is logged in full. */
static int run_one(const struct kb_build_ctx *c, const struct kb_argv *a,
		   double timeout_s, double *wall_s, char *msg, size_t msg_size)
{
	const struct kb_build_cmd cmd = {a, c->jd->harness, timeout_s, 0};
	struct kb_sandbox_result r = {0};
	char err[256] = "", *line, *why;
	int rc;

	rc = c->exec(c->exec_ctx, &cmd, &r, err, sizeof(err));
	*wall_s += r.wall_s;
	if (rc < 0 || r.infra_error) {
		snprintf(msg, msg_size, "%s", err[0] ? err : r.infra_msg);
		kb_sandbox_result_clear(&r);
		return -1;
	}
	if (!r.timed_out && !r.signaled && r.exit_code == 0) {
		kb_sandbox_result_clear(&r);
		return 0;
	}
	why = kb_truncate(r.err ? r.err : "", r.err ? r.err_len : 0,
			  LOG_OUTPUT_MAX);
	line = kb_argv_render(a);
	kb_warn("the problem's harness does not build: %s: %s", line,
		why ? why : "");
	snprintf(msg, msg_size, "the problem's harness %s: %.*s",
		 r.timed_out ? "timed out building" : "does not build",
		 (int)strcspn(why ? why : "", "\n"), why ? why : "");
	free(line);
	free(why);
	kb_sandbox_result_clear(&r);
	return -1;
}

/* Builds h into the new directory tmp. Returns OK or INFRA with msg. */
static enum kb_build_state fill(const struct kb_build_ctx *c,
				const struct kb__harness *h, const char *tmp,
				double timeout_s, double *wall_s, char *msg,
				size_t msg_size)
{
	enum kb_build_state st = KB_BUILD_INFRA;
	char err[256];
	int tfd = -1, rc;

	if (kb_jobdir_materialize(c->jd, c->task, NULL, h->sub_index, 0, err,
				  sizeof(err)) < 0 ||
	    kb_jobdir_step_begin(c->jd, err, sizeof(err)) < 0) {
		snprintf(msg, msg_size, "cache: %s", err);
		return KB_BUILD_INFRA;
	}
	for (size_t i = 0; i < h->n; i++)
		if (run_one(c, &h->cmds[i], timeout_s, wall_s, msg, msg_size) <
		    0)
			goto out;
	tfd = open(tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tfd < 0 || kb_jobdir_step_take(c->jd, KB_JOBDIR_BINARY, tfd, 0755,
					   err, sizeof(err)) < 0) {
		snprintf(msg, msg_size,
			 "cache: the harness build left no "
			 "%s: %s",
			 KB_JOBDIR_BINARY, tfd < 0 ? strerror(errno) : err);
		goto out;
	}
	if ((rc = kb_jobdir_write_at(tfd, MANIFEST, manifest, strlen(manifest),
				     0644)) < 0) {
		snprintf(msg, msg_size, "cache: write %s/%s: %s", tmp, MANIFEST,
			 strerror(-rc));
		goto out;
	}
	st = KB_BUILD_OK;
out:
	if (tfd >= 0)
		close(tfd);
	kb_jobdir_step_end(c->jd);
	return st;
}

/* Makes sure <cache>/h-<key> exists. Returns OK with final set, or INFRA. */
static enum kb_build_state get_entry(const struct kb_build_ctx *c,
				     const struct kb__harness *h,
				     double timeout_s, char *final,
				     size_t final_size, double *wall_s,
				     char *msg, size_t msg_size)
{
	const char *cache = c->cache_dir;
	char key[65], tmp[PATH_MAX];
	struct stat st;
	enum kb_build_state s;
	int rc;

	kb__cache_key(c->task, h, key);
	if ((size_t)snprintf(final, final_size, "%s/" ENTRY_PREFIX "%s", cache,
			     key) >= final_size ||
	    (size_t)snprintf(tmp, sizeof(tmp), "%s/" TMP_PREFIX "XXXXXX",
			     cache) >= sizeof(tmp)) {
		snprintf(msg, msg_size, "cache path too long");
		return KB_BUILD_INFRA;
	}
	if (entry_ok(final))
		return KB_BUILD_OK;
	if ((rc = kb_jobdir_mkdirs(cache, 0700)) < 0) {
		snprintf(msg, msg_size, "cannot create %s: %s", cache,
			 strerror(-rc));
		return KB_BUILD_INFRA;
	}
	remove_stale(cache);
	if (lstat(final, &st) == 0)
		quarantine(cache, final);
	if (!mkdtemp(tmp)) {
		snprintf(msg, msg_size, "cannot create %s: %s", tmp,
			 strerror(errno));
		return KB_BUILD_INFRA;
	}
	chmod(tmp, 0755);
	kb_info("harness cache miss: building %s", final);
	s = fill(c, h, tmp, timeout_s, wall_s, msg, msg_size);
	if (s != KB_BUILD_OK) {
		kb_jobdir_remove(tmp);
		return s;
	}
	if (rename(tmp, final) == 0)
		return KB_BUILD_OK;
	rc = errno;
	kb_jobdir_remove(tmp);
	/* Another worker finished first: use its copy. */
	if ((rc == EEXIST || rc == ENOTEMPTY) && entry_ok(final))
		return KB_BUILD_OK;
	snprintf(msg, msg_size, "cannot install %s: %s", final, strerror(rc));
	return KB_BUILD_INFRA;
}

enum kb_build_state kb__cache_harness(const struct kb_build_ctx *c,
				      const struct kb__harness *h,
				      double timeout_s, double *wall_s,
				      char *msg, size_t msg_size)
{
	char final[PATH_MAX], err[256];
	enum kb_build_state s;

	if (!c->cache_dir || !c->cache_dir[0]) {
		snprintf(msg, msg_size, "no cache directory");
		return KB_BUILD_INFRA;
	}
	timeout_s = timeout_s < FILL_TIMEOUT_MIN_S   ? FILL_TIMEOUT_MIN_S
		    : timeout_s > FILL_TIMEOUT_MAX_S ? FILL_TIMEOUT_MAX_S
						     : timeout_s;
	s = get_entry(c, h, timeout_s, final, sizeof(final), wall_s, msg,
		      msg_size);
	if (s != KB_BUILD_OK)
		return s;
	if (kb_jobdir_copy_in(c->jd->out_fd, final, KB_JOBDIR_BINARY, 0755, err,
			      sizeof(err)) < 0) {
		snprintf(msg, msg_size, "cache: %s", err);
		return KB_BUILD_INFRA;
	}
	return KB_BUILD_OK;
}

/* "kbg_main.cu" -> "<step>kbg_main.o". */
static char *object_path(const char *source)
{
	const char *dot = strrchr(source, '.');
	size_t stem = dot && dot != source ? (size_t)(dot - source)
					   : strlen(source);

	return kb__xasprintf(KB_BUILD_STEP "%.*s.o", (int)stem, source);
}

enum kb_build_state
kb__build_harness(const struct kb_build_ctx *c, const struct kb__build_plan *p,
		  const char *version, kb__compile_fn compile,
		  const void *builder, struct kb_argv *link,
		  const struct kb_argv *link_tail, double *wall_s, char *msg,
		  size_t msg_size)
{
	struct kb_argv *cmds = kb__xcalloc(p->sources.n + 1, sizeof(*cmds));
	struct kb__harness h = {cmds, 0, version, p->sub};
	enum kb_build_state st;

	for (size_t i = 0; i < p->sources.n; i++) {
		const char *s = p->sources.v[i];
		char *obj;

		if (strcmp(s, p->sub_name) == 0)
			continue;
		obj = object_path(s);
		compile(builder, &cmds[h.n++], s, obj);
		kb_argv_push(link, obj);
		free(obj);
	}
	kb__build_push_all(link, link_tail);
	cmds[h.n++] = *link;
	*link = (struct kb_argv){0};
	st = kb__cache_harness(c, &h, c->timeout_s * 5, wall_s, msg, msg_size);
	for (size_t i = 0; i < h.n; i++)
		kb_argv_free(&cmds[i]);
	free(cmds);
	return st;
}

/* ---- submission builds ------------------------------------------------- */

static void user_key(const struct kb_build_ctx *c, long sub,
		     const struct kb_argv *a, const char *version, char out[65])
{
	crypto_hash_sha256_state st;

	crypto_hash_sha256_init(&st);
	hash_str(&st, USER_FORMAT);
	hash_str(&st, c->user ? c->user : "");
	hash_str(&st, version ? version : "");
	for (size_t k = 0; k < a->n; k++)
		hash_str(&st, a->v[k]);
	hash_files(&st, c->task, sub, c->code);
	hash_hex(&st, out);
}

/* "kb-submission-cache-2\nname\n..." for the outputs. */
static char *user_manifest(const char *const *outputs)
{
	struct kb_buf b = {0};

	kb_buf_printf(&b, "%s\n", USER_FORMAT);
	for (size_t i = 0; outputs[i]; i++)
		kb_buf_printf(&b, "%s\n", outputs[i]);
	return b.data ? b.data : kb__xstrdup("");
}

/* Appends the file dir/name (at most USER_LOG_MAX) to b. 0 or -1. */
static int append_file(struct kb_buf *b, const char *dir, const char *name)
{
	char path[PATH_MAX + 32], *text = NULL;
	size_t len = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (kb_read_file(path, USER_LOG_MAX, &text, &len) < 0)
		return -1;
	kb_buf_append(b, text, len);
	free(text);
	return 0;
}

/* A hit: the outputs into J/out, the build's output into the log. 1 on a
 * hit, 0 on a miss (or an entry that cannot be used: it is rebuilt). */
static int user_hit(const struct kb_build_ctx *c, const char *final,
		    const char *const *outputs, const struct kb_argv *a,
		    struct kb__build_log *log)
{
	char path[PATH_MAX + 32], err[256], *text = NULL, *want, *line;
	size_t len, out_len = log->out.len, err_len = log->err.len;
	int ok;

	snprintf(path, sizeof(path), "%s/%s", final, MANIFEST);
	if (kb_read_file(path, 1 << 16, &text, &len) < 0)
		return 0;
	want = user_manifest(outputs);
	ok = strcmp(text, want) == 0;
	free(text);
	free(want);
	for (size_t i = 0; ok && outputs[i]; i++) {
		ok = kb_jobdir_copy_in(c->jd->out_fd, final, outputs[i], 0755,
				       err, sizeof(err)) == 0;
		if (!ok)
			kb_warn("submission cache %s: %s", final, err);
	}
	ok = ok && append_file(&log->out, final, USER_OUT) == 0 &&
	     append_file(&log->err, final, USER_ERR) == 0;
	if (!ok) {
		/* Back to what the log held; a fresh build follows. */
		log->out.len = out_len;
		log->err.len = err_len;
		if (log->out.data)
			log->out.data[out_len] = '\0';
		if (log->err.data)
			log->err.data[err_len] = '\0';
		for (size_t i = 0; outputs[i]; i++)
			unlinkat(c->jd->out_fd, outputs[i], 0);
		return 0;
	}
	/* Recently used: kept longest. */
	utimensat(AT_FDCWD, final, NULL, 0);
	line = kb_argv_render(a);
	if (log->cmds.len)
		kb_buf_append(&log->cmds, " && ", 4);
	kb_buf_append(&log->cmds, line, strlen(line));
	free(line);
	log->exit_code = 0;
	return 1;
}

struct aged {
	char name[80];
	struct timespec t;
};

static int older(const void *x, const void *y)
{
	const struct aged *a = x, *b = y;

	if (a->t.tv_sec != b->t.tv_sec)
		return a->t.tv_sec < b->t.tv_sec ? -1 : 1;
	return a->t.tv_nsec < b->t.tv_nsec ? -1 : a->t.tv_nsec > b->t.tv_nsec;
}

void kb__user_cache_trim(const char *dir, size_t keep)
{
	DIR *d = opendir(dir);
	struct aged *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[PATH_MAX + 300];
		struct stat st;

		if (strncmp(e->d_name, USER_PREFIX, strlen(USER_PREFIX)) ||
		    strlen(e->d_name) >= sizeof(v->name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			v = kb__xrealloc(v, cap * sizeof(*v));
		}
		snprintf(v[n].name, sizeof(v[n].name), "%s", e->d_name);
		v[n++].t = st.st_mtim;
	}
	closedir(d);
	qsort(v, n, sizeof(*v), older);
	for (size_t i = 0; n > keep && i < n - keep; i++) {
		char path[PATH_MAX + 300];

		snprintf(path, sizeof(path), "%s/%s", dir, v[i].name);
		kb_jobdir_remove(path);
	}
	free(v);
}

/* Keeps a successful build (best effort: a failure costs a later rebuild,
 * never this job). The log's new output starts at out_from/err_from. */
static void user_store(const struct kb_build_ctx *c, const char *dir,
		       const char *final, const char *const *outputs,
		       const struct kb__build_log *log, size_t out_from,
		       size_t err_from)
{
	char tmp[PATH_MAX + 32], err[256];
	char *m = user_manifest(outputs);
	int tfd = -1, ok;

	if (kb_jobdir_mkdirs(dir, 0700) < 0)
		goto out;
	remove_stale(dir);
	kb__user_cache_trim(dir, USER_KEEP - 1);
	snprintf(tmp, sizeof(tmp), "%s/" TMP_PREFIX "XXXXXX", dir);
	if (!mkdtemp(tmp))
		goto out;
	tfd = open(tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	ok = tfd >= 0;
	for (size_t i = 0; ok && outputs[i]; i++)
		ok = kb_jobdir_copy_in(tfd, c->jd->out, outputs[i], 0755, err,
				       sizeof(err)) == 0;
	ok = ok &&
	     kb_jobdir_write_at(tfd, USER_OUT, log->out.data + out_from,
				log->out.len - out_from, 0644) == 0 &&
	     kb_jobdir_write_at(tfd, USER_ERR, log->err.data + err_from,
				log->err.len - err_from, 0644) == 0 &&
	     kb_jobdir_write_at(tfd, MANIFEST, m, strlen(m), 0644) == 0;
	if (ok && access(final, F_OK) == 0)
		quarantine(dir, final); /* damaged: user_hit refused it */
	if (!ok || rename(tmp, final) < 0)
		kb_jobdir_remove(tmp);
out:
	if (tfd >= 0)
		close(tfd);
	free(m);
}

enum kb_build_state
kb__build_user_cached(const struct kb_build_ctx *c, struct kb__build_log *log,
		      const struct kb_argv *a, const char *const *outputs,
		      const char *version, char *msg, size_t msg_size)
{
	const size_t out_from = log->out.len, err_from = log->err.len;
	const long sub = kb_builder_submission_file(c->task, c->code);
	char key[65], dir[PATH_MAX], final[PATH_MAX + 80];
	enum kb_build_state st;

	if (!c->cache_dir || !c->cache_dir[0] || sub < 0 ||
	    (size_t)snprintf(dir, sizeof(dir), "%s/" USER_DIR, c->cache_dir) >=
		    sizeof(dir))
		return kb__build_user(c, log, a, outputs, msg, msg_size);
	user_key(c, sub, a, version, key);
	snprintf(final, sizeof(final), "%s/" USER_PREFIX "%s", dir, key);
	if (user_hit(c, final, outputs, a, log))
		return KB_BUILD_OK;
	st = kb__build_user(c, log, a, outputs, msg, msg_size);
	if (st == KB_BUILD_OK)
		user_store(c, dir, final, outputs, log, out_from, err_from);
	return st;
}
