/* gw_login: see gw_login.h. */
#include "gw_login.h"

#include <check.h>
#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

void gw_login_state(const char *cli_id, int reset, char *out, size_t size)
{
	char json[256];

	snprintf(json, sizeof(json), "{\"cli_id\":\"%s\",\"is_reset\":%s}",
		 cli_id, reset ? "true" : "false");
	sodium_bin2base64(out, size, (const unsigned char *)json, strlen(json),
			  sodium_base64_VARIANT_URLSAFE_NO_PADDING);
}

/* The text after name in text up to one of the stop characters. */
static int take(const char *text, const char *name, const char *stop, char *out,
		size_t size)
{
	const char *p = strstr(text, name);
	size_t n;

	if (!p)
		return -1;
	p += strlen(name);
	n = strcspn(p, stop);
	if (n == 0 || n >= size)
		return -1;
	memcpy(out, p, n);
	out[n] = '\0';
	return 0;
}

void gw_login_begin(struct gw_env *e, const char *provider, const char *old_cli,
		    int reset, struct gw_login *l)
{
	char path[128], hcli[160];
	const char *h[2] = {NULL, NULL};

	memset(l, 0, sizeof(*l));
	snprintf(path, sizeof(path), "/auth/init?provider=%s", provider);
	if (old_cli) {
		snprintf(hcli, sizeof(hcli), "X-Popcorn-Cli-Id: %s", old_cli);
		h[0] = hcli;
	}
	json_t *j = gw_expect_json(gw_req(e, "GET", path, h, NULL, 0), 200,
				   "auth/init");
	const char *id = json_string_value(json_object_get(j, "state"));
	ck_assert_ptr_nonnull(id);
	ck_assert_uint_eq(strlen(id), 36); /* a UUID, as upstream's */
	snprintf(l->cli_id, sizeof(l->cli_id), "%s", id);
	gw_login_state(l->cli_id, reset, l->state, sizeof(l->state));
	/* The server's page is on its public base URL: the same path here. */
	const char *url =
		json_string_value(json_object_get(j, "authorize_url"));
	const char *page = url ? strstr(url, "/auth/") : NULL;
	if (page) {
		char start[1200];
		snprintf(start, sizeof(start), "%s%sstate=%s", page,
			 strchr(page, '?') ? "&" : "?", l->state);
		struct gw_resp r = gw_req(e, "GET", start, NULL, NULL, 0);
		ck_assert_msg(r.code == 200, "start page: HTTP %ld %s", r.code,
			      r.body);
		ck_assert_msg(take(r.headers, "Set-Cookie: ", ";\r\n",
				   l->cookie, sizeof(l->cookie)) == 0,
			      "no cookie: %s", r.headers);
		const char *link = strstr(r.body, "id=\"continue\"");
		ck_assert_msg(link && take(link, "state=", "&\"' <", l->state,
					   sizeof(l->state)) == 0,
			      "no provider link: %s", r.body);
		gw_resp_free(&r);
	}
	json_decref(j);
}

struct gw_resp gw_login_finish(struct gw_env *e, const char *provider,
			       const char *code, const char *state,
			       const char *cookie)
{
	char path[1000], hc[260];
	const char *h[2] = {NULL, NULL};

	snprintf(path, sizeof(path), "/auth/cli/%s?code=%s&state=%s", provider,
		 code, state);
	if (cookie && *cookie) {
		snprintf(hc, sizeof(hc), "Cookie: %s", cookie);
		h[0] = hc;
	}
	return gw_req(e, "GET", path, h, NULL, 0);
}
