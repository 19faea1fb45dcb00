/* kb_seal: upstream Python problems run sealed, under our harness.
 *
 * An upstream KernelBot Python task (lang py, config main "eval.py", files
 * naming eval.py, reference.py and task.py) times the submission in its own
 * process, so a submission may patch the timer. When its eval.py is one of
 * the standard upstream versions whose behaviour our adapter reproduces
 * (problems/harness/python/kbh_upstream.py: case keys, seeds combined with
 * POPCORN_SEED, fresh inputs on every call, upstream's check), the loader
 * rewrites the task: eval.py is dropped, the harness's manifest
 * (<harness dir>/python.yml) is included, problem.py is the adapter,
 * kbh_upstream_rules.py the version's case rule and config main is
 * "kbh_eval.py". Any other eval.py runs as upstream does,
 * with the reason it is not sealed kept beside the task.
 *
 * The decision and the rewrite are pure (no I/O); the loader (kb_task.c)
 * reads eval.py and the settings and calls them.
 *
 * Settings (environment, read by the loader at each load):
 *   KB_SEAL_UPSTREAM  0 turns sealing off (to compare sealed and unsealed
 *                     runs); default 1.
 *   KB_HARNESS_DIR    the directory holding python.yml and python/;
 *                     default KB_DEFAULT_HARNESS_DIR (compiled in: the
 *                     source tree's problems/harness).
 * Thread-safety: every call is re-entrant.
 */
#ifndef KB_SEAL_H
#define KB_SEAL_H

#include <stddef.h>

#include "kb_task.h"

/* Index of t's eval.py entry when t is upstream-shaped (as above), else
 * -1. */
long kb_seal_eval_index(const struct kb_task *t);

/* A standard upstream eval.py version that runs sealed (kb_seal.c's
 * table, which says why each one is equivalent). Static; never freed. */
struct kb_seal_version {
	const char *sha256; /* of eval.py's bytes, lower-case hex */
	const char *name;   /* its upstream path @ the commit that made it */
	/* How it reads case lines: the adapter's rule file
	 * <harness dir>/python/kbh_upstream_rules_<rules>.py ("v1", "v2"). */
	const char *rules;
	unsigned flags; /* KB_SEAL_* */
};

/* Its leaderboard mode times the last case only (where our harness times
 * every case): sealed only where the score is the last case's anyway,
 * ranking_by "last". */
#define KB_SEAL_LAST_ONLY 1u

/* The known version whose content is eval[0..len), or NULL. */
const struct kb_seal_version *kb_seal_version(const char *eval, size_t len);

/* The known version whose sha256 is the lower-case hex sha256, or NULL. */
const struct kb_seal_version *kb_seal_version_hex(const char *sha256);

/* The name (upstream path) of the known eval.py version whose content is
 * eval[0..len), or NULL. */
const char *kb_seal_known(const char *eval, size_t len);

/* Decides whether t, with eval.py content eval[0..len), runs sealed.
 * Returns 1 (sealed) with *version (when version is not NULL) the known
 * version, or 0 with reason saying why not ("eval.py is not a standard
 * upstream version", "no reference.py", ...). Pure. */
int kb_seal_decide(const struct kb_task *t, const char *eval, size_t len,
		   const struct kb_seal_version **version, char *reason,
		   size_t reason_size);

/* Rewrites t (parsed, includes not yet expanded) to run sealed as version
 * v: its eval.py entry becomes {"include": <harness_dir>/python.yml}; a
 * problem.py entry with source <harness_dir>/python/kbh_upstream.py and a
 * kbh_upstream_rules.py entry with source
 * <harness_dir>/python/kbh_upstream_rules_<v->rules>.py are added; config
 * main becomes "kbh_eval.py", t->sealed = 1 and t->harness_dir =
 * harness_dir (copied: the loader reads the absolute sources beneath it
 * outside any root); t->upstream_eval keeps eval.py's source, for
 * whatever copies the problem's own files (the sync). Returns 0, -EINVAL
 * (t is not upstream-shaped, or already lists problem.py or
 * kbh_upstream_rules.py) or -ENOMEM, with errstr; t is unchanged on
 * error. */
int kb_seal_rewrite(struct kb_task *t, const struct kb_seal_version *v,
		    const char *harness_dir, char *errstr, size_t errstr_size);

/* Why t is "not sealed" on the surfaces that show a board (API, web,
 * Discord), or NULL when its timing is the trusted side's: a task written
 * for our harness (not upstream-shaped) or an upstream task sealed. For an
 * upstream-shaped task left as upstream runs it, t->seal_reason (the
 * reason kb_seal_decide gave, or that sealing is off). Pure; the string
 * belongs to t. */
const char *kb_seal_not_sealed(const struct kb_task *t);

/* What "not sealed" means, said after the reason wherever a board is
 * described. */
#define KB_SEAL_NOT_SEALED_MEANS                                               \
	"timing is measured by the submission's own process (the problem's "   \
	"own eval.py), so a submission can change its own score"

/* 1 when src is an absolute source beneath t->harness_dir (set by
 * kb_seal_rewrite only), with no ".." component. */
int kb_seal_is_harness_file(const struct kb_task *t, const char *src);

#endif
