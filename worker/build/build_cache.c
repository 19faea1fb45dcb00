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

#define KEY_FORMAT "kb-harness-cache-2"
#define MANIFEST "MANIFEST"
#define ENTRY_PREFIX "h-"
#define TMP_PREFIX ".tmp-"
#define STALE_TMP_S (6 * 3600)
/* A fill compiles a whole harness: more than one user build may take. */
#define FILL_TIMEOUT_MIN_S 300.0
#define FILL_TIMEOUT_MAX_S 1800.0
#define LOG_OUTPUT_MAX 4000

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

void kb__cache_key(const Kb__Task *t, const struct kb__harness *h,
		   char out[65])
{
	crypto_hash_sha256_state st;
	unsigned char d[crypto_hash_sha256_BYTES];

	crypto_hash_sha256_init(&st);
	hash_str(&st, KEY_FORMAT);
	hash_str(&st, h->version ? h->version : "");
	for (size_t i = 0; i < h->n; i++) {
		hash_str(&st, "cmd");
		for (size_t k = 0; k < h->cmds[i].n; k++)
			hash_str(&st, h->cmds[i].v[k]);
	}
	for (size_t i = 0; i < t->n_files; i++) {
		const Kb__TaskFile *f = t->files[i];

		if ((long)i == h->sub_index)
			continue;
		hash_str(&st, "file");
		hash_str(&st, f->name);
		hash_field(&st, f->content.data, f->content.len);
	}
	crypto_hash_sha256_final(&st, d);
	for (size_t i = 0; i < sizeof(d); i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
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
		   double timeout_s, double *wall_s, char *msg,
		   size_t msg_size)
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
		snprintf(msg, msg_size, "cache: the harness build left no "
			 "%s: %s", KB_JOBDIR_BINARY,
			 tfd < 0 ? strerror(errno) : err);
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
