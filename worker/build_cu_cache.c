/* kb_build_cu's cache of harness objects (see build_cu.h).
 *
 * The cache (KB_CACHE_DIR, default $KB_WORKDIR/cache) holds one directory
 * per key, cu-<sha256>, with the objects and a MANIFEST naming them. The
 * key covers everything a harness object depends on: the nvcc version
 * text, the arch, every compile command (flags included) and the name and
 * content of every task file but the submission (headers matter); the
 * submission is never part of it, and is never in the directory where
 * harness objects are compiled, so no object in the cache can depend on a
 * user's code.
 *
 * Fill: the harness sources are written to a fresh <cache>/.tmp-XXXXXX,
 * compiled there through the sandbox (no GPU), checked, given a MANIFEST
 * and renamed to cu-<key>. rename(2) of a directory is atomic and fails
 * when the target exists and is not empty, so concurrent workers each
 * build their own copy, one wins, the others discard theirs, and a reader
 * sees either no directory or a complete one. A cu-<key> without a valid
 * MANIFEST can only be damage (it is written before the rename): it is
 * moved aside and rebuilt. Temporary directories older than STALE_TMP_S
 * (a worker killed mid-fill) are removed by the next fill. Entries are
 * small (a few hundred KiB per problem, toolkit and arch) and never
 * evicted: a new toolkit or harness version gets new keys; deleting the
 * directory while workers are stopped is always safe.
 *
 * Per job the cached objects are copied (not linked: the sandbox chowns
 * the job directory to the run's uid, and a hard link would hand it the
 * cache's inode) into <job>/kb-harness-objs/.
 */
#include "build_cu.h"

#include <dirent.h>
#include <errno.h>
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

#define KEY_FORMAT "kb-cu-cache-1"
#define MANIFEST "MANIFEST"
#define TMP_PREFIX ".tmp-"
#define STALE_TMP_S (6 * 3600)
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

