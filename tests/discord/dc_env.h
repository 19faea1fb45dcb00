/* dc_env: a kb-gateway with Discord on, for tests/discord/test_gateway.c.
 *
 * dc_env_up() starts a redis-server, a kb-devbroker, the fake Discord
 * (fake_discord.h, in this process; it is also the "CDN" the attachments
 * come from) and kb-gateway with DISCORD_API_BASE pointing at it, a fresh
 * Ed25519 key pair (the public half as DISCORD_PUBLIC_KEY), and the CPU
 * problem set. With pipeline, kb-ranker and a kb-worker (KB_GPU=CPU) run
 * too. Every process dies with the test, even a failing one that skips
 * atexit: kb_test_spawn() starts each with PR_SET_PDEATHSIG.
 *
 * dc_post() signs a body with the test key (or a forged one) at a chosen
 * clock offset and POSTs it to /discord/interactions.
 */
#ifndef DC_ENV_H
#define DC_ENV_H

#include <jansson.h>
#include <sys/types.h>

#include "fake_discord.h"
#include "kb_testenv.h"

#define DC_APP_ID "990001"
#define DC_ANNOUNCE "555000"
#define DC_ADMIN "1000"

struct dc_env {
	struct kb_test_server redis, broker;
	struct fake_discord *fd;
	pid_t gw, ranker, worker;
	int port;
	char api[64];
	char dir[160];
	char problems[512]; /* KB_PROBLEMS: a copy under dir */
	unsigned char pk[32], sk[64];
	char pk_hex[65];
};

/* with_key 0: no DISCORD_PUBLIC_KEY (the endpoint is off). */
void dc_env_up(struct dc_env *e, int with_key, int pipeline);
/* The same, with the upstream problems of kb_test_upstream_copies (in
 * dir/up) loaded too when upstream: boards st_sealed and st_open. */
void dc_env_up_with(struct dc_env *e, int with_key, int pipeline, int upstream);
void dc_env_down(struct dc_env *e);

enum dc_sign { DC_SIGN_OK, DC_SIGN_FORGED, DC_SIGN_NONE };

struct dc_resp {
	long code;
	char *body;
	json_t *json; /* NULL when the body is not JSON */
};

struct dc_resp dc_post(struct dc_env *e, const char *body, long clock_offset_s,
		       enum dc_sign sign);
void dc_resp_free(struct dc_resp *r);

/* An interaction body: type, user, token, command path ("leaderboard
 * submit ranked"), the leaf options (stolen; NULL none) and resolved (stolen;
 * NULL none). Caller frees. */
char *dc_interaction(int type, const char *user_id, const char *token,
		     const char *path, json_t *options, json_t *resolved);

/* Serves data as an attachment on the fake CDN and returns the
 * (options, resolved) pair for a "script" option of that file. */
void dc_attach(struct dc_env *e, const char *id, const char *filename,
	       const void *data, size_t len, long long declared_size,
	       json_t **option, json_t **resolved);

/* Posts a command (type 2, signed) and checks the answer: HTTP 200,
 * ephemeral, of want_type (4 a message, 5 deferred). Returns the
 * answer's data.content ("" when none), malloc'd. */
char *dc_cmd(struct dc_env *e, const char *user, const char *token,
	     const char *path, json_t *opts, json_t *resolved, int want_type);

/* Waits for an edit of token's original message whose payload contains
 * text; returns a copy of the latest such call (free with fd_call_free). */
struct fd_call dc_wait_edit(struct dc_env *e, const char *token,
			    const char *text, int timeout_ms);

/* Leaf options of an interaction (new references). */
json_t *dc_opt_str(const char *name, const char *value);
json_t *dc_opt_int(const char *name, long long v);
json_t *dc_opt_bool(const char *name, int v);

#endif
