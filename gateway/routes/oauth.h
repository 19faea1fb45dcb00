/* kb_gw_oauth: the OAuth2 code exchange of CLI registration, as upstream
 * KernelBot does it (/auth/cli/{provider}), on libcurl.
 *
 * Discord: POST <discord_base>/api/oauth2/token (form: client_id,
 * client_secret, grant_type=authorization_code, code, redirect_uri), then
 * GET <discord_base>/api/users/@me with the bearer token: "id", "username".
 * GitHub: POST <github_base>/login/oauth/access_token (same form without
 * grant_type, Accept: application/json), then GET <github_api_base>/user:
 * "id" (a number), "login".
 * The bases come from the configuration, so tests point them at a fake
 * provider on loopback. Only http and https are spoken, redirects are not
 * followed, answers are capped at 64 KiB, and the whole exchange is
 * bounded by cfg->oauth_timeout_ms per request. Codes, tokens and the
 * client secret are never logged.
 *
 * Thread-safe (one curl easy handle per call); curl_global_init() must
 * have run (main()).
 */
#ifndef KB_GW_OAUTH_H
#define KB_GW_OAUTH_H

#include <stddef.h>

#include "base/gateway.h"

struct kb_gw_oauth_user {
	char id[65];   /* the provider's user id, [0-9A-Za-z_-] */
	char name[65]; /* username / login */
};

/* 1 when the provider has a client id and secret configured. */
int kb_gw_oauth_configured(const struct kb_gw_config *cfg,
			   const char *provider);

/* Exchanges code for the user's identity. Returns 0, or a negative code
 * with *status (401 provider refused or unreachable, 502 malformed
 * answer, 503 not configured) and why set. */
int kb_gw_oauth_exchange(const struct kb_gw_config *cfg, const char *provider,
			 const char *code, const char *redirect_uri,
			 struct kb_gw_oauth_user *out, int *status, char *why,
			 size_t why_size);

#endif
