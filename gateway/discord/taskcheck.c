/* /admin verify-task, and the fingerprint of a task that it and
 * /admin reload-problems compare with what a gateway loaded.
 *
 * verify-task reads a board's problem directory again from disk, as the
 * gateway loaded it, and checks what can be checked without running
 * anything: task.yml loads, every file and template reads, the tests and
 * benchmarks are well-formed cases whose seeds take a secret, and the
 * example submissions beside the task (our submission_*.<ext>, upstream's
 * solutions/{correct,wrong}/...) are in the task's language and name this
 * board and its GPUs in their #!POPCORN lines. Running the examples is
 * what a test submission of each does (upstream's verify-task submits
 * them); this command says which ought to pass and which to fail.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"
#include "kb_cases.h"
#include "kb_config.h"
#include "kb_lang.h"
#include "kb_log.h"
#include "kb_util.h"

#define FILE_MAX (64u << 20)
#define EXAMPLE_MAX (1u << 20)
#define EXAMPLES_MAX 32

/* ---- the fingerprint ---- */

static void digest_add(crypto_hash_sha256_state *st, const char *s, size_t n)
{
	uint64_t len = n;

	crypto_hash_sha256_update(st, (const unsigned char *)&len, sizeof(len));
	if (n)
		crypto_hash_sha256_update(st, (const unsigned char *)s, n);
}

static void digest_str(crypto_hash_sha256_state *st, const char *s)
{
	digest_add(st, s ? s : "", s ? strlen(s) : 0);
}

int kb__dc_task_fingerprint(const struct kb_task *t, char *const *contents,
			    const size_t *lens, unsigned char out[32])
{
	crypto_hash_sha256_state st;
	char num[64];

	crypto_hash_sha256_init(&st);
	digest_str(&st, t->lang);
	digest_str(&st, t->description);
	digest_str(&st, t->ranking_by);
	snprintf(num, sizeof(num), "%u/%u/%u/%d/%" PRIu64 "/%d",
		 t->test_timeout, t->benchmark_timeout, t->ranked_timeout,
		 t->has_seed, t->seed, t->multi_gpu);
	digest_str(&st, num);
	for (size_t i = 0; i < t->nconfig; i++) {
		digest_str(&st, t->config[i].key);
		digest_str(&st, t->config[i].value);
	}
	for (size_t i = 0; i < t->ntests; i++)
		digest_str(&st, t->tests[i]);
	for (size_t i = 0; i < t->nbenchmarks; i++)
		digest_str(&st, t->benchmarks[i]);
	for (size_t i = 0; i < t->ngpus; i++)
		digest_str(&st, t->gpus[i]);
	digest_str(&st, t->deadline);
	for (size_t i = 0; i < t->nfiles; i++) {
		digest_str(&st, t->files[i].name);
		if (strcmp(t->files[i].source, "@SUBMISSION@") == 0)
			continue;
		if (contents) {
			if (contents[i])
				digest_add(&st, contents[i], lens[i]);
			continue;
		}
		char err[512], *data = NULL;
		size_t len = 0;
		int rc = kb_task_read(t, t->files[i].source, 64u << 20, &data,
				      &len, err, sizeof(err));
		if (rc < 0)
			return rc;
		digest_add(&st, data, len);
		free(data);
	}
	crypto_hash_sha256_final(&st, out);
	return 0;
}

/* ---- verify-task ---- */

struct report {
	struct kb_buf lines;
	size_t errors, warnings;
};

