#include "dc_env.h"

#include <check.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kb_curl_body.h"
#include "kb_util.h"

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* "NAME=value", malloc'd. */
static char *envf(const char *name, const char *v)
{
	char *s = NULL;

	ck_assert_int_ge(asprintf(&s, "%s=%s", name, v), 0);
	return s;
}

static pid_t spawn(struct dc_env *e, const char *bin, const char *log,
		   int with_key)
{
	char logpath[256], cdn[128];
	char *argv[] = {(char *)bin, NULL};
	char *env[32];
	int n = 0;

	snprintf(cdn, sizeof(cdn), "%s/attachments/", fd_url(e->fd));
	env[n++] = envf("KB_KAFKA_BROKERS", e->broker.url);
	env[n++] = envf("KB_REDIS_URL", e->redis.url);
	env[n++] =
		envf("KB_HTTP_PORT", "0"); /* the gateway logs the one it got */
	env[n++] = envf("KB_HTTP_ADDR", "127.0.0.1");
	env[n++] = envf("KB_HTTP_THREADS", "4");
	env[n++] = envf("KB_PROBLEMS", e->problems);
	env[n++] = envf("KB_WORKDIR", e->dir);
	env[n++] = envf("KB_GPU", "CPU");
	env[n++] = envf("KB_LOG_LEVEL", "debug");
	env[n++] = envf("KB_DRAIN_S", "5");
	env[n++] = envf("KB_CONSUMER_EXTRA",
			"session.timeout.ms=6000,heartbeat.interval.ms=500");
	if (with_key)
		env[n++] = envf("DISCORD_PUBLIC_KEY", e->pk_hex);
	env[n++] = envf("DISCORD_APPLICATION_ID", DC_APP_ID);
	env[n++] = envf("DISCORD_BOT_TOKEN", "test-bot-token");
	env[n++] = envf("DISCORD_API_BASE", fd_url(e->fd));
	env[n++] = envf("DISCORD_ANNOUNCE_CHANNEL_ID", DC_ANNOUNCE);
	env[n++] = envf("DISCORD_ADMIN_IDS", DC_ADMIN ",77");
	env[n++] = envf("DISCORD_CDN_PREFIXES", cdn);
	env[n] = NULL;
	snprintf(logpath, sizeof(logpath), "%s/%s.log", e->dir, log);
	pid_t pid = kb_test_spawn(argv, env, logpath);
	for (int i = 0; i < n; i++)
		free(env[i]);
	ck_assert_int_gt(pid, 0);
	return pid;
}

static long health(struct dc_env *e)
{
	char url[128];
	long code = 0;
	CURL *c = curl_easy_init();

	snprintf(url, sizeof(url), "%s/health", e->api);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 2000L);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(c);
	return code;
}

void dc_env_up(struct dc_env *e, int with_key, int pipeline)
{
	dc_env_up_with(e, with_key, pipeline, 0);
}

void dc_env_up_with(struct dc_env *e, int with_key, int pipeline, int upstream)
{
	memset(e, 0, sizeof(*e));
	ck_assert_int_ge(sodium_init(), 0);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	crypto_sign_keypair(e->pk, e->sk);
	sodium_bin2hex(e->pk_hex, sizeof(e->pk_hex), e->pk, sizeof(e->pk));
	/* A fresh directory: a stale gateway.log would name a stale port. */
	snprintf(e->dir, sizeof(e->dir), "/tmp/kb-test-discord-%d-XXXXXX",
		 getpid());
	ck_assert_ptr_nonnull(mkdtemp(e->dir));
	/* A copy of the CPU problems: the source tree may change under a
	 * running test, and tests change the copy on purpose. */
	char cmd[1024], gwlog[256];
	snprintf(e->problems, sizeof(e->problems), "%s/problems/cpu.yaml",
		 e->dir);
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p %s/problems && cd %s/problems && "
		 "cp -r cpu.yaml vectorsum_cpu matmul_cpu harness %s/problems/",
		 e->dir, KB_SOURCE_DIR, e->dir);
	ck_assert_msg(system(cmd) == 0, "%s", cmd);
	if (upstream) {
		char up[200];
		snprintf(up, sizeof(up), "%s/up", e->dir);
		ck_assert_int_eq(mkdir(up, 0755), 0);
		ck_assert_int_eq(kb_test_upstream_copies(up), 0);
		size_t l = strlen(e->problems);
		snprintf(e->problems + l, sizeof(e->problems) - l,
			 ":%s/start.yaml", up);
	}
	e->fd = fd_start();
	ck_assert_ptr_nonnull(e->fd);
	ck_assert_int_eq(kb_test_redis_start(&e->redis), 0);
	ck_assert_int_eq(kb_test_devbroker_start(&e->broker), 0);
	e->gw = spawn(e, KB_BINARY_DIR "/gateway/kb-gateway", "gateway",
		      with_key);
	snprintf(gwlog, sizeof(gwlog), "%s/gateway.log", e->dir);
	e->port = kb_test_wait_listening(e->gw, gwlog, 60000);
	ck_assert_msg(e->port > 0, "kb-gateway did not start; log in %s",
		      gwlog);
	snprintf(e->api, sizeof(e->api), "http://127.0.0.1:%d", e->port);
	if (pipeline) {
		e->ranker = spawn(e, KB_BINARY_DIR "/ranker/kb-ranker",
				  "ranker", 0);
		e->worker = spawn(e, KB_BINARY_DIR "/worker/kb-worker",
				  "worker", 0);
	}
	for (int waited = 0; health(e) != 200; waited += 50) {
		int st;
		ck_assert_msg(
			waitpid(e->gw, &st, WNOHANG) == 0,
			"kb-gateway exited at startup; log in %s/gateway.log",
			e->dir);
		ck_assert_msg(waited < 60000,
			      "kb-gateway not healthy; log in %s", e->dir);
		sleep_ms(50);
	}
}

