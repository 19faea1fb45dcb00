/* kb_route: see router.h. The table is the single place that says which
 * paths exist; handlers never look at the path again. */
#include "router.h"

#include <string.h>

struct route_def {
	enum kb_route_id id;
	const char *method; /* "GET" also admits HEAD */
	const char *allow;
	const char *name;
	const char *segs[5]; /* literal segment, or ":" for a parameter; NULL ends */
};

static const struct route_def routes[] = {
	{KB_ROUTE_HEALTH, "GET", "GET, HEAD", "health", {"health", NULL}},
	{KB_ROUTE_LEADERBOARDS, "GET", "GET, HEAD", "leaderboards",
	 {"leaderboards", NULL}},
	{KB_ROUTE_GPUS, "GET", "GET, HEAD", "gpus", {"gpus", ":", NULL}},
	{KB_ROUTE_SUBMIT, "POST", "POST", "submit",
	 {"submission", ":", ":", ":", NULL}},
	{KB_ROUTE_USER_SUBMISSION, "GET", "GET, HEAD", "user_submission",
	 {"user", "submissions", ":", NULL}},
	{KB_ROUTE_RANKING, "GET", "GET, HEAD", "ranking",
	 {"submissions", ":", ":", NULL}},
	{KB_ROUTE_ADMIN_USERS, "POST", "POST", "admin_users",
	 {"admin", "users", NULL}},
};

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

static int segs_match(const struct route_def *r, char **segs, int n,
		      struct kb_route *out)
{
	int i;

	out->nparams = 0;
	for (i = 0; i < n; i++) {
		const char *want = r->segs[i];
		if (!want)
			return 0;
		if (strcmp(want, ":") == 0) {
			size_t len = strlen(segs[i]);
			if (len == 0 || len >= KB_ROUTE_PARAM_MAX)
				return 0;
			memcpy(out->params[out->nparams++], segs[i], len + 1);
		} else if (strcmp(want, segs[i]) != 0) {
			return 0;
		}
	}
	return r->segs[i] == NULL;
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
	if (n <= 0)
		return 404;
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
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
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (routes[i].id == id)
			return routes[i].name;
	return "none";
}
