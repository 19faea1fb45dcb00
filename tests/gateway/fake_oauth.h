/* fake_oauth: a fake OAuth provider (Discord's and GitHub's token and user
 * endpoints) on loopback, for the gateway's login tests.
 *
 * Discord: POST /api/oauth2/token (client disc-id / disc-secret-XYZ,
 * redirect_uri http://api.test/auth/cli/discord) turns code "good-code" or
 * "good-code-2" into the user 80351110224678912 "nelly" and
 * "mallory-code" into the user 666000 "mallory"; GET /api/users/@me.
 * GitHub: POST /login/oauth/access_token (gh-id / gh-secret-XYZ) turns
 * "gh-code" into 583231 "octocat"; GET /user. Anything else is refused.
 *
 * The server binds port 0 and reports the port it got, so two tests never
 * race for one. Every call is thread-safe; the server runs a thread per
 * connection, so a held token request does not stop the others.
 */
#ifndef FAKE_OAUTH_H
#define FAKE_OAUTH_H

#define FAKE_OAUTH_NELLY "discord-80351110224678912"
#define FAKE_OAUTH_MALLORY "discord-666000"

struct fake_oauth;

/* Starts the server (asserts it started). */
struct fake_oauth *fake_oauth_start(void);
/* Its port on 127.0.0.1. */
int fake_oauth_port(const struct fake_oauth *f);
/* Requests its token endpoints have received so far. */
long fake_oauth_token_calls(struct fake_oauth *f);
/* While held, token requests wait (until released or 30 s passed). */
void fake_oauth_hold(struct fake_oauth *f, int held);
/* The gateway's KB_OAUTH_* settings for this server, NULL-terminated
 * (valid until fake_oauth_stop). */
const char *const *fake_oauth_env(struct fake_oauth *f);
void fake_oauth_stop(struct fake_oauth *f);

#endif
