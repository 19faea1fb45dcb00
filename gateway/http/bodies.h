/* kb_gw_bodies: the JSON bodies the API accepts, parsed and validated as
 * pure functions (so that they are unit-tested and fuzzed without a
 * server), and the OAuth "state" parameter.
 *
 * Every parser takes the raw body bytes (need not be NUL-terminated) and
 * returns 0 with *out filled, or the HTTP status to refuse with (400, or
 * 404 where a path-like value names nothing) with *why a static English
 * reason. Bodies must be JSON objects without duplicate keys; fields this
 * API does not know are ignored (older clients send extra ones).
 * Pure and thread-safe.
 */
#ifndef KB_GW_BODIES_H
#define KB_GW_BODIES_H

#include <stddef.h>

#define KB_GW_INVITE_LBS_MAX 16

/* POST /admin/users: {"name": "..."} */
struct kb_gw_body_user {
	char name[65];
};
int kb_gw_body_user(const char *buf, size_t len, struct kb_gw_body_user *out,
		    const char **why);

/* POST /user/join: {"code": "..."} */
struct kb_gw_body_join {
	char code[65];
};
int kb_gw_body_join(const char *buf, size_t len, struct kb_gw_body_join *out,
		    const char **why);

/* POST /admin/invites: {"leaderboards": [...], "count": n} or
 * {"leaderboard": "x", "count": n}; count 1..10000. */
struct kb_gw_body_invites {
	char lbs[KB_GW_INVITE_LBS_MAX][65];
	size_t n;
	long count;
};
int kb_gw_body_invites(const char *buf, size_t len,
		       struct kb_gw_body_invites *out, const char **why);

/* PUT /admin/leaderboards/{lb}/rate-limits:
 * {"mode_category": "test"|"leaderboard", "max_submissions_per_hour": n} */
struct kb_gw_body_rate {
	char category[16];
	long max;
};
int kb_gw_body_rate(const char *buf, size_t len, struct kb_gw_body_rate *out,
		    const char **why);

/* POST /admin/leaderboards/{lb}/visibility: {"visibility": "public"|"closed"} */
int kb_gw_body_visibility(const char *buf, size_t len, int *closed,
			  const char **why);

/* POST /admin/leaderboards: {"directory": "x", "visibility"?: ...} */
struct kb_gw_body_lb_create {
	char directory[65];
	int closed;
};
int kb_gw_body_lb_create(const char *buf, size_t len,
			 struct kb_gw_body_lb_create *out, const char **why);

/* POST /admin/export: {"leaderboards"?: [names], "private"?: bool}.
 * leaderboards absent or null: every board (n 0); a list must name 1 to
 * KB_GW_EXPORT_LBS_MAX boards, each once. private (default false): the
 * export may include active boards (upstream's private export). */
#define KB_GW_EXPORT_LBS_MAX 64
struct kb_gw_body_export {
	char lbs[KB_GW_EXPORT_LBS_MAX][65];
	size_t n;
	int private_export;
};
int kb_gw_body_export(const char *buf, size_t len,
		      struct kb_gw_body_export *out, const char **why);

/* The OAuth "state": base64url (padding optional) of {"cli_id": "...",
 * "is_reset": bool} as popcorn-cli and kb build it, to which the
 * gateway's start page adds "nonce" (KB_GW_NONCE_HEX hex digits, the value
 * of the browser's login cookie) before the state goes to the provider. */
#define KB_GW_NONCE_HEX 64
struct kb_gw_oauth_state {
	char cli_id[129];
	int reset;
	char nonce[KB_GW_NONCE_HEX + 1]; /* "" when the state has none */
};
int kb_gw_oauth_state_parse(const char *state, struct kb_gw_oauth_state *out,
			    const char **why);
/* Writes st as a state (unpadded base64url) into out. Returns 0, or
 * -E2BIG when out is too small (out_size 1024 always suffices). */
int kb_gw_oauth_state_encode(const struct kb_gw_oauth_state *st, char *out,
			     size_t out_size);

#endif
