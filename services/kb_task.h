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
 * KB_PROBLEMS is a colon-separated list of entries. A directory holding a
 * task.yml is one leaderboard named after the directory. A directory without
 * one is scanned one level deep for problem directories. A file <set>.yaml
 * is a competition: a list of {directory, name, deadline, gpus}, directory
 * relative to the file (a top-level "problems:" key holding the list is
 * accepted too).
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

struct kb_kv {
	char *key;
	char *value;
};

struct kb_task_file {
	char *name;   /* name in the work directory */
	char *source; /* path relative to the task directory, or "@SUBMISSION@" */
};

struct kb_task {
	char *name;        /* leaderboard name */
	char *dir;         /* the problem directory */
	char *lang;        /* c, cu, hip, py */
	char *description;
	struct kb_task_file *files;
	size_t nfiles;
	struct kb_kv *config;
	size_t nconfig;
	struct kb_kv *templates; /* language name -> file name */
	size_t ntemplates;
	char **tests;      /* case lines */
	size_t ntests;
	char **benchmarks;
	size_t nbenchmarks;
	unsigned test_timeout, benchmark_timeout, ranked_timeout;
	char *ranking_by;  /* "last", "mean" or "geom" */
	int has_seed;
	uint64_t seed;
	int multi_gpu;
	char **gpus;       /* from task.yml or the competition file */
	size_t ngpus;
	char *deadline;    /* ISO 8601 from the competition file, or NULL */
};

/* Parses task.yml text into *out (zeroed first). Returns 0, or -EINVAL with
 * errstr saying what and where (line number). */
int kb_task_parse(const char *yaml, size_t len, struct kb_task *out,
		  char *errstr, size_t errstr_size);

/* Reads <dir>/task.yml, parses it and sets dir and name. Also checks that
 * every non-submission file source exists. Returns 0 or negative. */
int kb_task_load_dir(const char *dir, const char *name, struct kb_task *out,
		     char *errstr, size_t errstr_size);

/* Value of config key, or NULL. */
const char *kb_task_config(const struct kb_task *t, const char *key);

/* 1 if the task lists this gpu (case-sensitive). */
int kb_task_has_gpu(const struct kb_task *t, const char *gpu);

void kb_task_clear(struct kb_task *t);

struct kb_problemset {
	struct kb_task *tasks;
	size_t n;
};

/* Loads every entry of a KB_PROBLEMS list. Duplicate leaderboard names are
 * an error. Returns 0 or negative with errstr set. */
int kb_problemset_load(const char *spec, struct kb_problemset *out,
		       char *errstr, size_t errstr_size);

const struct kb_task *kb_problemset_find(const struct kb_problemset *ps,
					 const char *name);

void kb_problemset_clear(struct kb_problemset *ps);

#endif
