/* kb_rules: the gateway's input rules as pure functions, so that every
 * accept/refuse decision is unit-tested without a server.
 *
 * Status-returning functions answer 0 (accepted) or the HTTP status to
 * refuse with, and set *why to a static English reason.
 * Pure and thread-safe.
 */
#ifndef KB_RULES_H
#define KB_RULES_H

#include <stddef.h>
#include <stdint.h>

#include "kb_mode.h"

/* The uploaded file: 400 when empty, containing NUL bytes or not UTF-8,
 * 413 when over max bytes. */
int kb_rules_code(const char *code, size_t len, size_t max, const char **why);

/* Content-Length of a body whose limit is cap: 0 when absent or within,
 * 413 when larger, 400 when not a decimal number. */
int kb_rules_content_length(const char *value, uint64_t cap, const char **why);

/* ?limit and ?offset of a list (NULL when absent): limit defaults to
 * def_limit and is capped at max_limit; 400 for a non-number, a zero
 * limit, or an offset above 10^9. */
int kb_rules_page(const char *limit_s, const char *offset_s, long def_limit,
		  long max_limit, long *limit, long *offset, const char **why);

/* X-Popcorn-Cli-Id: 1..128 printable ASCII characters without spaces. */
int kb_rules_cli_id_ok(const char *s);

/* A display name: 1..64 bytes of UTF-8 without control characters and
 * not only spaces. */
int kb_rules_user_name_ok(const char *s);

/* Admin authorization. token NULL or "" means the admin API is off (403).
 * header must be "Bearer <token>" (scheme case-insensitive); missing or
 * different is 401. The comparison is constant-time in the token. */
int kb_rules_admin(const char *authorization, const char *token,
		   const char **why);

/* The name a submission's file is stored under: the last path component of
 * the client's filename, control characters dropped, cut to at most 255
 * bytes at a UTF-8 boundary; "submission" when nothing usable is left.
 * in must be valid UTF-8 or NULL. */
void kb_rules_file_name(const char *in, char *out, size_t size);

/* Copies buf, replacing each invalid UTF-8 sequence with U+FFFD, so that
 * program output and echoed client text can go into JSON. Returns a
 * malloc'd NUL-terminated string (embedded NULs kept; *out_len gets the
 * length) or NULL when out of memory. */
char *kb_gw_utf8_sanitize(const char *buf, size_t len, size_t *out_len);

/* The rate-limit category of a mode: "leaderboard" for ranked
 * submissions, "test" for test, benchmark and profile (as upstream). */
const char *kb_rules_category(enum kb_mode m);

/* A rate-limit category name: "test" or "leaderboard". */
int kb_rules_category_ok(const char *s);

/* An OAuth provider we support: "discord" or "github". */
int kb_rules_provider_ok(const char *s);

/* A name for keys and ids: 1..max bytes of [A-Za-z0-9_.-], not starting
 * with '.' or '-' (leaderboard names, invite codes, directories, user ids
 * that become parts of Redis keys). */
int kb_rules_name_ok(const char *s, size_t max);

/* A user id as stored: 1..95 bytes of [A-Za-z0-9_.-] (never ':'). */
int kb_rules_user_id_ok(const char *s);

/* Query booleans as upstream takes them: "true"/"1"/"yes"/"on" is 1,
 * "false"/"0"/"no"/"off" is 0 (case-insensitive), NULL is def; anything
 * else is -1. */
int kb_rules_bool(const char *s, int def);

#endif
