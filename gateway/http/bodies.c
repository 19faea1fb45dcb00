/* kb_gw_bodies: see bodies.h. */
#include "bodies.h"

#include <errno.h>
#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rules.h"

#define STATE_MAX 2048

static json_t *load_object(const char *buf, size_t len, const char **why)
{
	json_error_t err;
	json_t *j;

	if (!buf || len == 0) {
		*why = "request body must be a JSON object";
		return NULL;
	}
	j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &err);
	if (!json_is_object(j)) {
		json_decref(j);
		*why = "request body must be a JSON object";
		return NULL;
	}
	return j;
}

/* Copies a string member that must satisfy ok() into out. Returns 0, or
 * 400 with *why. */
static int string_field(json_t *o, const char *key, char *out, size_t size,
			int (*ok)(const char *), const char *missing,
			const char *bad, const char **why)
{
	json_t *v = json_object_get(o, key);
	const char *s = json_string_value(v);

	if (!v || json_is_null(v) || (s && !*s)) {
		*why = missing;
		return 400;
	}
	if (!s || strlen(s) >= size || strlen(s) != json_string_length(v) ||
	    (ok && !ok(s))) {
		*why = bad;
		return 400;
	}
	memcpy(out, s, strlen(s) + 1);
	return 0;
}

static int lb_name_ok(const char *s)
{
	return kb_rules_name_ok(s, 64);
}

static int code_ok(const char *s)
{
	return kb_rules_name_ok(s, 64);
}

int kb_gw_body_user(const char *buf, size_t len, struct kb_gw_body_user *out,
		    const char **why)
{
	json_t *o = load_object(buf, len, why);
	int st;

	memset(out, 0, sizeof(*out));
	if (!o)
		return 400;
	st = string_field(o, "name", out->name, sizeof(out->name),
			  kb_rules_user_name_ok,
			  "name must be 1 to 64 bytes of text",
			  "name must be 1 to 64 bytes of text", why);
	json_decref(o);
	return st;
}

int kb_gw_body_join(const char *buf, size_t len, struct kb_gw_body_join *out,
		    const char **why)
{
	json_t *o = load_object(buf, len, why);
	int st;

	memset(out, 0, sizeof(*out));
	if (!o)
		return 400;
	st = string_field(o, "code", out->code, sizeof(out->code), code_ok,
			  "Missing required field: code", "invalid invite code",
			  why);
	json_decref(o);
	return st;
}

int kb_gw_body_invites(const char *buf, size_t len,
		       struct kb_gw_body_invites *out, const char **why)
{
	json_t *o = load_object(buf, len, why), *list, *v;
	size_t i;

	memset(out, 0, sizeof(*out));
	if (!o)
		return 400;
	v = json_object_get(o, "count");
	if (!json_is_integer(v) || json_integer_value(v) < 1 ||
	    json_integer_value(v) > 10000) {
		json_decref(o);
		*why = "count must be an integer between 1 and 10000";
		return 400;
	}
	out->count = (long)json_integer_value(v);
	list = json_object_get(o, "leaderboards");
	if (list && !json_is_null(list) && !json_is_array(list)) {
		json_decref(o);
		*why = "leaderboards must be a list of leaderboard names";
		return 400;
	}
	if (!list || json_array_size(list) == 0) {
		v = json_object_get(o, "leaderboard");
		if (!v || json_is_null(v)) {
			json_decref(o);
			*why = "Must provide 'leaderboards' list or 'leaderboard' string";
			return 400;
		}
		int st = string_field(
			o, "leaderboard", out->lbs[0], sizeof(out->lbs[0]),
			lb_name_ok,
			"Must provide 'leaderboards' list or 'leaderboard' string",
			"invalid leaderboard name", why);
		json_decref(o);
		if (st)
			return st;
		out->n = 1;
		return 0;
	}
	if (json_array_size(list) > KB_GW_INVITE_LBS_MAX) {
		json_decref(o);
		*why = "at most 16 leaderboards per invite";
		return 400;
	}
	json_array_foreach(list, i, v)
	{
		const char *s = json_string_value(v);
		if (!s || strlen(s) != json_string_length(v) ||
		    !lb_name_ok(s)) {
			json_decref(o);
			*why = "leaderboards must be a list of leaderboard names";
			return 400;
		}
		int dup = 0;
		for (size_t k = 0; k < out->n && !dup; k++)
			dup = strcmp(out->lbs[k], s) == 0;
		if (!dup)
			memcpy(out->lbs[out->n++], s, strlen(s) + 1);
	}
	json_decref(o);
	return 0;
}

