/* gw_login: a CLI login against a test gateway, step by step, as kb (or
 * popcorn-cli) and a browser do it, so that tests can run each step in
 * the right or the wrong hands.
 *
 * gw_login_begin() is the CLI's GET /auth/init (with the CLI's current id
 * when old_cli is not NULL) and then the browser opening the URL the CLI
 * prints (the server's authorize_url with the CLI's state appended): the
 * start page, whose cookie and provider link it keeps. A server that
 * sends no authorize_url leaves the state the CLI made and no cookie.
 * gw_login_finish() is the provider sending a browser back with a code:
 * the browser holding cookie ("name=value", or NULL for one that never
 * opened the start page).
 */
#ifndef GW_LOGIN_H
#define GW_LOGIN_H

#include <stddef.h>

#include "gw_env.h"

struct gw_login {
	char cli_id[64];
	char state[600];  /* what the provider will send back */
	char cookie[200]; /* "name=value", "" when none */
};

void gw_login_begin(struct gw_env *e, const char *provider, const char *old_cli,
		    int reset, struct gw_login *l);
struct gw_resp gw_login_finish(struct gw_env *e, const char *provider,
			       const char *code, const char *state,
			       const char *cookie);

/* The state popcorn-cli makes: base64url of {"cli_id","is_reset"}. */
void gw_login_state(const char *cli_id, int reset, char *out, size_t size);

#endif
