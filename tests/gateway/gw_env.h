/* gw_env: a throwaway gateway for tests/gateway/test_http.c.
 *
 * gw_env_up() starts a redis-server, optionally a kb-devbroker (otherwise
 * the gateway is pointed at a port that refuses connections: "Kafka
 * down"), and kb-gateway on a port it picks itself (KB_HTTP_PORT=0, read
 * back from its log) with KB_PROBLEMS = tests/gateway/data. Each test starts
 * its own, in its own forked process: kb_testenv stops servers from an
 * atexit handler, which Check's forked children run too, so servers shared
 * through an unchecked fixture would die after the first passing test.
 * A failing Check test exits without running atexit handlers; the servers
 * die with it all the same, since kb_test_spawn() starts each with
 * PR_SET_PDEATHSIG.
 *
 * Every response gw_req() returns has been checked not to contain a
 * leaderboard's secret seed.
 */
#ifndef GW_ENV_H
#define GW_ENV_H

#include <hiredis/hiredis.h>
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "kb.pb-c.h"
#include "kb_testenv.h"

#define GW_ADMIN_TOKEN "gw-test-admin-token"

struct gw_env {
	struct kb_test_server redis, broker;
	int have_broker;
	char brokers[160];
	int dead_fd; /* holds the refused "broker" port when !have_broker */
	pid_t gw;
	int port;
	char api[64];
	char log[256];
	redisContext *rc;
	char seeds[8][32];
	int nseeds;
	/* Set before gw_env_up(): more "K=V" entries for the gateway, which
	 * override the defaults (NULL-terminated, at most 16). */
	const char *const *extra_env;
};

/* Fails the test when anything does not start. admin_token NULL: none. */
void gw_env_up(struct gw_env *e, int real_broker, const char *admin_token);

/* Starts another kb-gateway on the same servers (after a stop). */
void gw_env_restart_gateway(struct gw_env *e, const char *admin_token);

/* SIGTERM to the gateway; returns its wait status. */
int gw_env_stop_gateway(struct gw_env *e);

struct gw_resp {
	long code; /* 0: no HTTP answer (connection closed) */
	char *body;
	size_t len;
	char *headers;
};

/* headers: NULL-terminated "Name: value" list, or NULL. body NULL: none. */
struct gw_resp gw_req(struct gw_env *e, const char *method, const char *path,
		      const char *const *headers, const void *body, size_t len);
/* The same, but the body is sent with Transfer-Encoding: chunked. */
struct gw_resp gw_req_chunked(struct gw_env *e, const char *path,
			      const char *const *headers, const void *body,
			      size_t len);
/* POST with a body built by libcurl's own multipart encoder. */
struct gw_resp gw_req_form(struct gw_env *e, const char *path,
			   const char *cli_id, const char *field,
			   const char *filename, const void *data, size_t len);
void gw_resp_free(struct gw_resp *r);

/* The body as JSON (asserts it parses). */
json_t *gw_json(const struct gw_resp *r);
/* Asserts the status and a {"detail": "..."} body, then frees r. */
void gw_expect_error(struct gw_resp r, long code, const char *what);

/* A multipart/form-data body with one file part. Caller frees. */
char *gw_multipart(const char *boundary, const char *field,
		   const char *filename, const void *data, size_t len,
		   size_t *out_len);

/* Creates a user through POST /admin/users; fills cli_id and user_id. */
void gw_create_user(struct gw_env *e, const char *name, char cli_id[80],
		    char user_id[40]);

/* Number of keys matching a pattern. */
long gw_count_keys(struct gw_env *e, const char *pattern);

/* A request with "X-Popcorn-Cli-Id: cli" (cli NULL: none) and, when body
 * is not NULL, a JSON body. */
struct gw_resp gw_req_cli(struct gw_env *e, const char *method,
			  const char *path, const char *cli, const char *json);
/* The same with the admin bearer token instead. */
struct gw_resp gw_req_admin(struct gw_env *e, const char *method,
			    const char *path, const char *json);
/* POST path with a multipart file "file" (as popcorn-cli sends it). */
struct gw_resp gw_submit(struct gw_env *e, const char *path, const char *cli,
			 const char *code);
/* Asserts status; returns the JSON body (caller decrefs) and frees r. */
json_t *gw_expect_json(struct gw_resp r, long code, const char *what);

/* Waits until the gateway's kb.results consumer has its partitions. */
void gw_wait_consumer(struct gw_env *e);
/* Produces a ResultEvent to kb.results (needs the real broker). */
void gw_produce_event(struct gw_env *e, const Kb__ResultEvent *ev);
/* A Result event of submission id on gpu (needs the real broker). */
void gw_produce_result(struct gw_env *e, uint64_t id, const char *gpu,
		       const Kb__Result *r);
/* A Progress event of submission id on gpu from worker. */
void gw_produce_progress(struct gw_env *e, uint64_t id, const char *gpu,
			 Kb__Stage stage, const char *worker);

/* A server-sent-events request running in a thread of its own. */
struct gw_sse;
struct gw_sse *gw_sse_start(struct gw_env *e, const char *path, const char *cli,
			    const char *code);
/* The same with more form fields: name, value pairs (NULL-terminated, at
 * most 7 pairs), as popcorn-cli's POST /profile sends them. */
struct gw_sse *gw_sse_start_form(struct gw_env *e, const char *path,
				 const char *cli, const char *code,
				 const char *const *fields);
/* Waits until the stream's body contains needle; returns 0 or -1. */
int gw_sse_wait(struct gw_sse *s, const char *needle, int timeout_ms);
/* Waits for the end of the stream; returns its status and body (free the
 * body; NULL when none). */
long gw_sse_finish(struct gw_sse *s, char **body, char **headers);
/* The first submission id named in the stream, 0 when none yet. */
uint64_t gw_sse_id(struct gw_sse *s);

/* Asserts that the gateway log holds no secret seed and no admin token. */
void gw_assert_log_clean(struct gw_env *e);

/* Stops the gateway, asserting that it exited 0 with a clean log. */
void gw_stop_clean(struct gw_env *e);

/* Asserts a 202 submission answer; returns its id and frees r. */
uint64_t gw_accepted(struct gw_resp r);

/* A command on the test's own Redis connection (hiredis formats),
 * asserted not to fail. */
void gw_redis_do(struct gw_env *e, const char *fmt, ...);

#endif
