/* kb_dc_interaction: Discord interaction payloads as C structs, and the
 * JSON of our answers to them. No I/O.
 *
 * An interaction (API v10) is a JSON object with type (1 PING,
 * 2 APPLICATION_COMMAND, 3 MESSAGE_COMPONENT, 4 AUTOCOMPLETE, 5 MODAL),
 * id, token, application_id, guild_id / channel_id, the invoking user
 * (member.user inside a guild, with member.roles; user in DMs) and, for
 * commands, data: the command name and a tree of options whose inner
 * nodes are subcommand groups (type 2) and subcommands (type 1). Attachment
 * options (type 11) carry an attachment id that data.resolved.attachments
 * maps to {id, filename, size, url, ...}; user options (type 6) map
 * through data.resolved.users.
 *
 * kb_dc_interaction_parse() flattens this: the command path joined by
 * spaces ("leaderboard submit ranked") and the leaf options. All strings
 * point into the parsed document, which the struct owns until
 * kb_dc_interaction_clear().
 *
 * Thread-safety: pure; a parsed interaction belongs to one thread.
 */
#ifndef KB_DC_INTERACTION_H
#define KB_DC_INTERACTION_H

#include <jansson.h>
#include <stddef.h>

enum kb_dc_itype {
	KB_DC_IT_PING = 1,
	KB_DC_IT_COMMAND = 2,
	KB_DC_IT_COMPONENT = 3,
	KB_DC_IT_AUTOCOMPLETE = 4,
	KB_DC_IT_MODAL = 5,
};

enum kb_dc_opt_type {
	KB_DC_OPT_SUBCOMMAND = 1,
	KB_DC_OPT_GROUP = 2,
	KB_DC_OPT_STRING = 3,
	KB_DC_OPT_INTEGER = 4,
	KB_DC_OPT_BOOLEAN = 5,
	KB_DC_OPT_USER = 6,
	KB_DC_OPT_CHANNEL = 7,
	KB_DC_OPT_ROLE = 8,
	KB_DC_OPT_MENTIONABLE = 9,
	KB_DC_OPT_NUMBER = 10,
	KB_DC_OPT_ATTACHMENT = 11,
};

/* Response (callback) types. */
enum kb_dc_rtype {
	KB_DC_R_PONG = 1,
	KB_DC_R_MESSAGE = 4,
	KB_DC_R_DEFERRED = 5,
	KB_DC_R_AUTOCOMPLETE = 8,
};

#define KB_DC_FLAG_EPHEMERAL 64
#define KB_DC_MAX_OPTIONS 16
#define KB_DC_MAX_ROLES 64
/* Limits of a message (in characters as Discord counts them) and of the
 * choices of one autocomplete answer. */
#define KB_DC_CONTENT_MAX 2000
#define KB_DC_CHOICES_MAX 25

struct kb_dc_option {
	const char *name;
	int type;        /* enum kb_dc_opt_type */
	const char *str; /* string, user/channel/role/attachment ids; else NULL */
	long long num;   /* integer, boolean */
	double real;     /* number (and integer) */
	int focused;     /* autocomplete: the option being typed */
};

struct kb_dc_attachment {
	const char *id;
	const char *filename;
	const char *url;
	const char *content_type; /* may be NULL */
	long long size;           /* bytes, -1 when absent */
};

struct kb_dc_interaction {
	json_t *root;
	int type;
	const char *id, *token, *application_id;
	const char *guild_id, *channel_id; /* NULL outside a guild / unknown */
	const char *user_id;               /* always set for commands */
	const char *user_name;             /* global_name, else username */
	const char *roles[KB_DC_MAX_ROLES];
	size_t nroles;
	char command[96]; /* "leaderboard submit ranked" */
	struct kb_dc_option opts[KB_DC_MAX_OPTIONS];
	size_t nopts;
};

/* Parses a request body. Returns 0, or -EINVAL with errstr saying what is
 * wrong (not JSON, no type, a command without a name or a user, options
 * too deep or too many). *out is zeroed first and is safe to clear on
 * error. */
int kb_dc_interaction_parse(const char *body, size_t len,
			    struct kb_dc_interaction *out, char *errstr,
			    size_t errstr_size);
void kb_dc_interaction_clear(struct kb_dc_interaction *it);

/* The leaf option called name, or NULL. */
const struct kb_dc_option *kb_dc_opt(const struct kb_dc_interaction *it,
				     const char *name);
/* Its string value, or NULL when absent or not a string-like option. */
const char *kb_dc_opt_str(const struct kb_dc_interaction *it, const char *name);
/* The focused option of an autocomplete interaction, or NULL. */
const struct kb_dc_option *kb_dc_focused(const struct kb_dc_interaction *it);

/* The resolved attachment of an attachment option's id. Returns 0 or
 * -ENOENT (no such attachment, or without url/filename). */
int kb_dc_attachment(const struct kb_dc_interaction *it, const char *id,
		     struct kb_dc_attachment *out);
/* The display name of a resolved user (global_name, else username), or
 * NULL. */
const char *kb_dc_resolved_user_name(const struct kb_dc_interaction *it,
				     const char *id);

/* 1 when the user id or one of the member's roles is in the list ids
 * (separated by commas and/or spaces; snowflakes). */
int kb_dc_is_listed(const struct kb_dc_interaction *it, const char *ids);

/* ---- answers (new references; NULL only when out of memory) ---- */

json_t *kb_dc_resp_pong(void);
/* A message; mentions are never parsed from content (allowed_mentions
 * empty), so user text cannot ping anyone. */
json_t *kb_dc_resp_message(const char *content, int ephemeral);
json_t *kb_dc_resp_deferred(int ephemeral);
/* choices: n names and values (value NULL: same as name); at most 25 are
 * used, names cut to 100 characters. */
json_t *kb_dc_resp_choices(const char *const *names, const char *const *values,
			   size_t n);

/* The body of a message create/edit (content, flags, allowed_mentions, and
 * one attachments entry per file name, ids 0..n-1). mention_user: a user id
 * that may be pinged, or NULL for none. */
json_t *kb_dc_message_body(const char *content, int ephemeral,
			   const char *const *file_names, size_t nfiles,
			   const char *mention_user);

#endif
