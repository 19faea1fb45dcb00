/* CLI registration (upstream's /auth/init and /auth/cli/{provider}).
 *
 * popcorn-cli asks GET /auth/init?provider=P for a fresh CLI id (the
 * "state"), saves it, and sends the user to the provider's authorize page
 * with state = base64url({"cli_id": ..., "is_reset": ...}) and our
 * /auth/cli/P as the redirect. The provider then sends the browser to
 * GET /auth/cli/P?code=...&state=...: we exchange the code for the
 * user's identity (oauth.c) and link the CLI id to user "P-<id>" (created
 * on first login; reset moves an existing account to the new CLI id).
 * A CLI id is only linked if /auth/init issued it for that provider and
 * it has not expired (KB_AUTH_STATE_TTL_S).
 */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bodies.h"
#include "http.h"
#include "kb_log.h"
#include "kb_util.h"
#include "oauth.h"

static void init_begin(struct kb_gw_req *r)
{
	const char *provider = kb_gw_query(r, "provider");
	char hex[33], uuid[40];
	int rc;

	if (!kb_rules_provider_ok(provider)) {
		kb_gw_reply_error(r, 400, "Invalid provider, must be 'discord' or "
					  "'github'");
		return;
	}
	/* A random (version 4) UUID, as upstream's. */
	kb_random_hex(hex, 16);
	hex[12] = '4';
	hex[16] = "89ab"[hex[16] % 4];
	snprintf(uuid, sizeof(uuid), "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8,
		 hex + 12, hex + 16, hex + 20);
	rc = kb_gw_auth_pending(r->g, uuid, provider, r->g->cfg.auth_state_ttl_s);
	if (rc < 0) {
		kb_gw_store_failed(r, rc);
		return;
	}
	kb_gw_reply_json(r, 200, json_pack("{s:s}", "state", uuid));
}

/* The login between its halves: the exchange runs on the pool. */
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
	rc = kb_gw_oauth_exchange(&r->g->cfg, d->provider, d->code, redirect, &d->u,
				  &d->status, d->why, sizeof(d->why));
	if (rc < 0)
		return;
	snprintf(d->user_id, sizeof(d->user_id), "%s-%s", d->provider, d->u.id);
	rc = kb_gw_auth_link(r->g, d->user_id, d->u.name, d->st.cli_id, d->provider,
			     d->st.reset, &d->status, d->why, sizeof(d->why));
	if (rc == -EPERM)
		return;
	if (rc < 0) {
		d->status = rc == -EIO ? 503 : 500;
		snprintf(d->why, sizeof(d->why), "%s", rc == -EIO
			 ? "store unavailable, retry later" : "internal error");
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
	snprintf(msg, sizeof(msg), "Successfully authenticated via %s and linked CLI ID.",
		 d->provider);
	kb_gw_reply_json(r, 200, json_pack("{s:s,s:s,s:s,s:s,s:b}", "status", "success",
					   "message", msg, "user_id", d->user_id,
					   "user_name", d->u.name, "is_reset", d->st.reset));
}

static void cli_begin(struct kb_gw_req *r)
{
	const char *code = kb_gw_query(r, "code"), *state = kb_gw_query(r, "state");
	const char *reason = "";
	struct deferred_login *d;

	if (!kb_rules_provider_ok(r->route.params[0])) {
		kb_gw_reply_error(r, 400, "Invalid provider, must be 'discord' or "
					  "'github'");
		return;
	}
	if (!code || !*code || !state || !*state) {
		kb_gw_reply_error(r, 400, "Missing authorization code or state");
		return;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		kb_gw_reply_error(r, 500, "out of memory");
		return;
	}
	/* A literal keeps the names' lengths known. */
	d->provider = strcmp(r->route.params[0], "github") == 0 ? "github" : "discord";
	if (strlen(code) >= sizeof(d->code)) {
		free_login(d);
		kb_gw_reply_error(r, 400, "authorization code too long");
		return;
	}
	memcpy(d->code, code, strlen(code) + 1);
	if (kb_gw_oauth_state_parse(state, &d->st, &reason) != 0) {
		free_login(d);
		kb_gw_reply_error(r, 400, "%s", reason);
		return;
	}
	r->pending = d;
	r->pending_free = free_login;
	kb_gw_defer(r, login_work, login_done);
}

const struct kb_gw_handler kb_gw_auth_handlers[KB_ROUTE_COUNT] = {
	[KB_ROUTE_AUTH_INIT] = {init_begin, NULL},
	[KB_ROUTE_AUTH_CLI] = {cli_begin, NULL},
};
