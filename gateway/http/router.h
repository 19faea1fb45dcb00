/* kb_route: the gateway's routing table as a pure function.
 *
 * kb_route_match() maps a method and a decoded path to a route and its
 * path parameters. A path is split on '/'; one trailing slash is ignored;
 * empty segments never match a parameter. HEAD is accepted wherever GET
 * is (libmicrohttpd drops the body). A path that exists with another
 * method is 405 with the Allow list; anything else is 404.
 *
 * The bare path "/" is the web index (KB_ROUTE_WEB_INDEX); every other
 * web page lives under /web/, so "web" is the one first segment the web
 * pages take from leaderboard names.
 *
 * Routes are tried in table order. The streaming route POST
 * /{lb}/{gpu}/{mode} begins with a parameter: it never matches a path
 * whose first segment is the literal first segment of another route
 * ("admin", "submission", "user", ...), so those keep their 404/405
 * answers and a leaderboard with such a name is reachable through
 * /submission/... only.
 *
 * Each route also lists the query parameters it accepts
 * (kb_route_query_ok()); anything else is a client error (400), so that a
 * misspelt "?limt=5" is reported instead of silently ignored.
 *
 * To add an endpoint: add an enum value here and one row to the table in
 * router.c, then a handler (http.h) for it.
 * Pure and thread-safe.
 */
#ifndef KB_ROUTER_H
#define KB_ROUTER_H

#include <stddef.h>

enum kb_route_id {
	KB_ROUTE_NONE = 0,
	KB_ROUTE_HEALTH,           /* GET  /health */
	KB_ROUTE_LEADERBOARDS,     /* GET  /leaderboards */
	KB_ROUTE_GPUS,             /* GET  /gpus/{lb} */
	KB_ROUTE_SUBMIT,           /* POST /submission/{lb}/{gpu}/{mode} */
	KB_ROUTE_USER_SUBMISSION,  /* GET  /user/submissions/{id} */
	KB_ROUTE_RANKING,          /* GET  /submissions/{lb}/{gpu} */
	KB_ROUTE_ADMIN_USERS,      /* POST /admin/users */
	KB_ROUTE_ADMIN_USER_CLI,   /* DELETE /admin/users/{user_id}/cli-id */
	KB_ROUTE_USER_SUBMISSIONS, /* GET    /user/submissions */
	KB_ROUTE_USER_SUBMISSION_DELETE, /* DELETE /user/submissions/{id} */
	KB_ROUTE_SUBMISSION_COUNT, /* GET    /submission_count/{lb}/{gpu} */
	KB_ROUTE_RUNNER_QUEUE,     /* GET    /runner_queue/{gpu} */
	KB_ROUTE_AUTH_INIT,        /* GET    /auth/init */
	KB_ROUTE_AUTH_CLI,         /* GET    /auth/cli/{provider} */
	KB_ROUTE_AUTH_START,       /* GET    /auth/start/{provider} */
	KB_ROUTE_USER_JOIN,        /* POST   /user/join */
	KB_ROUTE_ADMIN_START,      /* POST   /admin/start */
	KB_ROUTE_ADMIN_STOP,       /* POST   /admin/stop */
	KB_ROUTE_ADMIN_BAN,        /* POST   /admin/ban/{user_id} */
	KB_ROUTE_ADMIN_UNBAN,      /* DELETE /admin/ban/{user_id} */
	KB_ROUTE_ADMIN_LB_CREATE,  /* POST   /admin/leaderboards */
	KB_ROUTE_ADMIN_LB_DELETE,  /* DELETE /admin/leaderboards/{lb} */
	KB_ROUTE_ADMIN_LB_VISIBILITY, /* POST   /admin/leaderboards/{lb}/visibility */
	KB_ROUTE_ADMIN_LB_SUBMISSIONS, /* GET    /admin/leaderboards/{lb}/submissions */
	KB_ROUTE_ADMIN_LB_INVITES, /* GET    /admin/leaderboards/{lb}/invites */
	KB_ROUTE_ADMIN_RATE_SET, /* PUT    /admin/leaderboards/{lb}/rate-limits */
	KB_ROUTE_ADMIN_RATE_GET, /* GET    /admin/leaderboards/{lb}/rate-limits */
	KB_ROUTE_ADMIN_RATE_DELETE, /* DELETE /admin/leaderboards/{lb}/rate-limits/{cat} */
	KB_ROUTE_ADMIN_INVITES,           /* POST   /admin/invites */
	KB_ROUTE_ADMIN_INVITE_REVOKE,     /* DELETE /admin/invites/{code} */
	KB_ROUTE_ADMIN_STATS,             /* GET    /admin/stats */
	KB_ROUTE_ADMIN_UPDATE_PROBLEMS,   /* POST   /admin/update-problems */
	KB_ROUTE_ADMIN_SUBMISSION,        /* GET    /admin/submissions/{id} */
	KB_ROUTE_ADMIN_SUBMISSION_DELETE, /* DELETE /admin/submissions/{id} */
	KB_ROUTE_ADMIN_SUBMIT, /* POST   /admin/submission/{lb}/{gpu}/{mode} */
	KB_ROUTE_ADMIN_EXPORT, /* POST   /admin/export (JSON Lines) */
	KB_ROUTE_DISCORD_INTERACTIONS, /* POST   /discord/interactions */
	KB_ROUTE_STREAM,               /* POST   /{lb}/{gpu}/{mode} (SSE) */
	KB_ROUTE_PROFILE,              /* POST   /profile/{lb}/{gpu} (SSE) */
	KB_ROUTE_METRICS,              /* GET    /metrics (Prometheus) */
	KB_ROUTE_WEB_INDEX,            /* GET    / (web pages: gateway/web/) */
	KB_ROUTE_WEB_BOARD,            /* GET    /web/lb/{lb} */
	KB_ROUTE_WEB_TEMPLATE,         /* GET    /web/lb/{lb}/template/{lang} */
	KB_ROUTE_WEB_CODE,             /* GET    /web/lb/{lb}/code/{id} */
	KB_ROUTE_WEB_USER,             /* GET    /web/user/{user_id} */
	KB_ROUTE_WEB_ME,               /* GET    /web/me */
	KB_ROUTE_WEB_STATIC,           /* GET    /web/static/{file} */
	KB_ROUTE_WEB_EVENTS,           /* GET    /web/events?lb= (SSE) */
	KB_ROUTE_COUNT
};

#define KB_ROUTE_MAX_PARAMS 3
#define KB_ROUTE_PARAM_MAX 128 /* longer segments do not match (404) */

struct kb_route {
	enum kb_route_id id;
	const char *allow; /* for 405: e.g. "GET, HEAD"; static */
	size_t nparams;
	char params[KB_ROUTE_MAX_PARAMS][KB_ROUTE_PARAM_MAX];
};

/* Returns 0 with *out filled, 404 (no such path) or 405 (path exists,
 * method not allowed; out->allow set). out is always initialised. */
int kb_route_match(const char *method, const char *path, struct kb_route *out);

/* The route's name for logs ("health", "submit", ...). Static. */
const char *kb_route_name(enum kb_route_id id);

/* What each path parameter of a route names, one character per
 * parameter: 'l' a leaderboard, 'g' a gpu, anything else neither; ""
 * for routes without such parameters. The HTTP layer rewrites boards and
 * gpus to their canonical spelling through it (names match
 * case-insensitively). Static. */
const char *kb_route_param_kinds(enum kb_route_id id);

/* 1 if the route accepts the query parameter name, else 0. */
int kb_route_query_ok(enum kb_route_id id, const char *name);

#endif
