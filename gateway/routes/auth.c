/* CLI registration (upstream's /auth/init and /auth/cli/{provider}), bound
 * to the browser that signs in.
 *
 * 1. GET /auth/init?provider=P, by the CLI: a fresh CLI id (the "state")
 *    is recorded as a pending login for KB_AUTH_STATE_TTL_S
 *    (kb:clipending:<id>). When the request carries X-Popcorn-Cli-Id, the
 *    account that id belongs to is recorded too: the only account a reset
 *    may move to the new id. The answer's authorize_url is our start page.
 * 2. GET /auth/start/P?state=S, in the browser (the URL the CLI printed:
 *    authorize_url plus the CLI's state): a page saying what signing in
 *    will do, which gives the browser a cookie with a fresh nonce (one per
 *    login, HttpOnly, SameSite=Lax, for /auth/ only) and links to the
 *    provider with S plus the nonce as the state. Only the browser that
 *    opened the page holds the nonce, the page cannot be framed, and a
 *    provider link made without it is refused: a login started by one
 *    person cannot be finished by another's click at the provider.
 * 3. GET /auth/cli/P?code&state, in the browser, sent back by the
 *    provider: the state's nonce must be the cookie's and the login's
 *    (login.lua, which uses the login up) before the provider is asked
 *    anything; then the code is exchanged for the identity (oauth.c, on
 *    the logins' own pool) and the CLI id linked (link.lua): to a new
 *    account, to an account without a CLI id, or, with is_reset, to the
 *    account the CLI proved in step 1.
 *
 * Without a provider configured, every /auth route answers 404 and writes
 * nothing. Every /auth request counts against its client address's
 * KB_AUTH_RATE_PER_MIN.
 */
#include <errno.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "base/limiter.h"
#include "http/bodies.h"
#include "kb_log.h"
#include "kb_util.h"
#include "oauth.h"
#include "routes.h"

#define COOKIE_PREFIX "kb_login_"

static const char *provider_title(const char *provider)
{
	return strcmp(provider, "github") == 0 ? "GitHub" : "Discord";
}

/* The checks every /auth request passes first: a provider is configured
 * (404 otherwise, as if the routes did not exist), the client address is
 * within its rate, the provider asked for is known (400) and configured
 * (503). Returns 0 or replies and returns -1. */
static int auth_gate(struct kb_gw_req *r, const char *provider)
{
	const struct kb_gw_config *cfg = &r->g->cfg;
	char addr[64];
	int64_t wait;

	if (!kb_gw_oauth_configured(cfg, "discord") &&
	    !kb_gw_oauth_configured(cfg, "github")) {
		kb_gw_reply_error(r, 404, "Not Found");
		return -1;
	}
	kb_gw_client_addr(r, addr, sizeof(addr));
	wait = kb_gw_limiter_hit(r->g->auth_limits, addr,
				 cfg->auth_rate_per_min, 60000, kb_now_ms());
	if (wait < 0) {
		kb_gw_reply_error_retry(r, 503, 60,
					"too many logins in progress, retry "
					"later");
		return -1;
	}
	if (wait > 0) {
		kb_gw_reply_error_retry(
			r, 429, (long)((wait + 999) / 1000),
			"too many login requests from your address (at most "
			"%ld a minute), retry later",
			cfg->auth_rate_per_min);
		return -1;
	}
	if (!kb_rules_provider_ok(provider)) {
		kb_gw_reply_error(
			r, 400,
			"Invalid provider, must be 'discord' or 'github'");
		return -1;
	}
	if (!kb_gw_oauth_configured(cfg, provider)) {
		kb_gw_reply_error(
			r, 503,
			"login with %s is not configured on this server",
			provider_title(provider));
		return -1;
	}
	return 0;
}

/* The name of the login's cookie: one per CLI id, so that two logins in
 * one browser do not replace each other's nonce. */
static void cookie_name(const char *cli_id,
			char out[sizeof(COOKIE_PREFIX) + 16])
{
	char sha[65];

	kb_sha256_hex(cli_id, strlen(cli_id), sha);
	snprintf(out, sizeof(COOKIE_PREFIX) + 16, COOKIE_PREFIX "%.16s", sha);
}

