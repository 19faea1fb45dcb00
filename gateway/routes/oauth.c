/* kb_gw_oauth: see oauth.h. */
#include "oauth.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/rules.h"
#include "kb_curl_body.h"
#include "kb_log.h"
#include "kb_util.h"

#define ANSWER_MAX (64u << 10)

int kb_gw_oauth_configured(const struct kb_gw_config *cfg, const char *provider)
{
	if (strcmp(provider, "discord") == 0)
		return cfg->oauth_discord_id && *cfg->oauth_discord_id &&
		       cfg->oauth_discord_secret && *cfg->oauth_discord_secret;
	if (strcmp(provider, "github") == 0)
		return cfg->oauth_github_id && *cfg->oauth_github_id &&
		       cfg->oauth_github_secret && *cfg->oauth_github_secret;
	return 0;
}

/* One request; form != NULL makes it a POST. Returns the parsed JSON
 * object, or NULL with *status/why set. */
static json_t *call(const struct kb_gw_config *cfg, const char *url,
		    const char *form, const char *bearer, const char *what,
		    int *status, char *why, size_t why_size)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	struct kb_curl_body body = {.max = ANSWER_MAX};
	char auth[1200];
	long code = 0;
	CURLcode cr;
	json_t *j = NULL;

	if (!c) {
		*status = 500;
		snprintf(why, why_size, "out of memory");
		return NULL;
	}
	h = curl_slist_append(h, "Accept: application/json");
	h = curl_slist_append(h, "User-Agent: kb-gateway");
	if (bearer) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s",
			 bearer);
		h = curl_slist_append(h, auth);
		sodium_memzero(auth, sizeof(auth));
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, kb_curl_body_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, cfg->oauth_timeout_ms);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
#else
	curl_easy_setopt(c, CURLOPT_PROTOCOLS,
			 CURLPROTO_HTTP | CURLPROTO_HTTPS);
#endif
	if (form)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, form);
	cr = curl_easy_perform(c);
	if (cr == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	if (cr != CURLE_OK || code < 200 || code >= 300) {
		*status = 401;
		snprintf(why, why_size, "failed to communicate with the %s: %s",
			 what,
			 cr != CURLE_OK ? curl_easy_strerror(cr)
					: "HTTP error");
		kb_warn("oauth: %s: %s (HTTP %ld)", what,
			cr != CURLE_OK ? curl_easy_strerror(cr) : "refused",
			code);
		goto out;
	}
	j = body.data ? json_loadb(body.data, body.len, 0, NULL) : NULL;
	if (!json_is_object(j)) {
		json_decref(j);
		j = NULL;
		*status = 502;
		snprintf(why, why_size,
			 "the %s answered something that is not a "
			 "JSON object",
			 what);
	}
out:
	if (body.data)
		sodium_memzero(body.data, body.len);
	free(body.data);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return j;
}

static int add_field(char *form, size_t size, size_t *used, const char *key,
		     const char *value)
{
	char *esc = curl_easy_escape(NULL, value, 0);
	int n;

	if (!esc)
		return -ENOMEM;
	n = snprintf(form + *used, size - *used, "%s%s=%s", *used ? "&" : "",
		     key, esc);
	curl_free(esc);
	if (n < 0 || (size_t)n >= size - *used)
		return -E2BIG;
	*used += (size_t)n;
	return 0;
}

int kb_gw_oauth_exchange(const struct kb_gw_config *cfg, const char *provider,
			 const char *code, const char *redirect_uri,
			 struct kb_gw_oauth_user *out, int *status, char *why,
			 size_t why_size)
{
	int discord = strcmp(provider, "discord") == 0;
	char form[4096], url[1024], token[1024];
	size_t used = 0;
	json_t *j;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (!kb_gw_oauth_configured(cfg, provider)) {
		*status = 503;
		snprintf(why, why_size,
			 "login with %s is not configured on this server",
			 provider);
		return -ENOTSUP;
	}
	rc |= add_field(form, sizeof(form), &used, "client_id",
			discord ? cfg->oauth_discord_id : cfg->oauth_github_id);
	rc |= add_field(form, sizeof(form), &used, "client_secret",
			discord ? cfg->oauth_discord_secret
				: cfg->oauth_github_secret);
	if (discord)
		rc |= add_field(form, sizeof(form), &used, "grant_type",
				"authorization_code");
	rc |= add_field(form, sizeof(form), &used, "code", code);
	rc |= add_field(form, sizeof(form), &used, "redirect_uri",
			redirect_uri);
	if (rc) {
		sodium_memzero(form, sizeof(form));
		*status = 400;
		snprintf(why, why_size, "authorization code too long");
		return -EINVAL;
	}
	if (discord)
		snprintf(url, sizeof(url), "%s/api/oauth2/token",
			 cfg->oauth_discord_base);
	else
		snprintf(url, sizeof(url), "%s/login/oauth/access_token",
			 cfg->oauth_github_base);
	j = call(cfg, url, form, NULL,
		 discord ? "Discord token endpoint" : "GitHub token endpoint",
		 status, why, why_size);
	sodium_memzero(form, sizeof(form));
	if (!j)
		return -EIO;
	const char *at = json_string_value(json_object_get(j, "access_token"));
	if (!at || !*at || strlen(at) >= sizeof(token)) {
		json_decref(j);
		*status = 401;
		snprintf(why, why_size, "failed to get an access token from %s",
			 discord ? "Discord" : "GitHub");
		return -EPERM;
	}
	memcpy(token, at, strlen(at) + 1);
	json_decref(j);

	if (discord)
		snprintf(url, sizeof(url), "%s/api/users/@me",
			 cfg->oauth_discord_base);
	else
		snprintf(url, sizeof(url), "%s/user",
			 cfg->oauth_github_api_base);
	j = call(cfg, url, NULL, token,
		 discord ? "Discord user endpoint" : "GitHub user endpoint",
		 status, why, why_size);
	sodium_memzero(token, sizeof(token));
	if (!j)
		return -EIO;
	json_t *id = json_object_get(j, "id");
	const char *name = json_string_value(
		json_object_get(j, discord ? "username" : "login"));
	if (json_is_integer(id))
		snprintf(out->id, sizeof(out->id), "%" JSON_INTEGER_FORMAT,
			 json_integer_value(id));
	else if (json_is_string(id))
		snprintf(out->id, sizeof(out->id), "%s", json_string_value(id));
	if (name && kb_rules_user_name_ok(name))
		snprintf(out->name, sizeof(out->name), "%s", name);
	json_decref(j);
	if (!kb_rules_name_ok(out->id, 64) || !out->name[0]) {
		*status = 502;
		snprintf(why, why_size,
			 "failed to retrieve the user id or name from %s",
			 discord ? "Discord" : "GitHub");
		return -EPROTO;
	}
	return 0;
}
