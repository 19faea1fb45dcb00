/* kb_dc_interaction: see interaction.h. */
#include "interaction.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kb_util.h"

/* Subcommand groups hold subcommands, which hold options: three levels. */
#define MAX_DEPTH 3
#define CHOICE_NAME_MAX 100

static const char *str_at(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static int add_leaf(struct kb_dc_interaction *it, json_t *o, char *errstr,
		    size_t errstr_size)
{
	struct kb_dc_option *opt;
	json_t *v = json_object_get(o, "value");

	if (it->nopts == KB_DC_MAX_OPTIONS) {
		snprintf(errstr, errstr_size, "too many options");
		return -EINVAL;
	}
	opt = &it->opts[it->nopts++];
	opt->name = str_at(o, "name");
	opt->type = (int)json_integer_value(json_object_get(o, "type"));
	opt->focused = json_is_true(json_object_get(o, "focused"));
	if (!opt->name) {
		snprintf(errstr, errstr_size, "an option has no name");
		return -EINVAL;
	}
	if (json_is_string(v)) {
		opt->str = json_string_value(v);
	} else if (json_is_integer(v)) {
		opt->num = json_integer_value(v);
		opt->real = (double)opt->num;
	} else if (json_is_real(v)) {
		opt->real = json_real_value(v);
		opt->num = (long long)opt->real;
	} else if (json_is_boolean(v)) {
		opt->num = json_is_true(v);
	}
	return 0;
}

/* Walks data.options: appends subcommand names to it->command and
 * collects the leaves. */
static int walk(struct kb_dc_interaction *it, json_t *opts, int depth,
		char *errstr, size_t errstr_size)
{
	size_t i;
	json_t *o;

	if (!opts)
		return 0;
	if (!json_is_array(opts) || depth > MAX_DEPTH) {
		snprintf(errstr, errstr_size, "malformed options");
		return -EINVAL;
	}
	json_array_foreach(opts, i, o)
	{
		int type = (int)json_integer_value(json_object_get(o, "type"));
		if (!json_is_object(o)) {
			snprintf(errstr, errstr_size, "malformed option");
			return -EINVAL;
		}
		if (type == KB_DC_OPT_SUBCOMMAND || type == KB_DC_OPT_GROUP) {
			const char *name = str_at(o, "name");
			size_t n = strlen(it->command);
			if (!name ||
			    n + 1 + strlen(name) >= sizeof(it->command)) {
				snprintf(errstr, errstr_size,
					 "malformed subcommand");
				return -EINVAL;
			}
			snprintf(it->command + n, sizeof(it->command) - n,
				 " %s", name);
			if (walk(it, json_object_get(o, "options"), depth + 1,
				 errstr, errstr_size) < 0)
				return -EINVAL;
		} else if (add_leaf(it, o, errstr, errstr_size) < 0) {
			return -EINVAL;
		}
	}
	return 0;
}

static void parse_user(struct kb_dc_interaction *it)
{
	json_t *member = json_object_get(it->root, "member");
	json_t *user = json_object_get(member, "user");
	json_t *roles = json_object_get(member, "roles");
	size_t i;
	json_t *r;

	if (!user)
		user = json_object_get(it->root, "user");
	it->user_id = str_at(user, "id");
	it->user_name = str_at(user, "global_name");
	if (!it->user_name || !*it->user_name)
		it->user_name = str_at(user, "username");
	json_array_foreach(roles, i, r)
	{
		if (json_is_string(r) && it->nroles < KB_DC_MAX_ROLES)
			it->roles[it->nroles++] = json_string_value(r);
	}
}

int kb_dc_interaction_parse(const char *body, size_t len,
			    struct kb_dc_interaction *out, char *errstr,
			    size_t errstr_size)
{
	json_error_t jerr;
	json_t *data;

	memset(out, 0, sizeof(*out));
	out->root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(out->root)) {
		snprintf(errstr, errstr_size, "body is not a JSON object");
		return -EINVAL;
	}
	out->type = (int)json_integer_value(json_object_get(out->root, "type"));
	if (out->type <= 0) {
		snprintf(errstr, errstr_size, "no interaction type");
		return -EINVAL;
	}
	out->id = str_at(out->root, "id");
	out->token = str_at(out->root, "token");
	out->application_id = str_at(out->root, "application_id");
	out->guild_id = str_at(out->root, "guild_id");
	out->channel_id = str_at(out->root, "channel_id");
	if (!out->channel_id)
		out->channel_id =
			str_at(json_object_get(out->root, "channel"), "id");
	parse_user(out);
	if (out->type == KB_DC_IT_PING)
		return 0;
	if (!out->token || !out->application_id || !out->user_id) {
		snprintf(errstr, errstr_size,
			 "interaction without token, "
			 "application_id or user");
		return -EINVAL;
	}
	if (out->type != KB_DC_IT_COMMAND && out->type != KB_DC_IT_AUTOCOMPLETE)
		return 0;
	data = json_object_get(out->root, "data");
	const char *name = str_at(data, "name");
	if (!name || strlen(name) >= sizeof(out->command)) {
		snprintf(errstr, errstr_size, "command without a name");
		return -EINVAL;
	}
	snprintf(out->command, sizeof(out->command), "%s", name);
	return walk(out, json_object_get(data, "options"), 1, errstr,
		    errstr_size);
}

void kb_dc_interaction_clear(struct kb_dc_interaction *it)
{
	if (!it)
		return;
	json_decref(it->root);
	memset(it, 0, sizeof(*it));
}

