/* kb_lang: the languages a task.yml's `lang:` may name, and what every
 * service needs to know of each (the gateway's task checks and Discord
 * templates, the worker's builds, runs, profiles and selftest). This is
 * the one list of them; the worker's builders (worker/compile/builders.c)
 * are a table indexed by enum kb_lang_id, not a second list of names.
 *
 * Pure and thread-safe; the table and its strings are static.
 */
#ifndef KB_LANG_H
#define KB_LANG_H

#include <stddef.h>

/* The languages, in the order of the table (and of kb_lang_list()). */
enum kb_lang_id {
	KB_LANG_C,
	KB_LANG_CU,
	KB_LANG_HIP,
	KB_LANG_PY,
	KB_LANG_COUNT
};

/* Device families, as a bit mask. */
enum kb_lang_family {
	KB_LANG_CPU = 1u << 0,
	KB_LANG_NVIDIA = 1u << 1,
	KB_LANG_AMD = 1u << 2,
};

struct kb_lang {
	enum kb_lang_id id;
	const char *name;    /* as task.yml's lang: "cu" */
	const char *display; /* for people: "CUDA" */
	/* The extensions a submission, example or template file of the
	 * language may have, NULL-terminated: {".hip", ".cpp", NULL}. */
	const char *const *exts;
	/* The line comment that carries #!POPCORN directives: "//" or "#". */
	const char *comment;
	unsigned families; /* enum kb_lang_family: the devices it runs on */
	/* The family whose toolchain builds it (nvcc for KB_LANG_NVIDIA,
	 * hipcc for KB_LANG_AMD); 0: the host's compiler or interpreter,
	 * which every worker has. */
	unsigned toolchain;
	/* 1: runs under the worker's Python interpreter (config "main"
	 * names the harness; the profile is torch's). */
	int python;
	/* 1: a profile run on a GPU goes through Nsight Compute. */
	int ncu;
	/* The task.yml config keys it takes, NULL-terminated, and the one
	 * it requires. */
	const char *const *config_keys;
	const char *config_required;
};

/* The language named name (exact, case-sensitive, as task.yml spells
 * it), or NULL for an unknown name or NULL. */
const struct kb_lang *kb_lang_find(const char *name);

/* The language id, or NULL when id is out of range. */
const struct kb_lang *kb_lang_get(int id);

/* 1 when file ends in one of l's extensions (and is longer than it),
 * else 0. */
int kb_lang_has_ext(const struct kb_lang *l, const char *file);

/* Writes the names of the languages as a phrase, "c, cu, hip or py",
 * into buf (truncated to size, always terminated when size > 0).
 * Returns buf. */
char *kb_lang_list(char *buf, size_t size);

#endif