int kb_gw_body_export(const char *buf, size_t len,
		      struct kb_gw_body_export *out, const char **why)
{
	static const char bad_list[] = "leaderboards must be a list of 1 to 64 "
				       "distinct leaderboard names";
	json_t *o = load_object(buf, len, why), *list, *v;
	size_t i;

	memset(out, 0, sizeof(*out));
	if (!o)
		return 400;
	v = json_object_get(o, "private");
	if (v && !json_is_null(v) && !json_is_boolean(v)) {
		json_decref(o);
		*why = "private must be true or false";
		return 400;
	}
	out->private_export = json_is_true(v);
	list = json_object_get(o, "leaderboards");
	if (!list || json_is_null(list)) {
		json_decref(o);
		return 0;
	}
	if (!json_is_array(list) || json_array_size(list) == 0 ||
	    json_array_size(list) > KB_GW_EXPORT_LBS_MAX) {
		json_decref(o);
		*why = bad_list;
		return 400;
	}
	json_array_foreach(list, i, v)
	{
		const char *s = json_string_value(v);
		if (!s || strlen(s) != json_string_length(v) ||
		    !lb_name_ok(s)) {
			json_decref(o);
			*why = bad_list;
			return 400;
		}
		for (size_t k = 0; k < i; k++) {
			if (strcasecmp(out->lbs[k], s) == 0) {
				json_decref(o);
				*why = bad_list;
				return 400;
			}
		}
		snprintf(out->lbs[i], sizeof(out->lbs[i]), "%s", s);
	}
	out->n = json_array_size(list);
	json_decref(o);
	return 0;
}

int kb_gw_body_rate(const char *buf, size_t len, struct kb_gw_body_rate *out,
		    const char **why)
{
	json_t *o = load_object(buf, len, why), *v;
	int st;

	memset(out, 0, sizeof(*out));
	if (!o)
		return 400;
	st = string_field(o, "mode_category", out->category,
			  sizeof(out->category), kb_rules_category_ok,
			  "mode_category must be 'test' or 'leaderboard'",
			  "mode_category must be 'test' or 'leaderboard'", why);
	if (st) {
		json_decref(o);
		return st;
	}
	v = json_object_get(o, "max_submissions_per_hour");
	if (!json_is_integer(v) || json_integer_value(v) < 1 ||
	    json_integer_value(v) > 1000000) {
		json_decref(o);
		*why = "max_submissions_per_hour must be a positive integer";
		return 400;
	}
	out->max = (long)json_integer_value(v);
	json_decref(o);
	return 0;
}

static int visibility_of(json_t *o, int *closed, int required, const char **why)
{
	json_t *v = json_object_get(o, "visibility");
	const char *s = json_string_value(v);

	if (!v && !required) {
		*closed = 0;
		return 0;
	}
	if (s && strcmp(s, "public") == 0 && json_string_length(v) == 6) {
		*closed = 0;
		return 0;
	}
	if (s && strcmp(s, "closed") == 0 && json_string_length(v) == 6) {
		*closed = 1;
		return 0;
	}
	*why = "visibility must be 'public' or 'closed'";
	return 400;
}

int kb_gw_body_visibility(const char *buf, size_t len, int *closed,
			  const char **why)
{
	json_t *o = load_object(buf, len, why);
	int st;

	*closed = 0;
	if (!o)
		return 400;
	st = visibility_of(o, closed, 1, why);
	json_decref(o);
	return st;
}

int kb_gw_body_lb_create(const char *buf, size_t len,
			 struct kb_gw_body_lb_create *out, const char **why)
{
	json_t *o = load_object(buf, len, why);
	int st;

	memset(out, 0, sizeof(*out));
	if (!o)
		return 400;
	/* A directory is one plain name under KB_PROBLEMS_DEV: no path
	 * separators, no "..", so it cannot leave that directory. */
	st = string_field(o, "directory", out->directory,
			  sizeof(out->directory), lb_name_ok,
			  "Missing required field: directory",
			  "Invalid problem directory", why);
	if (!st && (strcmp(out->directory, ".") == 0 ||
		    strstr(out->directory, "..") != NULL)) {
		*why = "Invalid problem directory";
		st = 400;
	}
	if (!st)
		st = visibility_of(o, &out->closed, 0, why);
	json_decref(o);
	return st;
}

static int nonce_ok(const char *s)
{
	return strlen(s) == KB_GW_NONCE_HEX &&
	       strspn(s, "0123456789abcdef") == KB_GW_NONCE_HEX;
}

int kb_gw_oauth_state_parse(const char *state, struct kb_gw_oauth_state *out,
			    const char **why)
{
	unsigned char bin[STATE_MAX];
	char trimmed[STATE_MAX + 1];
	size_t n, binlen = 0;
	json_t *o, *reset;
	int st;

	memset(out, 0, sizeof(*out));
	*why = "Invalid state parameter";
	if (!state || !*state)
		return 400;
	n = strlen(state);
	if (n > STATE_MAX)
		return 400;
	/* Padding is optional (popcorn-cli's encoder may leave it out). */
	while (n > 0 && state[n - 1] == '=')
		n--;
	memcpy(trimmed, state, n);
	trimmed[n] = '\0';
	if (sodium_base642bin(bin, sizeof(bin), trimmed, n, NULL, &binlen, NULL,
			      sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0)
		return 400;
	o = load_object((const char *)bin, binlen, why);
	if (!o) {
		*why = "Invalid state parameter";
		return 400;
	}
	st = string_field(o, "cli_id", out->cli_id, sizeof(out->cli_id),
			  kb_rules_cli_id_ok,
			  "Invalid state parameter: no cli_id",
			  "Invalid state parameter: bad cli_id", why);
	reset = json_object_get(o, "is_reset");
	if (!st && reset && !json_is_null(reset) && !json_is_boolean(reset)) {
		*why = "Invalid state parameter: is_reset must be a boolean";
		st = 400;
	}
	out->reset = json_is_true(reset);
	if (!st && json_object_get(o, "nonce"))
		st = string_field(o, "nonce", out->nonce, sizeof(out->nonce),
				  nonce_ok,
				  "Invalid state parameter: empty nonce",
				  "Invalid state parameter: bad nonce", why);
	json_decref(o);
	return st;
}

int kb_gw_oauth_state_encode(const struct kb_gw_oauth_state *st, char *out,
			     size_t out_size)
{
	json_t *o = json_pack("{s:s,s:b}", "cli_id", st->cli_id, "is_reset",
			      st->reset);
	char *js;
	int rc = 0;

	if (o && st->nonce[0])
		json_object_set_new(o, "nonce", json_string(st->nonce));
	js = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!js)
		return -ENOMEM;
	if (sodium_base64_encoded_len(
		    strlen(js), sodium_base64_VARIANT_URLSAFE_NO_PADDING) >
	    out_size)
		rc = -E2BIG;
	else
		sodium_bin2base64(out, out_size, (const unsigned char *)js,
				  strlen(js),
				  sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	free(js);
	return rc;
}
