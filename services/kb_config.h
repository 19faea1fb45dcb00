/* kb_config: one declarative configuration table per service.
 *
 * Each entry names a setting, the environment variable it comes from, its
 * type, bounds and default. kb_config_load() parses every entry strictly:
 * a malformed or out-of-range value is an error naming the variable, and the
 * service stops at startup. kb_config_log() prints the effective values once,
 * with secrets masked.
 *
 * Thread-safety: call from main() before starting threads.
 */
#ifndef KB_CONFIG_H
#define KB_CONFIG_H

#include <stddef.h>

enum kb_cfg_type {
	KB_CFG_STRING, /* dst is char **, malloc'd; free with kb_config_free() */
	KB_CFG_INT,    /* dst is long *, checked against [min, max] */
	KB_CFG_BOOL,   /* dst is int *; accepts 0/1/true/false/yes/no/on/off */
};

struct kb_cfg_entry {
	const char *env; /* environment variable, e.g. "KB_HTTP_PORT" */
	enum kb_cfg_type type;
	const char *def; /* default as text; NULL means required */
	long min, max;   /* bounds for KB_CFG_INT */
	int secret;      /* mask the value in kb_config_log() */
	void *dst;
	const char *help; /* one line, shown in errors and --help */
};

/* Looks a variable up; returns NULL when unset. kb_config_load() uses
 * getenv(); tests pass their own. */
typedef const char *(*kb_cfg_getenv_fn)(const char *name, void *ctx);

/* Fills every entry's dst. Returns 0, or -EINVAL with errstr naming the
 * first bad variable; on error nothing needs freeing beyond
 * kb_config_free(). */
int kb_config_load(const struct kb_cfg_entry *table, size_t n, char *errstr,
		   size_t errstr_size);
int kb_config_load_from(const struct kb_cfg_entry *table, size_t n,
			kb_cfg_getenv_fn get, void *ctx, char *errstr,
			size_t errstr_size);

/* Logs "config KB_X=value" once per entry at info level, secrets as "***". */
void kb_config_log(const struct kb_cfg_entry *table, size_t n);

/* Frees the strings kb_config_load() allocated and sets them to NULL. */
void kb_config_free(const struct kb_cfg_entry *table, size_t n);

#define KB_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif
