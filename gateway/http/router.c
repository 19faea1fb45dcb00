/* kb_route: see router.h. The table is the single place that says which
 * paths exist and which query parameters they take; handlers never look at
 * the path again. */
#include "router.h"

#include <string.h>

struct route_def {
	enum kb_route_id id;
	const char *method; /* "GET" also admits HEAD */
	const char *allow;
	const char *name;
	const char *
		segs[6]; /* literal segment, or ":" for a parameter; NULL ends */
	const char *query[5]; /* accepted query parameters; NULL ends */
};

#define GET "GET", "GET, HEAD"
#define POST "POST", "POST"
#define PUT "PUT", "PUT"
#define DELETE "DELETE", "DELETE"
/* Several methods on one path: the Allow list names all of them. */
#define GET_DELETE_A "GET, HEAD, DELETE"
#define GET_PUT_A "GET, HEAD, PUT"
#define POST_DELETE_A "POST, DELETE"

static const struct route_def routes[] = {
	{KB_ROUTE_HEALTH, GET, "health", {"health"}, {0}},
	{KB_ROUTE_LEADERBOARDS, GET, "leaderboards", {"leaderboards"}, {0}},
	{KB_ROUTE_GPUS, GET, "gpus", {"gpus", ":"}, {0}},
	{KB_ROUTE_SUBMIT, POST, "submit", {"submission", ":", ":", ":"}, {0}},
	{KB_ROUTE_USER_SUBMISSIONS,
	 GET,
	 "user_submissions",
	 {"user", "submissions"},
	 {"leaderboard", "limit", "offset"}},
	{KB_ROUTE_USER_SUBMISSION,
	 "GET",
	 GET_DELETE_A,
	 "user_submission",
	 {"user", "submissions", ":"},
	 {0}},
	{KB_ROUTE_USER_SUBMISSION_DELETE,
	 "DELETE",
	 GET_DELETE_A,
	 "user_submission_delete",
	 {"user", "submissions", ":"},
	 {0}},
	{KB_ROUTE_USER_JOIN, POST, "user_join", {"user", "join"}, {0}},
	{KB_ROUTE_RANKING,
	 GET,
	 "ranking",
	 {"submissions", ":", ":"},
	 {"limit", "offset"}},
	{KB_ROUTE_SUBMISSION_COUNT,
	 GET,
	 "submission_count",
	 {"submission_count", ":", ":"},
	 {"user_id"}},
	{KB_ROUTE_RUNNER_QUEUE, GET, "runner_queue", {"runner_queue", ":"}, {0}},
	{KB_ROUTE_AUTH_INIT, GET, "auth_init", {"auth", "init"}, {"provider"}},
	{KB_ROUTE_AUTH_CLI,
	 GET,
	 "auth_cli",
	 {"auth", "cli", ":"},
	 {"code", "state"}},
	{KB_ROUTE_AUTH_START,
	 GET,
	 "auth_start",
	 {"auth", "start", ":"},
	 {"state"}},
	{KB_ROUTE_ADMIN_USERS, POST, "admin_users", {"admin", "users"}, {0}},
	{KB_ROUTE_ADMIN_USER_CLI,
	 DELETE,
	 "admin_user_cli",
	 {"admin", "users", ":", "cli-id"},
	 {0}},
	{KB_ROUTE_ADMIN_START, POST, "admin_start", {"admin", "start"}, {0}},
	{KB_ROUTE_ADMIN_STOP, POST, "admin_stop", {"admin", "stop"}, {0}},
	{KB_ROUTE_ADMIN_BAN,
	 "POST",
	 POST_DELETE_A,
	 "admin_ban",
	 {"admin", "ban", ":"},
	 {0}},
	{KB_ROUTE_ADMIN_UNBAN,
	 "DELETE",
	 POST_DELETE_A,
	 "admin_unban",
	 {"admin", "ban", ":"},
	 {0}},
	{KB_ROUTE_ADMIN_LB_CREATE,
	 POST,
	 "admin_lb_create",
	 {"admin", "leaderboards"},
	 {0}},
	{KB_ROUTE_ADMIN_LB_DELETE,
	 DELETE,
	 "admin_lb_delete",
	 {"admin", "leaderboards", ":"},
	 {"force"}},
	{KB_ROUTE_ADMIN_LB_VISIBILITY,
	 POST,
	 "admin_lb_visibility",
	 {"admin", "leaderboards", ":", "visibility"},
	 {0}},
	{KB_ROUTE_ADMIN_LB_SUBMISSIONS,
	 GET,
	 "admin_lb_submissions",
	 {"admin", "leaderboards", ":", "submissions"},
	 {"limit", "offset"}},
	{KB_ROUTE_ADMIN_LB_INVITES,
	 GET,
	 "admin_lb_invites",
	 {"admin", "leaderboards", ":", "invites"},
	 {0}},
	{KB_ROUTE_ADMIN_RATE_SET,
	 "PUT",
	 GET_PUT_A,
	 "admin_rate_set",
	 {"admin", "leaderboards", ":", "rate-limits"},
	 {0}},
	{KB_ROUTE_ADMIN_RATE_GET,
	 "GET",
	 GET_PUT_A,
	 "admin_rate_get",
	 {"admin", "leaderboards", ":", "rate-limits"},
	 {0}},
	{KB_ROUTE_ADMIN_RATE_DELETE,
	 DELETE,
	 "admin_rate_delete",
	 {"admin", "leaderboards", ":", "rate-limits", ":"},
	 {0}},
	{KB_ROUTE_ADMIN_INVITES,
	 POST,
	 "admin_invites",
	 {"admin", "invites"},
	 {0}},
	{KB_ROUTE_ADMIN_INVITE_REVOKE,
	 DELETE,
	 "admin_invite_revoke",
	 {"admin", "invites", ":"},
	 {0}},
	{KB_ROUTE_ADMIN_UPDATE_PROBLEMS,
	 POST,
	 "admin_update_problems",
	 {"admin", "update-problems"},
	 {0}},
	{KB_ROUTE_ADMIN_STATS,
	 GET,
	 "admin_stats",
	 {"admin", "stats"},
	 {"last_day_only", "leaderboard_name"}},
	{KB_ROUTE_ADMIN_SUBMISSION,
	 "GET",
	 GET_DELETE_A,
	 "admin_submission",
	 {"admin", "submissions", ":"},
	 {0}},
	{KB_ROUTE_ADMIN_SUBMISSION_DELETE,
	 "DELETE",
	 GET_DELETE_A,
	 "admin_submission_delete",
	 {"admin", "submissions", ":"},
	 {0}},
	{KB_ROUTE_ADMIN_SUBMIT,
	 POST,
	 "admin_submit",
	 {"admin", "submission", ":", ":", ":"},
	 {0}},
	{KB_ROUTE_ADMIN_EXPORT, POST, "admin_export", {"admin", "export"}, {0}},
	{KB_ROUTE_DISCORD_INTERACTIONS,
	 POST,
	 "discord_interactions",
	 {"discord", "interactions"},
	 {0}},
	{KB_ROUTE_METRICS, GET, "metrics", {"metrics"}, {0}},
	/* The web pages (gateway/web/): "/" alone, the rest under /web/. */
	{KB_ROUTE_WEB_INDEX, GET, "web_index", {NULL}, {0}},
	{KB_ROUTE_WEB_BOARD,
	 GET,
	 "web_board",
	 {"web", "lb", ":"},
	 {"gpu", "user", "view", "scale", "range"}},
	{KB_ROUTE_WEB_TEMPLATE,
	 GET,
	 "web_template",
	 {"web", "lb", ":", "template", ":"},
	 {0}},
	{KB_ROUTE_WEB_CODE,
	 GET,
	 "web_code",
	 {"web", "lb", ":", "code", ":"},
	 {0}},
	{KB_ROUTE_WEB_USER, GET, "web_user", {"web", "user", ":"}, {0}},
	{KB_ROUTE_WEB_ME, GET, "web_me", {"web", "me"}, {0}},
	{KB_ROUTE_WEB_STATIC, GET, "web_static", {"web", "static", ":"}, {0}},
	{KB_ROUTE_WEB_EVENTS, GET, "web_events", {"web", "events"}, {"lb"}},
	/* popcorn-cli's hosted profiling: the options come as form fields. */
	{KB_ROUTE_PROFILE, POST, "profile", {"profile", ":", ":"}, {0}},
	/* Last: its first segment is a parameter (see router.h). */
	{KB_ROUTE_STREAM, POST, "stream", {":", ":", ":"}, {0}},
};

#define NROUTES (sizeof(routes) / sizeof(routes[0]))
#define MAX_SEGS 8

/* Splits path into at most MAX_SEGS segments (pointers into buf). Returns
 * the count, or -1 when the path is not absolute, too deep or too long. */
static int split(const char *path, char *buf, size_t size, char **segs)
{
	size_t n = strlen(path);
	int count = 0;

	if (n == 0 || path[0] != '/' || n >= size)
		return -1;
	memcpy(buf, path + 1, n); /* includes the NUL */
	n--;
	if (n > 0 && buf[n - 1] == '/')
		buf[--n] = '\0';
	if (n == 0)
		return 0;
	for (char *s = buf;;) {
		if (count == MAX_SEGS)
			return -1;
		segs[count++] = s;
		char *slash = strchr(s, '/');
		if (!slash)
			break;
		*slash = '\0';
		s = slash + 1;
	}
	return count;
}

static int method_ok(const struct route_def *r, const char *method)
{
	if (strcmp(method, r->method) == 0)
		return 1;
	return strcmp(r->method, "GET") == 0 && strcmp(method, "HEAD") == 0;
}

/* 1 if s is the literal first segment of some route. */
static int reserved_first(const char *s)
{
	for (size_t i = 0; i < NROUTES; i++)
		if (routes[i].segs[0] && strcmp(routes[i].segs[0], ":") != 0 &&
		    strcmp(routes[i].segs[0], s) == 0)
			return 1;
	return 0;
}