static void init_begin(struct kb_gw_req *r)
{
	const char *provider = kb_gw_query(r, "provider");
	char hex[33], uuid[40], start[400];
	int rc;

	if (auth_gate(r, provider) < 0)
		return;
	/* The CLI's current id proves the account a reset may move. */
	if (kb_gw_authenticate_optional(r) < 0)
		return;
	/* A random (version 4) UUID, as upstream's. */
	kb_random_hex(hex, 16);
	hex[12] = '4';
	hex[16] = "89ab"[hex[16] % 4];
	snprintf(uuid, sizeof(uuid), "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8,
		 hex + 12, hex + 16, hex + 20);
	rc = kb_gw_login_begin(r->g, uuid, provider,
			       r->has_user ? r->user.id : NULL,
			       r->g->cfg.auth_state_ttl_s);
	if (rc < 0) {
		kb_gw_store_failed(r, rc);
		return;
	}
	snprintf(start, sizeof(start), "%s/auth/start/%s",
		 r->g->cfg.oauth_redirect_base, provider);
	kb_gw_reply_json(r, 200,
			 json_pack("{s:s,s:s}", "state", uuid, "authorize_url",
				   start));
}

/* The provider's authorize URL with our client id, redirect and state,
 * '&' written as "&amp;" for an HTML attribute. */
static int authorize_href(const struct kb_gw_config *cfg, const char *provider,
			  const char *state, struct kb_buf *out)
{
	int discord = strcmp(provider, "discord") == 0;
	char redirect[1024];
	char *client, *redir;
	int rc = -ENOMEM;

	snprintf(redirect, sizeof(redirect), "%s/auth/cli/%s",
		 cfg->oauth_redirect_base, provider);
	client = curl_easy_escape(
		NULL, discord ? cfg->oauth_discord_id : cfg->oauth_github_id,
		0);
	redir = curl_easy_escape(NULL, redirect, 0);
	if (client && redir)
		rc = discord ? kb_buf_printf(
				       out,
				       "%s/oauth2/authorize?client_id=%s&amp;"
				       "response_type=code&amp;scope=identify&amp;"
				       "redirect_uri=%s&amp;state=%s",
				       cfg->oauth_discord_base, client, redir,
				       state)
			     : kb_buf_printf(
				       out,
				       "%s/login/oauth/authorize?client_id=%s&amp;"
				       "redirect_uri=%s&amp;state=%s",
				       cfg->oauth_github_base, client, redir,
				       state);
	curl_free(client);
	curl_free(redir);
	return rc < 0 ? rc : 0;
}

static struct MHD_Response *start_page(const struct kb_gw_config *cfg,
				       const char *provider, const char *state)
{
	struct kb_buf href = {0}, page = {0};
	struct MHD_Response *resp = NULL;
	const char *title = provider_title(provider);

	if (authorize_href(cfg, provider, state, &href) == 0 &&
	    kb_buf_printf(
		    &page,
		    "<!doctype html>\n<html><head><meta charset=\"utf-8\">"
		    "<title>KernelBot: sign in the command-line client</title>"
		    "</head><body>\n<h1>Sign in the KernelBot command-line "
		    "client</h1>\n<p>Signing in with %s links a command-line "
		    "client to your KernelBot account: whoever runs it can then "
		    "submit as you and read your submissions.</p>\n<p><b>Continue "
		    "only if you started this yourself, just now, on your own "
		    "computer</b> (<code>kb register</code> or "
		    "<code>popcorn register</code>). If someone sent you this "
		    "link, close this page.</p>\n<p><a id=\"continue\" "
		    "href=\"%s\">Continue to %s</a></p>\n</body></html>\n",
		    title, href.data, title) == 0)
		resp = MHD_create_response_from_buffer(page.len, page.data,
						       MHD_RESPMEM_MUST_FREE);
	if (resp)
		page.data = NULL;
	kb_buf_free(&page);
	kb_buf_free(&href);
	if (!resp)
		return NULL;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				"text/html; charset=utf-8");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
				"no-store");
	MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
	/* Framed in another site's page, the link could be clicked for the
	 * user; and the page runs nothing. */
	MHD_add_response_header(resp, "Content-Security-Policy",
				"default-src 'none'; frame-ancestors 'none'");
	MHD_add_response_header(resp, "X-Frame-Options", "DENY");
	return resp;
}

