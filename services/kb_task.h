/* kb_task: problems in the upstream KernelBot task.yml format, and the
 * problem set a deployment hosts (KB_PROBLEMS).
 *
 * task.yml keys: files (list of {name, source}; source "@SUBMISSION@" marks
 * the user's file), lang, description, config (map; list values are joined
 * with '\n'), templates (map), tests and benchmarks (lists of maps, each
 * turned into a case line "k: v; k: v" in the map's order), test_timeout,
 * benchmark_timeout, ranked_timeout (seconds; defaults 180), ranking_by
 * (last|mean|geom; default last), seed, multi_gpu, gpus. Unknown top-level
 * keys are an error (a typo must not silently change a competition).
 *
 * Our own extension: a files entry {"include": PATH} names a manifest, a
 * YAML map whose one key, files, lists {name, source} entries with sources
 * relative to the manifest's directory (no "@SUBMISSION@", no includes);
 * loading the task (kb_task_load_dir, _confined: confined like every other
 * file) puts those entries in its place, their sources made relative to
 * the task directory. So the problems of one harness list its files once
 * (problems/harness/<name>/files.yml).
 *
 * Loading (kb_task_load_dir, _confined) also seals an upstream Python task
 * whose eval.py is a known standard version (kb_seal.h): its eval.py is
 * replaced by the harness of KB_HARNESS_DIR, whose files keep absolute
 * sources that kb_task_read() reads as named (they are the operator's).
 *
 * The details, where upstream's Python loader leaves room:
 *  - Required: files (exactly one "@SUBMISSION@" entry; names are plain
 *    file names, unique; sources relative paths), lang (c, cu, hip, py) and
 *    config. A plain null value (empty, ~, null) for an optional key means
 *    its default; description defaults to "".
 *  - config keys: for py only "main" (required); for c/cu/hip "sources"
 *    (required), "include_dirs", "defines", "compile_flags", "flags",
 *    "libraries" and our own "loader" ("child": the harness loads the
 *    submission, built alone as a shared object, in its confined child;
 *    worker/compile/build.h). Scalars are kept as written, lists are joined with '\n',
 *    a map (upstream's "defines") becomes "K=V" lines; null is "". Upstream's
 *    top-level "libraries" list is accepted and stored as config
 *    "libraries". Upstream's "validation" is refused (not supported).
 *  - Case values must be scalars; they are kept as written, except plain
 *    YAML 1.1 booleans, which print as Python does ("True"/"False"), as
 *    upstream harnesses see them. Each line must read back through
 *    kb_case_parse() unchanged, and a "seed" must be an unsigned 64-bit
 *    decimal. With multi_gpu, every case needs world_size.
 *  - Integers (timeouts, seed) must be plain decimal, not quoted; timeouts
 *    are 1..86400.
 *  - Duplicate keys in any map are an error.
 *  - gpus and leaderboard names are [A-Za-z0-9_.-]+, at most 64 bytes, not
 *    starting with '.' or '-' (they end up in URLs, Redis keys and Kafka
 *    topic names).
 *
 * KB_PROBLEMS is a colon-separated list of entries (empty entries are
 * skipped). A directory holding a task.yml is one leaderboard named after
 * the directory. A directory without one is scanned one level deep for
 * problem directories (hidden entries and directories without task.yml
 * skipped; finding none is an error). A regular file <set>.yaml is a
 * competition: a list of {directory, name, deadline, gpus}, directory
 * relative to the file (a top-level "problems:" key holding the list is
 * accepted too, beside upstream's name, description and deadline). In an
 * entry, name defaults to the directory's basename; gpus, when given,
 * replace the task's; deadline (ISO 8601 date, optionally with a time and
 * zone; "" means none) defaults to the competition's top-level deadline.
 *
 * Ownership: every string in these structs is malloc'd and owned by the
 * struct; kb_task_clear()/kb_problemset_clear() free them.
 * Thread-safety: the parsers are pure and re-entrant; a loaded problem set
 * is read-only and may be shared between threads.
 */
#ifndef KB_TASK_H
#define KB_TASK_H

#include <stddef.h>
#include <stdint.h>

#include "kb_kv.h"

struct kb_task_file {
	char *name;   /* name in the work directory; NULL for an include */
	char *source; /* path relative to the task directory, or "@SUBMISSION@" */
	int include; /* {"include": source}: a manifest (kb_task_parse only;
		       * loading a task replaces it by its entries) */
};