static void note(struct report *r, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void note(struct report *r, int level, const char *fmt, ...)
{
	char line[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	r->errors += level < 0;
	r->warnings += level == 0;
	kb_buf_printf(&r->lines, "%s %s\n",
		      level < 0    ? "❌"
		      : level == 0 ? "⚠️"
				   : "✅",
		      line);
}

/* A message (an error string of ours, or a file name) fit for a line. */
static char *clean(const char *s)
{
	return kb_dc_text_clean(s, strlen(s), 400, 1);
}

/* Where a board runs and until when come from the competition file (or
 * the sync) that listed it, not from its directory: t takes lb's. */
static int take_placement(struct kb_task *t, const struct kb_task *from)
{
	char **gpus = calloc(from->ngpus ? from->ngpus : 1, sizeof(*gpus));
	char *deadline = from->deadline ? strdup(from->deadline) : NULL;
	int bad = !gpus || (from->deadline && !deadline);

	for (size_t i = 0; !bad && i < from->ngpus; i++)
		bad = !(gpus[i] = strdup(from->gpus[i]));
	if (bad) {
		for (size_t i = 0; gpus && i < from->ngpus; i++)
			free(gpus[i]);
		free(gpus);
		free(deadline);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->ngpus; i++)
		free(t->gpus[i]);
	free(t->gpus);
	free(t->deadline);
	t->gpus = gpus;
	t->ngpus = from->ngpus;
	t->deadline = deadline;
	return 0;
}

/* The board's task again from disk, loaded as the gateway loaded it: a
 * board of KB_PROBLEMS with the whole set (its competition file says
 * where it runs), an admin-created one from its directory. */
static int reload(struct kb_dc *dc, const struct kb_gw_lb *lb,
		  struct kb_task *t, char *err, size_t err_size)
{
	const struct kb_task *old = lb->task;
	struct kb_problemset ps = {0};
	int rc;

	if (lb->dynamic) {
		rc = old->root ? kb_task_load_confined(old->root,
						       kb_task_rel_dir(old),
						       old->name, t, err,
						       err_size)
			       : kb_task_load_dir(old->dir, old->name, t, err,
						  err_size);
		if (rc == 0 && (rc = take_placement(t, old)) < 0)
			snprintf(err, err_size, "out of memory");
		return rc;
	}
	rc = kb_problemset_load(dc->g->cfg.problems, &ps, err, err_size);
	if (rc < 0)
		return rc;
	struct kb_task *found =
		(struct kb_task *)kb_problemset_find(&ps, old->name);
	if (found) {
		*t = *found;
		memset(found, 0, sizeof(*found)); /* t owns it now */
	} else {
		snprintf(err, err_size,
			 "`%s` is no longer in the problem set (KB_PROBLEMS)",
			 old->name);
		rc = -ENOENT;
	}
	kb_problemset_clear(&ps);
	return rc;
}

static void check_files(const struct kb_task *t, struct report *r)
{
	size_t n = 0;

	for (size_t i = 0; i < t->nfiles; i++) {
		char err[512], *data = NULL;
		size_t len = 0;
		if (strcmp(t->files[i].source, "@SUBMISSION@") == 0)
			continue;
		if (kb_task_read(t, t->files[i].source, FILE_MAX, &data, &len,
				 err, sizeof(err)) < 0) {
			char *c = clean(err);
			note(r, -1, "file `%s`: %s", t->files[i].name,
			     c ? c : "unreadable");
			free(c);
			continue;
		}
		free(data);
		n++;
	}
	note(r, 1,
	     "task.yml loads (lang `%s`, ranking by %s); %zu task file%s read",
	     t->lang, t->ranking_by, n, n == 1 ? "" : "s");
}

static void check_cases(const struct kb_task *t, struct report *r)
{
	static const uint64_t probe = 0x5eed5eed5eedULL; /* any secret */
	char err[256];
	char *s;

	if (t->ntests == 0)
		note(r, -1,
		     "no tests: test runs and every ranked run check nothing");
	if (t->nbenchmarks == 0)
		note(r, 0,
		     "no benchmarks: benchmark and ranked runs have nothing to time");
	s = kb_cases_render(t->tests, t->ntests, 1, probe, err, sizeof(err));
	if (!s) {
		note(r, -1, "tests: %s", err);
		return;
	}
	free(s);
	s = kb_cases_render(t->benchmarks, t->nbenchmarks, 1, probe, err,
			    sizeof(err));
	if (!s) {
		note(r, -1, "benchmarks: %s", err);
		return;
	}
	free(s);
	if (t->ntests || t->nbenchmarks)
		note(r, 1,
		     "%zu test%s and %zu benchmark%s are well-formed, seeds and all",
		     t->ntests, t->ntests == 1 ? "" : "s", t->nbenchmarks,
		     t->nbenchmarks == 1 ? "" : "s");
}

/* 1 when file name ends in an extension of the task's language, or the
 * language is one we do not know the files of. */
static int lang_ext_ok(const char *lang, const char *name)
{
	const struct kb_lang *l = kb_lang_find(lang);

	return l ? kb_lang_has_ext(l, name) : 1;
}

/* Checks one example or template file rel of t: its language and its
 * #!POPCORN lines. what: "example" or "template". Returns 0 when fine. */
static int check_source(const struct kb_task *t, const struct kb_gw_lb *lb,
			const char *rel, const char *what, struct report *r)
{
	char err[512], val[128], *code = NULL, *c = clean(rel);
	size_t len = 0;
	int bad = 0;

	if (kb_task_read(t, rel, EXAMPLE_MAX, &code, &len, err, sizeof(err)) <
	    0) {
		char *e = clean(err);
		note(r, -1, "%s `%s`: %s", what, c ? c : "?",
		     e ? e : "unreadable");
		free(e);
		free(c);
		return -1;
	}
	if (!lang_ext_ok(t->lang, rel)) {
		note(r, -1, "%s `%s` is not a `%s` file", what, c ? c : "?",
		     t->lang);
		bad = 1;
	}
	if (kb_dc_directive(code, len, "leaderboard", val, sizeof(val)) != 0 &&
	    strcasecmp(val, lb->task->name) != 0) {
		char *v = clean(val);
		note(r, -1, "%s `%s` names leaderboard `%s`, not `%s`", what,
		     c ? c : "?", v ? v : "?", lb->task->name);
		free(v);
		bad = 1;
	}
	if (kb_dc_directive(code, len, "gpu", val, sizeof(val)) != 0 &&
	    !kb_gw_lb_gpu(lb, val)) {
		char *v = clean(val);
		note(r, -1, "%s `%s` names GPU `%s`, which `%s` does not offer",
		     what, c ? c : "?", v ? v : "?", lb->task->name);
		free(v);
		bad = 1;
	}
	free(code);
	free(c);
	return bad ? -1 : 0;
}

static int is_task_file(const struct kb_task *t, const char *name)
{
	for (size_t i = 0; i < t->nfiles; i++)
		if (strcmp(t->files[i].source, name) == 0)
			return 1;
	for (size_t i = 0; i < t->ntemplates; i++)
		if (strcmp(t->templates[i].value, name) == 0)
			return 1;
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Example submissions: submission_* in the task directory, and every
 * file of solutions/correct and solutions/wrong. Up to max names, sorted
 * (so that reports do not depend on directory order); caller frees. */
static size_t find_examples(const struct kb_task *t, char **out, size_t max)
{
	static const char *const dirs[] = {"", "solutions/correct",
					   "solutions/wrong"};
	size_t n = 0;

	for (size_t d = 0; d < KB_ARRAY_LEN(dirs); d++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s%s%s", t->dir,
			 *dirs[d] ? "/" : "", dirs[d]);
		DIR *dir = opendir(path);
		struct dirent *e;
		while (dir && (e = readdir(dir)) && n < max) {
			if (e->d_name[0] == '.' ||
			    (e->d_type != DT_REG && e->d_type != DT_UNKNOWN))
				continue;
			if (!*dirs[d] &&
			    (strncmp(e->d_name, "submission", 10) != 0 ||
			     is_task_file(t, e->d_name)))
				continue;
			char *rel = NULL;
			if (asprintf(&rel, "%s%s%s", dirs[d],
				     *dirs[d] ? "/" : "", e->d_name) < 0)
				break;
			out[n++] = rel;
		}
		if (dir)
			closedir(dir);
	}
	qsort(out, n, sizeof(*out), cmp_names);
	return n;
}

static void check_examples(const struct kb_task *t, const struct kb_gw_lb *lb,
			   struct report *r)
{
	char *ex[EXAMPLES_MAX];
	size_t n = find_examples(t, ex, EXAMPLES_MAX), pass = 0, fail = 0,
	       bad = 0;
	struct kb_buf names = {0};

	for (size_t i = 0; i < t->ntemplates; i++)
		bad += check_source(t, lb, t->templates[i].value, "template",
				    r) < 0;
	for (size_t i = 0; i < n; i++) {
		int wrong = strstr(ex[i], "wrong") != NULL;
		bad += check_source(t, lb, ex[i], "example", r) < 0;
		pass += !wrong;
		fail += wrong;
		char *c = clean(ex[i]);
		kb_buf_printf(&names, "%s`%s` (%s)", i ? ", " : "", c ? c : "?",
			      wrong ? "should fail" : "should pass");
		free(c);
		free(ex[i]);
	}
	if (t->ntemplates == 0)
		note(r, 0,
		     "no templates: `/leaderboard template` has nothing to offer");
	if (n == 0)
		note(r, 0,
		     "no example submissions (`submission_*` or `solutions/`)");
	else if (!pass || !fail)
		note(r, 0, "no example that should %s", pass ? "fail" : "pass");
	if (!bad && (n || t->ntemplates))
		note(r, 1,
		     "%zu template%s and %zu example%s name this board, its GPUs "
		     "and language%s%s",
		     t->ntemplates, t->ntemplates == 1 ? "" : "s", n,
		     n == 1 ? "" : "s", n ? ": " : "",
		     names.data ? names.data : "");
	kb_buf_free(&names);
}

static void job_verify(struct kb_dc *dc, const struct kb_dc_interaction *it,
		       int64_t received_ms)
{
	const struct kb_gw_lb *lb = kb_gw_lb_find(dc->g, kb__dc_opt_board(it));
	struct report r = {0};
	struct kb_task t = {0};
	struct kb_buf msg = {0};
	char err[1024];
	unsigned char now_fp[32], loaded_fp[32];

	(void)received_ms;
	if (!lb) {
		kb__dc_reply(dc, it,
			     "❌ That leaderboard was deleted meanwhile.", NULL,
			     0, 1);
		return;
	}
	if (reload(dc, lb, &t, err, sizeof(err)) < 0) {
		char *c = kb_dc_text_clean(err, strlen(err), 1500, 1);
		note(&r, -1,
		     "the task of `%s` cannot be read from disk:\n```\n%s\n```",
		     lb->task->name, c ? c : "?");
		free(c);
	} else {
		check_files(&t, &r);
		check_cases(&t, &r);
		check_examples(&t, lb, &r);
		if (kb__dc_task_fingerprint(&t, NULL, NULL, now_fp) == 0 &&
		    kb__dc_task_fingerprint(lb->task, lb->file_contents,
					    lb->file_lens, loaded_fp) == 0) {
			if (memcmp(now_fp, loaded_fp, sizeof(now_fp)) == 0)
				note(&r, 1,
				     "the files match what this gateway serves");
			else
				note(&r, 0,
				     "the files changed since this gateway loaded them: "
				     "a rolling restart applies them (`/admin "
				     "reload-problems` lists every change)");
		}
	}
	if (r.errors)
		kb_buf_printf(&msg, "❌ **`%s`**: %zu problem%s", lb->task->name,
			      r.errors, r.errors == 1 ? "" : "s");
	else
		kb_buf_printf(&msg, "✅ **`%s`** is consistent", lb->task->name);
	kb_buf_printf(&msg, "%s%zu warning%s.\n%s", r.errors ? ", " : "; ",
		      r.warnings, r.warnings == 1 ? "" : "s",
		      r.lines.data ? r.lines.data : "");
	kb__dc_reply(dc, it, msg.data ? msg.data : "⚠️ Out of memory.",
		     NULL, 0, 1);
	kb_info("discord: admin=%s verified board %s errors=%zu warnings=%zu",
		it->user_id, lb->task->name, r.errors, r.warnings);
	kb_buf_free(&msg);
	kb_buf_free(&r.lines);
	kb_task_clear(&t);
}

json_t *kb__dc_cmd_verify_task(struct kb_dc *dc,
			       const struct kb_dc_interaction *it,
			       kb_dc_job_fn *defer)
{
	char why[256];

	if (!kb__dc_board(dc, it, kb__dc_opt_board(it), why, sizeof(why)))
		return kb_dc_resp_message(why, 1);
	*defer = job_verify;
	return NULL;
}
