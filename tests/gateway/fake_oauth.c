/* fake_oauth: see fake_oauth.h. */
#include "fake_oauth.h"

#include <check.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HOLD_MAX_S 30

struct fake_oauth {
	struct MHD_Daemon *d;
	int port;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	long token_calls;
	int held;
	char env_discord[96], env_github[96], env_github_api[96];
	const char *env[10];
};

struct fake_req {
	char body[4096];
	size_t len;
};

/* The identities the fake knows: code -> token -> user. */
static const struct {
	const char *provider, *code, *token, *user_json;
} users[] = {
	{"discord", "good-code", "tok-discord-SECRET",
	 "{\"id\":\"80351110224678912\",\"username\":\"nelly\"}"},
	{"discord", "good-code-2", "tok-discord-SECRET",
	 "{\"id\":\"80351110224678912\",\"username\":\"nelly\"}"},
	{"discord", "mallory-code", "tok-discord-MALLORY",
	 "{\"id\":\"666000\",\"username\":\"mallory\"}"},
	{"github", "gh-code", "tok-gh-SECRET",
	 "{\"id\":583231,\"login\":\"octocat\"}"},
};
#define NUSERS (sizeof(users) / sizeof(users[0]))

static enum MHD_Result answer(struct MHD_Connection *c, unsigned status,
			      const char *json)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(
		strlen(json), (void *)json, MHD_RESPMEM_MUST_COPY);
	MHD_add_response_header(r, "Content-Type", "application/json");
	enum MHD_Result ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static int form_has(const char *body, const char *kv)
{
	size_t n = strlen(kv);
	for (const char *p = body; (p = strstr(p, kv)); p++)
		if ((p == body || p[-1] == '&') &&
		    (p[n] == '&' || p[n] == '\0'))
			return 1;
	return 0;
}

/* Counts a token request and waits while the test holds them. */
static void token_request(struct fake_oauth *f)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += HOLD_MAX_S;
	pthread_mutex_lock(&f->mu);
	f->token_calls++;
	while (f->held)
		if (pthread_cond_timedwait(&f->cv, &f->mu, &until) != 0)
			break;
	pthread_mutex_unlock(&f->mu);
}

static enum MHD_Result token(struct fake_oauth *f, struct MHD_Connection *c,
			     const char *provider, const char *body)
{
	char code[64];
	int discord = strcmp(provider, "discord") == 0;

	token_request(f);
	if (discord &&
	    !(form_has(body, "client_id=disc-id") &&
	      form_has(body, "client_secret=disc-secret-XYZ") &&
	      form_has(body, "grant_type=authorization_code") &&
	      form_has(
		      body,
		      "redirect_uri=http%3A%2F%2Fapi.test%2Fauth%2Fcli%2Fdiscord")))
		return answer(c, 400, "{\"error\":\"invalid_client\"}");
	const char *accept =
		MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept");
	if (!discord && !(accept && strstr(accept, "application/json") &&
			  form_has(body, "client_id=gh-id") &&
			  form_has(body, "client_secret=gh-secret-XYZ")))
		return answer(c, 200,
			      "{\"error\":\"incorrect_client_credentials\"}");
	for (size_t i = 0; i < NUSERS; i++) {
		snprintf(code, sizeof(code), "code=%s", users[i].code);
		if (strcmp(users[i].provider, provider) == 0 &&
		    form_has(body, code)) {
			char out[128];
			snprintf(out, sizeof(out), "{\"access_token\":\"%s\"}",
				 users[i].token);
			return answer(c, 200, out);
		}
	}
	return discord ? answer(c, 400, "{\"error\":\"invalid_grant\"}")
		       : answer(c, 200,
				"{\"error\":\"bad_verification_code\"}");
}