static void start_begin(struct kb_gw_req *r)
{
	const char *provider = r->route.params[0];
	struct kb_gw_oauth_state st;
	char nonce[KB_GW_NONCE_HEX + 1], sha[65], state[1024], name[32],
		cookie[256];
	const char *reason = "";
	char why[256];
	long ttl = 0;
	int status = 0, rc;

	if (auth_gate(r, provider) < 0)
		return;
	if (kb_gw_oauth_state_parse(kb_gw_query(r, "state"), &st, &reason) !=
	    0) {
		kb_gw_reply_error(r, 400, "%s", reason);
		return;
	}
	kb_random_hex(nonce, KB_GW_NONCE_HEX / 2);
	kb_sha256_hex(nonce, KB_GW_NONCE_HEX, sha);
	rc = kb_gw_login_step(r->g, "start", st.cli_id, provider, sha, &ttl,
			      &status, why, sizeof(why));
	if (rc == -EPERM) {
		kb_gw_reply_error(r, status, "%s", why);
		return;
	}
	if (rc < 0) {
		kb_gw_store_failed(r, rc);
		return;
	}
	memcpy(st.nonce, nonce, sizeof(st.nonce));
	if (kb_gw_oauth_state_encode(&st, state, sizeof(state)) < 0) {
		kb_gw_reply_error(r, 400, "Invalid state parameter");
		return;
	}
	struct MHD_Response *resp = start_page(&r->g->cfg, provider, state);
	if (!resp) {
		kb_gw_reply_error(r, 500, "out of memory");
		return;
	}
	cookie_name(st.cli_id, name);
	snprintf(cookie, sizeof(cookie),
		 "%s=%s; Max-Age=%ld; Path=/auth/; HttpOnly; "
		 "SameSite=Lax%s",
		 name, nonce, ttl > 0 ? ttl : 1,
		 strncmp(r->g->cfg.oauth_redirect_base, "https://", 8) == 0
			 ? "; Secure"
			 : "");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_SET_COOKIE, cookie);
	sodium_memzero(cookie, sizeof(cookie));
	sodium_memzero(nonce, sizeof(nonce));
	kb_gw_reply_response(r, 200, resp);
	MHD_destroy_response(resp);
}

/* The login between its halves: the exchange runs on the logins' pool. */
struct deferred_login {
	const char *provider; /* a literal */
	char code[1024];
	struct kb_gw_oauth_state st;
	struct kb_gw_oauth_user u;
	char user_id[160];
	int status;
	char why[256];
};

static void free_login(void *arg)
{
	struct deferred_login *d = arg;

	sodium_memzero(d, sizeof(*d)); /* the code */
	free(d);
}

static void login_work(struct kb_gw_req *r)
{
	struct deferred_login *d = r->pending;
	char redirect[1024];
	int rc;

	snprintf(redirect, sizeof(redirect), "%s/auth/cli/%s",
		 r->g->cfg.oauth_redirect_base, d->provider);
	rc = kb_gw_oauth_exchange(&r->g->cfg, d->provider, d->code, redirect,
				  &d->u, &d->status, d->why, sizeof(d->why));
	if (rc < 0)
		return;
	snprintf(d->user_id, sizeof(d->user_id), "%s-%s", d->provider, d->u.id);
	rc = kb_gw_auth_link(r->g, d->user_id, d->u.name, d->st.cli_id,
			     d->provider, d->st.reset, &d->status, d->why,
			     sizeof(d->why));
	if (rc == -EPERM) {
		kb_info("auth: user=%s refused via %s reset=%d: %d", d->user_id,
			d->provider, d->st.reset, d->status);
		return;
	}
	if (rc < 0) {
		d->status = rc == -EIO ? 503 : 500;
		snprintf(d->why, sizeof(d->why), "%s",
			 rc == -EIO ? "store unavailable, retry later"
				    : "internal error");
		return;
	}
	d->status = 0;
	kb_info("auth: user=%s linked a CLI id via %s reset=%d", d->user_id,
		d->provider, d->st.reset);
}