static int rm_entry(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	return remove(path) < 0 ? 0 : 0; /* best effort */
}

void dc_env_down(struct dc_env *e)
{
	if (e->worker)
		kb_test_stop(e->worker, 10000);
	if (e->ranker)
		kb_test_stop(e->ranker, 10000);
	if (e->gw)
		kb_test_stop(e->gw, 15000);
	kb_test_server_stop(&e->broker);
	kb_test_server_stop(&e->redis);
	fd_stop(e->fd);
	e->fd = NULL;
	/* Reached only when the test passed: its logs can go. */
	nftw(e->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

struct dc_resp dc_post(struct dc_env *e, const char *body, long clock_offset_s,
		       enum dc_sign sign)
{
	char url[128], ts[32], sighex[129], h1[200], h2[64];
	unsigned char sig[64], fpk[32], fsk[64];
	struct curl_slist *h = NULL;
	struct kb_curl_body out = {0};
	struct dc_resp r = {0};
	CURL *c = curl_easy_init();

	snprintf(ts, sizeof(ts), "%ld", (long)time(NULL) + clock_offset_s);
	size_t tn = strlen(ts), bn = strlen(body);
	unsigned char *m = malloc(tn + bn);
	memcpy(m, ts, tn);
	memcpy(m + tn, body, bn);
	if (sign == DC_SIGN_FORGED) {
		crypto_sign_keypair(fpk, fsk);
		crypto_sign_detached(sig, NULL, m, tn + bn, fsk);
	} else {
		crypto_sign_detached(sig, NULL, m, tn + bn, e->sk);
	}
	free(m);
	sodium_bin2hex(sighex, sizeof(sighex), sig, sizeof(sig));
	snprintf(h1, sizeof(h1), "X-Signature-Ed25519: %s", sighex);
	snprintf(h2, sizeof(h2), "X-Signature-Timestamp: %s", ts);
	if (sign != DC_SIGN_NONE) {
		h = curl_slist_append(h, h1);
		h = curl_slist_append(h, h2);
	}
	h = curl_slist_append(h, "Content-Type: application/json");
	snprintf(url, sizeof(url), "%s/discord/interactions", e->api);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)bn);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, kb_curl_body_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &out);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.code);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	r.body = out.data ? out.data : strdup("");
	r.json = json_loads(r.body, 0, NULL);
	return r;
}

void dc_resp_free(struct dc_resp *r)
{
	free(r->body);
	json_decref(r->json);
	memset(r, 0, sizeof(*r));
}

