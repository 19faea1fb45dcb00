/* kb_route: the gateway's routing table as a pure function.
 *
 * kb_route_match() maps a method and a decoded path to a route and its
 * path parameters. A path is split on '/'; one trailing slash is ignored;
 * empty segments never match a parameter. HEAD is accepted wherever GET
 * is (libmicrohttpd drops the body). A path that exists with another
 * method is 405 with the Allow list; anything else is 404.
 * Pure and thread-safe.
 */
#ifndef KB_ROUTER_H
#define KB_ROUTER_H

#include <stddef.h>

enum kb_route_id {
	KB_ROUTE_NONE = 0,
	KB_ROUTE_HEALTH,          /* GET  /health */
	KB_ROUTE_LEADERBOARDS,    /* GET  /leaderboards */
	KB_ROUTE_GPUS,            /* GET  /gpus/{lb} */
	KB_ROUTE_SUBMIT,          /* POST /submission/{lb}/{gpu}/{mode} */
	KB_ROUTE_USER_SUBMISSION, /* GET  /user/submissions/{id} */
	KB_ROUTE_RANKING,         /* GET  /submissions/{lb}/{gpu} */
	KB_ROUTE_ADMIN_USERS,     /* POST /admin/users */
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

#endif