static int segs_match(const struct route_def *r, char **segs, int n,
		      struct kb_route *out)
{
	int i;

	out->nparams = 0;
	if (n > 0 && r->segs[0] && strcmp(r->segs[0], ":") == 0 &&
	    reserved_first(segs[0]))
		return 0;
	for (i = 0; i < n; i++) {
		const char *want = i < 6 ? r->segs[i] : NULL;
		if (!want)
			return 0;
		if (strcmp(want, ":") == 0) {
			size_t len = strlen(segs[i]);
			if (len == 0 || len >= KB_ROUTE_PARAM_MAX ||
			    out->nparams == KB_ROUTE_MAX_PARAMS)
				return 0;
			memcpy(out->params[out->nparams++], segs[i], len + 1);
		} else if (strcmp(want, segs[i]) != 0) {
			return 0;
		}
	}
	return i == 6 || r->segs[i] == NULL;
}

int kb_route_match(const char *method, const char *path, struct kb_route *out)
{
	char buf[1024];
	char *segs[MAX_SEGS];
	int n;
	const char *allow = NULL;

	memset(out, 0, sizeof(*out));
	if (!method || !path)
		return 404;
	n = split(path, buf, sizeof(buf), segs);
	/* Only "/" itself is the web index ("//" also splits into nothing). */
	if (n < 0 || (n == 0 && strcmp(path, "/") != 0))
		return 404;
	for (size_t i = 0; i < NROUTES; i++) {
		struct kb_route tmp;
		if (!segs_match(&routes[i], segs, n, &tmp))
			continue;
		if (!method_ok(&routes[i], method)) {
			allow = routes[i].allow;
			continue;
		}
		*out = tmp;
		out->id = routes[i].id;
		out->allow = routes[i].allow;
		return 0;
	}
	memset(out, 0, sizeof(*out));
	if (allow) {
		out->allow = allow;
		return 405;
	}
	return 404;
}

const char *kb_route_name(enum kb_route_id id)
{
	for (size_t i = 0; i < NROUTES; i++)
		if (routes[i].id == id)
			return routes[i].name;
	return "none";
}

int kb_route_query_ok(enum kb_route_id id, const char *name)
{
	if (!name)
		return 0;
	for (size_t i = 0; i < NROUTES; i++) {
		if (routes[i].id != id)
			continue;
		for (size_t q = 0; q < 5 && routes[i].query[q]; q++)
			if (strcmp(routes[i].query[q], name) == 0)
				return 1;
		return 0;
	}
	return 0;
}

const char *kb_route_param_kinds(enum kb_route_id id)
{
	switch (id) {
	case KB_ROUTE_GPUS:
	case KB_ROUTE_ADMIN_LB_DELETE:
	case KB_ROUTE_ADMIN_LB_VISIBILITY:
	case KB_ROUTE_ADMIN_LB_SUBMISSIONS:
	case KB_ROUTE_ADMIN_LB_INVITES:
	case KB_ROUTE_ADMIN_RATE_SET:
	case KB_ROUTE_ADMIN_RATE_GET:
	case KB_ROUTE_ADMIN_RATE_DELETE:
	case KB_ROUTE_WEB_BOARD:
	case KB_ROUTE_WEB_TEMPLATE:
	case KB_ROUTE_WEB_CODE:
		return "l";
	case KB_ROUTE_SUBMIT:
	case KB_ROUTE_RANKING:
	case KB_ROUTE_SUBMISSION_COUNT:
	case KB_ROUTE_ADMIN_SUBMIT:
	case KB_ROUTE_STREAM:
	case KB_ROUTE_PROFILE:
		return "lg";
	case KB_ROUTE_RUNNER_QUEUE:
		return "g";
	default:
		return "";
	}
}