char *dc_interaction(int type, const char *user_id, const char *token,
		     const char *path, json_t *options, json_t *resolved)
{
	char buf[256], *words[8];
	int n = 0;
	json_t *o = json_object(), *data = json_object(), *leaf;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *save, *w = strtok_r(buf, " ", &save); w && n < 8;
	     w = strtok_r(NULL, " ", &save))
		words[n++] = w;
	json_object_set_new(o, "type", json_integer(type));
	/* Every interaction has an id of its own, as Discord's do (the
	 * gateway refuses an id it has seen). */
	static unsigned long next_id = 8800;
	char id[32];
	snprintf(id, sizeof(id), "%lu%d", next_id++, (int)getpid());
	json_object_set_new(o, "id", json_string(id));
	json_object_set_new(o, "application_id", json_string(DC_APP_ID));
	json_object_set_new(o, "token", json_string(token));
	json_object_set_new(o, "guild_id", json_string("3300"));
	json_object_set_new(o, "channel_id", json_string("4400"));
	json_object_set_new(
		o, "member",
		json_pack("{s:[s],s:{s:s,s:s,s:s}}", "roles", "9999", "user",
			  "id", user_id, "username", "tester", "global_name",
			  strcmp(user_id, DC_ADMIN) == 0 ? "Admin" : "Tester"));
	json_object_set_new(o, "data", data);
	if (n == 0) {
		json_decref(options);
		json_decref(resolved);
		char *s = json_dumps(o, JSON_COMPACT);
		json_decref(o);
		return s;
	}
	json_object_set_new(data, "name", json_string(words[0]));
	json_object_set_new(data, "type", json_integer(1));
	/* Nest the rest: a group then a subcommand, or a subcommand. */
	leaf = options ? options : json_array();
	for (int i = n - 1; i >= 1; i--) {
		int type_i = (i == n - 1) ? 1 : 2;
		json_t *node = json_pack("{s:s,s:i,s:o}", "name", words[i],
					 "type", type_i, "options", leaf);
		leaf = json_pack("[o]", node);
	}
	json_object_set_new(data, "options", leaf);
	if (resolved)
		json_object_set_new(data, "resolved", resolved);
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

void dc_attach(struct dc_env *e, const char *id, const char *filename,
	       const void *data, size_t len, long long declared_size,
	       json_t **option, json_t **resolved)
{
	char path[256], url[512];

	snprintf(path, sizeof(path), "/attachments/%s/%s", id, filename);
	snprintf(url, sizeof(url), "%s%s", fd_url(e->fd), path);
	fd_serve(e->fd, path, data, len);
	*option = json_pack("{s:s,s:i,s:s}", "name", "script", "type", 11,
			    "value", id);
	*resolved = json_pack("{s:{s:{s:s,s:s,s:I,s:s,s:s}}}", "attachments",
			      id, "id", id, "filename", filename, "size",
			      (json_int_t)declared_size, "url", url,
			      "content_type", "text/plain");
}
/* Posts a command and checks the answer's type; returns the answer's
 * data.content ("" when none), malloc'd. */
char *dc_cmd(struct dc_env *e, const char *user, const char *token,
	     const char *path, json_t *opts, json_t *resolved, int want_type)
{
	char *body = dc_interaction(2, user, token, path, opts, resolved);
	struct dc_resp r = dc_post(e, body, 0, DC_SIGN_OK);

	ck_assert_msg(r.code == 200, "/%s: HTTP %ld %s", path, r.code, r.body);
	ck_assert_ptr_nonnull(r.json);
	long type = (long)json_integer_value(json_object_get(r.json, "type"));
	ck_assert_msg(type == want_type, "/%s: type %ld, expected %d: %s", path,
		      type, want_type, r.body);
	json_t *data = json_object_get(r.json, "data");
	/* Every answer of ours is ephemeral. */
	ck_assert_msg(json_integer_value(json_object_get(data, "flags")) == 64,
		      "/%s: not ephemeral: %s", path, r.body);
	const char *content =
		json_string_value(json_object_get(data, "content"));
	char *out = strdup(content ? content : "");
	dc_resp_free(&r);
	free(body);
	return out;
}

/* Waits for an edit of token's original message whose payload contains
 * text; returns a copy of the latest such call. */
struct fd_call dc_wait_edit(struct dc_env *e, const char *token,
			    const char *text, int timeout_ms)
{
	char needle[128];
	struct fd_call c = {0};

	snprintf(needle, sizeof(needle), "/webhooks/%s/%s/messages/@original",
		 DC_APP_ID, token);
	if (fd_wait(e->fd, "PATCH", needle, text, 1, timeout_ms) < 1) {
		fd_dump(e->fd);
		ck_abort_msg("no edit of %s containing \"%s\"", token, text);
	}
	for (size_t i = fd_ncalls(e->fd); i-- > 0;) {
		ck_assert_int_eq(fd_get(e->fd, i, &c), 0);
		if (strcmp(c.method, "PATCH") == 0 && strstr(c.path, needle) &&
		    strstr(c.payload, text))
			return c;
		fd_call_free(&c);
	}
	ck_abort_msg("edit vanished");
	return c;
}

json_t *dc_opt_str(const char *name, const char *value)
{
	return json_pack("{s:s,s:i,s:s}", "name", name, "type", 3, "value",
			 value);
}

json_t *dc_opt_int(const char *name, long long v)
{
	return json_pack("{s:s,s:i,s:I}", "name", name, "type", 4, "value",
			 (json_int_t)v);
}

json_t *dc_opt_bool(const char *name, int v)
{
	return json_pack("{s:s,s:i,s:b}", "name", name, "type", 5, "value", v);
}