void kb__cu_cache_key(const struct kb_cu_harness *h, const char *arch,
		      const char *nvcc_version, char out[65])
{
	crypto_hash_sha256_state st;
	unsigned char d[crypto_hash_sha256_BYTES];

	crypto_hash_sha256_init(&st);
	hash_str(&st, KEY_FORMAT);
	hash_str(&st, arch);
	hash_str(&st, nvcc_version ? nvcc_version : "");
	for (size_t i = 0; i < h->n; i++) {
		hash_str(&st, "cmd");
		for (size_t k = 0; k < h->cmds[i].n; k++)
			hash_str(&st, h->cmds[i].v[k]);
	}
	for (size_t i = 0; i < h->task->n_files; i++) {
		const Kb__TaskFile *f = h->task->files[i];

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

static char *manifest_text(const struct kb_cu_harness *h)
{
	struct kb_buf b = {0};

	kb_buf_printf(&b, "%s\n", KEY_FORMAT);
	for (size_t i = 0; i < h->n; i++)
		kb_buf_printf(&b, "%s\n", h->objects[i]);
	if (!b.data)
		abort();
	return b.data;
}

/* 1 if dir holds a MANIFEST naming exactly h's objects, all present. */
static int manifest_ok(const char *dir, const struct kb_cu_harness *h)
{
	char path[PATH_MAX + 64], *text = NULL, *want;
	size_t len;
	struct stat st;
	int ok;

	snprintf(path, sizeof(path), "%s/%s", dir, MANIFEST);
	if (kb_read_file(path, 1 << 20, &text, &len) < 0)
		return 0;
	want = manifest_text(h);
	ok = strcmp(text, want) == 0;
	free(text);
	free(want);
	for (size_t i = 0; ok && i < h->n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, h->objects[i]);
		ok = lstat(path, &st) == 0 && S_ISREG(st.st_mode);
	}
	return ok;
}

static int mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	size_t n = strlen(path);

	if (n == 0 || n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
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

/* Runs one harness compile in dir. Returns 0, or -1 with msg set; a
 * compiler error is logged in full. */
static int compile_one(const struct kb_build_ctx *c, const struct kb_argv *a,
		       const char *dir, double timeout_s, double *wall_s,
		       char *msg, size_t msg_size)
{
	const struct kb_build_cmd cmd = {a, dir, timeout_s};
	const char *src = a->n >= 3 ? a->v[a->n - 3] : "?"; /* -c SRC -o OBJ */
	struct kb_sandbox_result r;
	char err[256] = "", *line, *why;
	int rc;

	memset(&r, 0, sizeof(r));
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
	kb_warn("harness source %s does not build: %s: %s", src, line,
		why ? why : "");
	snprintf(msg, msg_size, "harness source %s %s: %.*s", src,
		 r.timed_out ? "timed out" : "does not compile",
		 (int)strcspn(why ? why : "", "\n"), why ? why : "");
	free(line);
	free(why);
	kb_sandbox_result_clear(&r);
	return -1;
}

/* Compiles h's commands in tmp. Returns OK or INFRA with msg set. */
static enum kb_build_state fill(const struct kb_build_ctx *c,
				const struct kb_cu_harness *h, const char *tmp,
				double timeout_s, double *wall_s, char *msg,
				size_t msg_size)
{
	char path[PATH_MAX + 300];
	struct stat st;
	int rc;

	for (size_t i = 0; i < h->task->n_files; i++) {
		const Kb__TaskFile *f = h->task->files[i];

		if ((long)i == h->sub_index)
			continue;
		snprintf(path, sizeof(path), "%s/%s", tmp, f->name);
		rc = kb_write_file(path, f->content.data, f->content.len, 0644);
		if (rc < 0) {
			snprintf(msg, msg_size, "cache: write %s: %s", path,
				 strerror(-rc));
			return KB_BUILD_INFRA;
		}
	}
	for (size_t i = 0; i < h->n; i++)
		if (compile_one(c, &h->cmds[i], tmp, timeout_s, wall_s, msg,
				msg_size) < 0)
			return KB_BUILD_INFRA;
	for (size_t i = 0; i < h->n; i++) {
		snprintf(path, sizeof(path), "%s/%s", tmp, h->objects[i]);
		if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
			snprintf(msg, msg_size, "cache: nvcc wrote no %s",
				 h->objects[i]);
			return KB_BUILD_INFRA;
		}
	}
	/* Only the objects stay. */
	for (size_t i = 0; i < h->task->n_files; i++) {
		const char *name = h->task->files[i]->name;
		int is_object = 0;

		for (size_t k = 0; k < h->n; k++)
			is_object |= strcmp(h->objects[k], name) == 0;
		if ((long)i == h->sub_index || is_object)
			continue;
		snprintf(path, sizeof(path), "%s/%s", tmp, name);
		unlink(path);
	}
	{
		char *m = manifest_text(h);

		snprintf(path, sizeof(path), "%s/%s", tmp, MANIFEST);
		rc = kb_write_file(path, m, strlen(m), 0644);
		free(m);
	}
	if (rc < 0) {
		snprintf(msg, msg_size, "cache: write %s: %s", path,
			 strerror(-rc));
		return KB_BUILD_INFRA;
	}
	return KB_BUILD_OK;
}

enum kb_build_state kb__cu_cache_get(const struct kb_build_ctx *c,
				     const struct kb_cu_harness *h,
				     const char *key, double timeout_s,
				     char *objdir, size_t objdir_size,
				     double *wall_s, char *msg,
				     size_t msg_size)
{
	const char *cache = c->cache_dir;
	char final[PATH_MAX], tmp[PATH_MAX];
	struct stat st;
	enum kb_build_state s;
	int rc;

	*wall_s = 0;
	if (!cache || !cache[0]) {
		snprintf(msg, msg_size, "no cache directory");
		return KB_BUILD_INFRA;
	}
	if ((size_t)snprintf(final, sizeof(final), "%s/cu-%s", cache, key) >=
		    sizeof(final) ||
	    (size_t)snprintf(tmp, sizeof(tmp), "%s/" TMP_PREFIX "XXXXXX",
			     cache) >= sizeof(tmp)) {
		snprintf(msg, msg_size, "cache path too long");
		return KB_BUILD_INFRA;
	}
	snprintf(objdir, objdir_size, "%s", final);
	if (manifest_ok(final, h))
		return KB_BUILD_OK;
	if ((rc = mkdir_p(cache, 0700)) < 0) {
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
	kb_info("harness cache miss: building %s (%zu objects)", final, h->n);
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
	if ((rc == EEXIST || rc == ENOTEMPTY) && manifest_ok(final, h))
		return KB_BUILD_OK;
	snprintf(msg, msg_size, "cannot install %s: %s", final, strerror(rc));
	return KB_BUILD_INFRA;
}