const struct kb_dc_option *kb_dc_opt(const struct kb_dc_interaction *it,
				     const char *name)
{
	for (size_t i = 0; i < it->nopts; i++)
		if (strcmp(it->opts[i].name, name) == 0)
			return &it->opts[i];
	return NULL;
}

const char *kb_dc_opt_str(const struct kb_dc_interaction *it, const char *name)
{
	const struct kb_dc_option *o = kb_dc_opt(it, name);

	return o ? o->str : NULL;
}

const struct kb_dc_option *kb_dc_focused(const struct kb_dc_interaction *it)
{
	for (size_t i = 0; i < it->nopts; i++)
		if (it->opts[i].focused)
			return &it->opts[i];
	return NULL;
}

static json_t *resolved(const struct kb_dc_interaction *it, const char *kind)
{
	json_t *data = json_object_get(it->root, "data");

	return json_object_get(json_object_get(data, "resolved"), kind);
}

int kb_dc_attachment(const struct kb_dc_interaction *it, const char *id,
		     struct kb_dc_attachment *out)
{
	json_t *a = id ? json_object_get(resolved(it, "attachments"), id)
		       : NULL;
	json_t *size = json_object_get(a, "size");

	memset(out, 0, sizeof(*out));
	out->id = id;
	out->filename = str_at(a, "filename");
	out->url = str_at(a, "url");
	out->content_type = str_at(a, "content_type");
	out->size = json_is_integer(size) ? json_integer_value(size) : -1;
	return out->filename && out->url ? 0 : -ENOENT;
}

const char *kb_dc_resolved_user_name(const struct kb_dc_interaction *it,
				     const char *id)
{
	json_t *u = id ? json_object_get(resolved(it, "users"), id) : NULL;
	const char *name = str_at(u, "global_name");

	return name && *name ? name : str_at(u, "username");
}

/* 1 when the snowflake id appears as a whole item of the list. */
static int in_list(const char *ids, const char *id)
{
	size_t n = id ? strlen(id) : 0;
	const char *p = ids;

	if (!n || !ids)
		return 0;
	while (*p) {
		size_t span;
		p += strspn(p, ", \t");
		span = strcspn(p, ", \t");
		if (span == n && memcmp(p, id, n) == 0)
			return 1;
		p += span;
	}
	return 0;
}

int kb_dc_is_listed(const struct kb_dc_interaction *it, const char *ids)
{
	if (in_list(ids, it->user_id))
		return 1;
	for (size_t i = 0; i < it->nroles; i++)
		if (in_list(ids, it->roles[i]))
			return 1;
	return 0;
}

json_t *kb_dc_resp_pong(void)
{
	return json_pack("{s:i}", "type", KB_DC_R_PONG);
}

static json_t *no_mentions(const char *user)
{
	json_t *am = json_pack("{s:[]}", "parse");

	if (am && user)
		json_object_set_new(am, "users", json_pack("[s]", user));
	return am;
}

json_t *kb_dc_message_body(const char *content, int ephemeral,
			   const char *const *file_names, size_t nfiles,
			   const char *mention_user)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "content", json_string(content ? content : ""));
	json_object_set_new(o, "allowed_mentions", no_mentions(mention_user));
	if (ephemeral)
		json_object_set_new(o, "flags",
				    json_integer(KB_DC_FLAG_EPHEMERAL));
	if (nfiles) {
		json_t *atts = json_array();
		for (size_t i = 0; i < nfiles; i++)
			json_array_append_new(atts, json_pack("{s:I,s:s}", "id",
							      (json_int_t)i,
							      "filename",
							      file_names[i]));
		json_object_set_new(o, "attachments", atts);
	}
	return o;
}

json_t *kb_dc_resp_message(const char *content, int ephemeral)
{
	json_t *data = kb_dc_message_body(content, ephemeral, NULL, 0, NULL);

	if (!data)
		return NULL;
	return json_pack("{s:i,s:o}", "type", KB_DC_R_MESSAGE, "data", data);
}

json_t *kb_dc_resp_deferred(int ephemeral)
{
	if (ephemeral)
		return json_pack("{s:i,s:{s:i}}", "type", KB_DC_R_DEFERRED,
				 "data", "flags", KB_DC_FLAG_EPHEMERAL);
	return json_pack("{s:i}", "type", KB_DC_R_DEFERRED);
}

/* Cuts s to at most max code points (choice names are limited so). */
static json_t *cut_string(const char *s, size_t max)
{
	size_t i = 0, count = 0;

	while (s[i] && count < max) {
		i++;
		while (((unsigned char)s[i] & 0xC0) == 0x80)
			i++;
		count++;
	}
	return json_stringn(s, i);
}

json_t *kb_dc_resp_choices(const char *const *names, const char *const *values,
			   size_t n)
{
	json_t *choices = json_array();

	if (!choices)
		return NULL;
	for (size_t i = 0; i < n && i < KB_DC_CHOICES_MAX; i++) {
		const char *v = values && values[i] ? values[i] : names[i];
		json_array_append_new(
			choices,
			json_pack("{s:o,s:o}", "name",
				  cut_string(names[i], CHOICE_NAME_MAX),
				  "value", cut_string(v, CHOICE_NAME_MAX)));
	}
	return json_pack("{s:i,s:{s:o}}", "type", KB_DC_R_AUTOCOMPLETE, "data",
			 "choices", choices);
}