static enum MHD_Result user(struct MHD_Connection *c, const char *provider)
{
	const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						       "Authorization");

	for (size_t i = 0; auth && i < NUSERS; i++)
		if (strcmp(users[i].provider, provider) == 0 &&
		    strncmp(auth, "Bearer ", 7) == 0 &&
		    strcmp(auth + 7, users[i].token) == 0)
			return answer(c, 200, users[i].user_json);
	return answer(c, 401, "{\"message\":\"401: Unauthorized\"}");
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c,
			       const char *url, const char *method,
			       const char *version, const char *data,
			       size_t *data_size, void **con_cls)
{
	struct fake_oauth *f = cls;
	struct fake_req *fr = *con_cls;

	(void)version;
	if (!fr) {
		*con_cls = calloc(1, sizeof(*fr));
		return *con_cls ? MHD_YES : MHD_NO;
	}
	if (*data_size) {
		size_t n = *data_size;
		if (fr->len + n < sizeof(fr->body)) {
			memcpy(fr->body + fr->len, data, n);
			fr->len += n;
		}
		*data_size = 0;
		return MHD_YES;
	}
	if (strcmp(method, "POST") == 0 &&
	    strcmp(url, "/api/oauth2/token") == 0)
		return token(f, c, "discord", fr->body);
	if (strcmp(method, "POST") == 0 &&
	    strcmp(url, "/login/oauth/access_token") == 0)
		return token(f, c, "github", fr->body);
	if (strcmp(method, "GET") == 0 && strcmp(url, "/api/users/@me") == 0)
		return user(c, "discord");
	if (strcmp(method, "GET") == 0 && strcmp(url, "/user") == 0)
		return user(c, "github");
	return answer(c, 404, "{}");
}

static void done(void *cls, struct MHD_Connection *c, void **con_cls,
		 enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)c;
	(void)toe;
	free(*con_cls);
	*con_cls = NULL;
}

struct fake_oauth *fake_oauth_start(void)
{
	struct fake_oauth *f = calloc(1, sizeof(*f));
	const union MHD_DaemonInfo *info;
	int n = 0;

	ck_assert_ptr_nonnull(f);
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
	f->d = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION,
		0, NULL, NULL, handler, f, MHD_OPTION_NOTIFY_COMPLETED, done,
		NULL, MHD_OPTION_END);
	ck_assert_ptr_nonnull(f->d);
	info = MHD_get_daemon_info(f->d, MHD_DAEMON_INFO_BIND_PORT);
	ck_assert_ptr_nonnull(info);
	f->port = info->port;
	ck_assert_int_gt(f->port, 0);
	snprintf(f->env_discord, sizeof(f->env_discord),
		 "KB_OAUTH_DISCORD_BASE=http://127.0.0.1:%d", f->port);
	snprintf(f->env_github, sizeof(f->env_github),
		 "KB_OAUTH_GITHUB_BASE=http://127.0.0.1:%d", f->port);
	snprintf(f->env_github_api, sizeof(f->env_github_api),
		 "KB_OAUTH_GITHUB_API_BASE=http://127.0.0.1:%d", f->port);
	f->env[n++] = f->env_discord;
	f->env[n++] = f->env_github;
	f->env[n++] = f->env_github_api;
	f->env[n++] = "KB_OAUTH_REDIRECT_BASE=http://api.test";
	f->env[n++] = "KB_OAUTH_DISCORD_CLIENT_ID=disc-id";
	f->env[n++] = "KB_OAUTH_DISCORD_CLIENT_SECRET=disc-secret-XYZ";
	f->env[n++] = "KB_OAUTH_GITHUB_CLIENT_ID=gh-id";
	f->env[n++] = "KB_OAUTH_GITHUB_CLIENT_SECRET=gh-secret-XYZ";
	f->env[n] = NULL;
	return f;
}

int fake_oauth_port(const struct fake_oauth *f)
{
	return f->port;
}

long fake_oauth_token_calls(struct fake_oauth *f)
{
	long n;

	pthread_mutex_lock(&f->mu);
	n = f->token_calls;
	pthread_mutex_unlock(&f->mu);
	return n;
}

void fake_oauth_hold(struct fake_oauth *f, int held)
{
	pthread_mutex_lock(&f->mu);
	f->held = held;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

const char *const *fake_oauth_env(struct fake_oauth *f)
{
	return f->env;
}

void fake_oauth_stop(struct fake_oauth *f)
{
	if (!f)
		return;
	fake_oauth_hold(f, 0);
	MHD_stop_daemon(f->d);
	pthread_cond_destroy(&f->cv);
	pthread_mutex_destroy(&f->mu);
	free(f);
}