struct kb_task {
	char *name; /* leaderboard name */
	char *dir;  /* the problem directory */
	/* NULL for the operator's own sets; for a problem source that is
	 * untrusted input (a synced archive, a board under KB_PROBLEMS_DEV)
	 * the directory every path of the task stays inside: dir is in it,
	 * and kb_task_read() opens files only beneath it, through no link. */
	char *root;
	char *lang; /* c, cu, hip, py */
	char *description;
	struct kb_task_file *files;
	size_t nfiles;
	struct kb_kv *config;
	size_t nconfig;
	struct kb_kv *templates; /* language name -> file name */
	size_t ntemplates;
	char **tests; /* case lines */
	size_t ntests;
	char **benchmarks;
	size_t nbenchmarks;
	unsigned test_timeout, benchmark_timeout, ranked_timeout;
	char *ranking_by; /* "last", "mean" or "geom" */
	int has_seed;
	uint64_t seed;
	int multi_gpu;
	char **gpus; /* from task.yml or the competition file */
	size_t ngpus;
	char *deadline; /* ISO 8601 from the competition file, or NULL */
	/* An upstream Python task rewritten to run under our harness
	 * (kb_seal.h): sealed is 1 and harness_dir the directory its
	 * absolute harness sources lie beneath (read as named, outside
	 * root). For an upstream-shaped task left as upstream runs it,
	 * sealed is 0 and seal_reason says why; NULL for other tasks. */
	int sealed;
	char *harness_dir;
	char *upstream_eval; /* sealed: the source of the eval.py it dropped
			      * (a copy of the problem keeps it) */
	char *seal_reason;
};

/* Parses task.yml text yaml[0..len) (need not be NUL-terminated) into *out
 * (zeroed first; name and dir stay NULL). Returns 0, or -EINVAL (-ENOMEM)
 * with errstr saying what and where ("line N: ...") and *out zeroed. */
int kb_task_parse(const char *yaml, size_t len, struct kb_task *out,
		  char *errstr, size_t errstr_size);

/* Reads <dir>/task.yml, parses it and sets dir (as given) and name (name,
 * or dir's basename when NULL; must be a valid leaderboard name). Also
 * checks that every non-submission file source and every template is a
 * regular file. Returns 0 or negative (-ENOENT, -EINVAL, ...) with errstr
 * naming the file; *out is zeroed on error. */
int kb_task_load_dir(const char *dir, const char *name, struct kb_task *out,
		     char *errstr, size_t errstr_size);

/* As kb_task_load_dir, for a problem source that is untrusted input:
 * the task directory is root/rel, and rel and every file source and
 * template must resolve inside root (lexically: no absolute path, no ".."
 * above root; on disk: no symbolic link anywhere below root, regular
 * files only). A source may climb out of its own directory while it stays
 * in root, as upstream's shared "../eval.py" does. Sets out->root. Errors
 * as kb_task_load_dir's, naming the path that leaves root (-EXDEV) or
 * passes through a link (-ELOOP). */
int kb_task_load_confined(const char *root, const char *rel, const char *name,
			  struct kb_task *out, char *errstr,
			  size_t errstr_size);

/* Reads file rel of task t (a source or a template, relative to t->dir),
 * at most max bytes, into *out (NUL-terminated; caller frees) and *len.
 * With t->root set, the file must resolve inside it as
 * kb_task_load_confined() requires; without, it is read as named (the
 * operator's own sets). Returns 0 or negative with errstr naming the
 * file and why. Thread-safe. */
int kb_task_read(const struct kb_task *t, const char *rel, size_t max,
		 char **out, size_t *len, char *errstr, size_t errstr_size);

/* t->dir relative to t->root ("" when they are the same), or NULL when
 * t has no root. */
const char *kb_task_rel_dir(const struct kb_task *t);

/* Value of config key, or NULL. */
const char *kb_task_config(const struct kb_task *t, const char *key);

/* 1 if the task lists this gpu (case-sensitive). */
int kb_task_has_gpu(const struct kb_task *t, const char *gpu);

/* Frees everything and zeroes *t; NULL is a no-op, twice is fine. */
void kb_task_clear(struct kb_task *t);

struct kb_problemset {
	struct kb_task *tasks;
	size_t n;
};

/* Loads every entry of a KB_PROBLEMS list. Duplicate leaderboard names are
 * an error, and so is a set with no problem. The tasks come sorted by name
 * (strcmp), so the result does not depend on directory order. Returns 0 or
 * negative with errstr set and *out empty. */
int kb_problemset_load(const char *spec, struct kb_problemset *out,
		       char *errstr, size_t errstr_size);

/* Loads one competition file, root/setrel, of an untrusted problem
 * source: its entries' directories and their tasks are loaded with
 * kb_task_load_confined() and must stay inside root (an absolute
 * directory or one climbing out of root is an error naming it). Tasks
 * come sorted as kb_problemset_load's. Returns 0 or negative with errstr
 * set and *out empty. */
int kb_problemset_load_confined(const char *root, const char *setrel,
				struct kb_problemset *out, char *errstr,
				size_t errstr_size);

/* The task named name, or NULL (binary search: ps must come from
 * kb_problemset_load). */
const struct kb_task *kb_problemset_find(const struct kb_problemset *ps,
					 const char *name);

void kb_problemset_clear(struct kb_problemset *ps);

#endif