static void login_done(struct kb_gw_req *r)
{
	struct deferred_login *d = r->pending;
	char msg[160];

	if (d->status) {
		kb_gw_reply_error(r, d->status, "%s", d->why);
		return;
	}
	snprintf(msg, sizeof(msg),
		 "Successfully authenticated via %s and linked CLI ID.",
		 d->provider);
	kb_gw_reply_json(r, 200,
			 json_pack("{s:s,s:s,s:s,s:s,s:b}", "status", "success",
				   "message", msg, "user_id", d->user_id,
				   "user_name", d->u.name, "is_reset",
				   d->st.reset));
}

/* The browser must be the one that opened the start page: its cookie
 * holds the state's nonce. Returns 0 or replies and returns -1. */
static int same_browser(struct kb_gw_req *r, const struct kb_gw_oauth_state *st)
{
	char name[32];
	const char *cookie;

	cookie_name(st->cli_id, name);
	cookie = MHD_lookup_connection_value(r->conn, MHD_COOKIE_KIND, name);
	if (!st->nonce[0] || !cookie || strlen(cookie) != KB_GW_NONCE_HEX ||
	    sodium_memcmp(cookie, st->nonce, KB_GW_NONCE_HEX) != 0) {
		kb_gw_reply_error(
			r, 403,
			"this sign-in was not started in this browser: "
			"open the link the CLI printed in the browser you "
			"sign in with");
		return -1;
	}
	return 0;
}

static void cli_begin(struct kb_gw_req *r)
{
	const char *code = kb_gw_query(r, "code"),
		   *state = kb_gw_query(r, "state");
	const char *reason = "";
	struct deferred_login *d;
	char sha[65];
	long ttl;
	int rc;

	if (auth_gate(r, r->route.params[0]) < 0)
		return;
	if (!code || !*code || !state || !*state) {
		kb_gw_reply_error(r, 400,
				  "Missing authorization code or state");
		return;
	}
	if (strlen(code) >= sizeof(d->code)) {
		kb_gw_reply_error(r, 400, "authorization code too long");
		return;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		kb_gw_reply_error(r, 500, "out of memory");
		return;
	}
	r->pending = d;
	r->pending_free = free_login;
	/* A literal keeps the names' lengths known. */
	d->provider = strcmp(r->route.params[0], "github") == 0 ? "github"
								: "discord";
	memcpy(d->code, code, strlen(code) + 1);
	if (kb_gw_oauth_state_parse(state, &d->st, &reason) != 0) {
		kb_gw_reply_error(r, 400, "%s", reason);
		return;
	}
	/* Everything that needs no provider is checked before it is asked:
	 * the login exists, is this browser's and is used up now. */
	if (same_browser(r, &d->st) < 0)
		return;
	kb_sha256_hex(d->st.nonce, KB_GW_NONCE_HEX, sha);
	rc = kb_gw_login_step(r->g, "claim", d->st.cli_id, d->provider, sha,
			      &ttl, &d->status, d->why, sizeof(d->why));
	if (rc == -EPERM) {
		kb_gw_reply_error(r, d->status, "%s", d->why);
		return;
	}
	if (rc < 0) {
		kb_gw_store_failed(r, rc);
		return;
	}
	kb_gw_defer_to(r, r->g->auth_pool, login_work, login_done);
}

const struct kb_gw_handler kb_gw_auth_handlers[KB_ROUTE_COUNT] = {
	[KB_ROUTE_AUTH_INIT] = {init_begin, NULL},
	[KB_ROUTE_AUTH_START] = {start_begin, NULL},
	[KB_ROUTE_AUTH_CLI] = {cli_begin, NULL},
};
