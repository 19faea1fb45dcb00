/* kb_cfg: the user's ~/.popcorn.yaml, shared with popcorn-cli.
 *
 * The file is a YAML mapping. popcorn-cli reads and writes one key,
 * cli_id (the token sent as X-Popcorn-Cli-Id). kb reads cli_id and, as an
 * extension popcorn-cli ignores, api_url (the API base when neither
 * --api-url nor POPCORN_API_URL is given). Other keys belong to someone
 * else and are kept when kb writes the file.
 *
 * kb_cfg_parse() and kb_cfg_update() are pure; kb_cfg_load() and
 * kb_cfg_store() do the file I/O. All are thread-safe (no shared state).
 */
#ifndef KB_CFG_H
#define KB_CFG_H

#include <stddef.h>

#include "kb_util.h"

struct kb_cfg {
	char *cli_id;  /* NULL when absent */
	char *api_url; /* NULL when absent */
};

/* "$HOME/.popcorn.yaml" (HOME from the environment, else the password
 * database) into out. Returns 0 or -ENAMETOOLONG/-ENOENT with errstr. */
int kb_cfg_default_path(char *out, size_t out_size, char *errstr,
			size_t errstr_size);

/* Reads the top-level scalar keys cli_id and api_url of a YAML document.
 * Empty input, a comment-only file or an empty document give an empty
 * config. Values of other keys may be anything; a nested value under
 * cli_id or api_url is ignored. Returns 0, or -EINVAL (not YAML, or the
 * top level is not a mapping) / -ENOMEM with errstr. Free with
 * kb_cfg_clear(). */
int kb_cfg_parse(const char *buf, size_t len, struct kb_cfg *out, char *errstr,
		 size_t errstr_size);

/* kb_cfg_parse() of the file at path. A missing file is -ENOENT (with an
 * empty *out); other read errors are -errno. */
int kb_cfg_load(const char *path, struct kb_cfg *out, char *errstr,
		size_t errstr_size);

/* Frees the strings and leaves an empty config; NULL is a no-op. */
void kb_cfg_clear(struct kb_cfg *c);

/* Rewrites the YAML document in[0..len) with the top-level key set to
 * value (a double-quoted string, so that an id made of digits stays a
 * string for popcorn-cli), replacing an existing value of any kind or
 * adding the key at the end. Every other key and value is kept in order;
 * comments are not (libyaml does not report them). Empty input gives a
 * one-key document. Appends to *out (a kb_buf the caller frees). Returns
 * 0, or -EINVAL (input not YAML, top level not a mapping) / -ENOMEM with
 * errstr. */
int kb_cfg_update(const char *in, size_t len, const char *key,
		  const char *value, struct kb_buf *out, char *errstr,
		  size_t errstr_size);

/* Sets key to value in the file at path (created if missing), by
 * kb_cfg_update() of its current content, written to a temporary file in
 * the same directory with mode 0600, fsync'ed and renamed over the file, so
 * a reader sees the old or the new file, never a part. A symbolic link at
 * path is followed (its target is replaced, the link kept). Returns 0 or a
 * negative errno with errstr. */
int kb_cfg_store(const char *path, const char *key, const char *value,
		 char *errstr, size_t errstr_size);

#endif
