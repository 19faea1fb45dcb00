/* The routing table: path + method -> route and parameters, 404, 405. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "http/router.h"
#include "kb_check_main.h"

static struct kb_route R;

static int route(const char *method, const char *path)
{
	return kb_route_match(method, path, &R);
}

START_TEST(every_route)
{
	ck_assert_int_eq(route("GET", "/health"), 0);
	ck_assert_int_eq(R.id, KB_ROUTE_HEALTH);
	ck_assert_uint_eq(R.nparams, 0);

	ck_assert_int_eq(route("GET", "/leaderboards"), 0);
	ck_assert_int_eq(R.id, KB_ROUTE_LEADERBOARDS);

	ck_assert_int_eq(route("GET", "/gpus/vectorsum_cpu"), 0);
	ck_assert_int_eq(R.id, KB_ROUTE_GPUS);
	ck_assert_uint_eq(R.nparams, 1);
	ck_assert_str_eq(R.params[0], "vectorsum_cpu");

	ck_assert_int_eq(
		route("POST", "/submission/vectorsum_cpu/CPU/leaderboard"), 0);
	ck_assert_int_eq(R.id, KB_ROUTE_SUBMIT);
	ck_assert_uint_eq(R.nparams, 3);
	ck_assert_str_eq(R.params[0], "vectorsum_cpu");
	ck_assert_str_eq(R.params[1], "CPU");
	ck_assert_str_eq(R.params[2], "leaderboard");

	ck_assert_int_eq(route("GET", "/user/submissions/42"), 0);
	ck_assert_int_eq(R.id, KB_ROUTE_USER_SUBMISSION);
	ck_assert_str_eq(R.params[0], "42");

	ck_assert_int_eq(route("GET", "/submissions/matmul_cpu/CPU"), 0);
	ck_assert_int_eq(R.id, KB_ROUTE_RANKING);
	ck_assert_str_eq(R.params[0], "matmul_cpu");
	ck_assert_str_eq(R.params[1], "CPU");

	ck_assert_int_eq(route("POST", "/admin/users"), 0);
	ck_assert_int_eq(R.id, KB_ROUTE_ADMIN_USERS);
}
END_TEST

/* Every endpoint of the full API, with its parameters. */
START_TEST(full_api)
{
	static const struct {
		const char *method, *path;
		enum kb_route_id id;
		const char *p0, *p1, *p2;
	} cases[] = {
		{"GET", "/user/submissions", KB_ROUTE_USER_SUBMISSIONS, 0, 0,
		 0},
		{"GET", "/user/submissions/", KB_ROUTE_USER_SUBMISSIONS, 0, 0,
		 0},
		{"DELETE", "/user/submissions/7",
		 KB_ROUTE_USER_SUBMISSION_DELETE, "7", 0, 0},
		{"POST", "/user/join", KB_ROUTE_USER_JOIN, 0, 0, 0},
		{"GET", "/submission_count/lb/CPU", KB_ROUTE_SUBMISSION_COUNT,
		 "lb", "CPU", 0},
		{"GET", "/runner_queue/H100", KB_ROUTE_RUNNER_QUEUE, "H100", 0,
		 0},
		{"GET", "/auth/init", KB_ROUTE_AUTH_INIT, 0, 0, 0},
		{"GET", "/auth/cli/github", KB_ROUTE_AUTH_CLI, "github", 0, 0},
		{"GET", "/auth/start/discord", KB_ROUTE_AUTH_START, "discord",
		 0, 0},
		{"DELETE", "/admin/users/u1/cli-id", KB_ROUTE_ADMIN_USER_CLI,
		 "u1", 0, 0},
		{"POST", "/admin/start", KB_ROUTE_ADMIN_START, 0, 0, 0},
		{"POST", "/admin/stop", KB_ROUTE_ADMIN_STOP, 0, 0, 0},
		{"POST", "/admin/ban/u1", KB_ROUTE_ADMIN_BAN, "u1", 0, 0},
		{"DELETE", "/admin/ban/u1", KB_ROUTE_ADMIN_UNBAN, "u1", 0, 0},
		{"POST", "/admin/leaderboards", KB_ROUTE_ADMIN_LB_CREATE, 0, 0,
		 0},
		{"DELETE", "/admin/leaderboards/x", KB_ROUTE_ADMIN_LB_DELETE,
		 "x", 0, 0},
		{"POST", "/admin/leaderboards/x/visibility",
		 KB_ROUTE_ADMIN_LB_VISIBILITY, "x", 0, 0},
		{"GET", "/admin/leaderboards/x/submissions",
		 KB_ROUTE_ADMIN_LB_SUBMISSIONS, "x", 0, 0},
		{"GET", "/admin/leaderboards/x/invites",
		 KB_ROUTE_ADMIN_LB_INVITES, "x", 0, 0},
		{"PUT", "/admin/leaderboards/x/rate-limits",
		 KB_ROUTE_ADMIN_RATE_SET, "x", 0, 0},
		{"GET", "/admin/leaderboards/x/rate-limits",
		 KB_ROUTE_ADMIN_RATE_GET, "x", 0, 0},
		{"DELETE", "/admin/leaderboards/x/rate-limits/test",
		 KB_ROUTE_ADMIN_RATE_DELETE, "x", "test", 0},
		{"POST", "/admin/invites", KB_ROUTE_ADMIN_INVITES, 0, 0, 0},
		{"DELETE", "/admin/invites/abc", KB_ROUTE_ADMIN_INVITE_REVOKE,
		 "abc", 0, 0},
		{"GET", "/admin/stats", KB_ROUTE_ADMIN_STATS, 0, 0, 0},
		{"GET", "/admin/submissions/9", KB_ROUTE_ADMIN_SUBMISSION, "9",
		 0, 0},
		{"DELETE", "/admin/submissions/9",
		 KB_ROUTE_ADMIN_SUBMISSION_DELETE, "9", 0, 0},
		{"POST", "/admin/submission/lb/CPU/test", KB_ROUTE_ADMIN_SUBMIT,
		 "lb", "CPU", "test"},
		{"POST", "/discord/interactions", KB_ROUTE_DISCORD_INTERACTIONS,
		 0, 0, 0},
		{"POST", "/vectorsum_cpu/CPU/leaderboard", KB_ROUTE_STREAM,
		 "vectorsum_cpu", "CPU", "leaderboard"},
		{"POST", "/profile/vectorsum_cpu/CPU", KB_ROUTE_PROFILE,
		 "vectorsum_cpu", "CPU", 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ck_assert_msg(route(cases[i].method, cases[i].path) == 0,
			      "%s %s", cases[i].method, cases[i].path);
		ck_assert_msg(R.id == cases[i].id, "%s %s: route %d",
			      cases[i].method, cases[i].path, R.id);
		const char *p[3] = {cases[i].p0, cases[i].p1, cases[i].p2};
		for (size_t k = 0; k < 3 && p[k]; k++)
			ck_assert_str_eq(R.params[k], p[k]);
	}
	ck_assert_str_eq(kb_route_name(KB_ROUTE_STREAM), "stream");
}
END_TEST

/* The streaming route's first segment is a parameter; it never takes a
 * path that begins like another route. */
START_TEST(stream_route_is_last_resort)
{
	ck_assert_int_eq(route("POST", "/admin/users/1"), 404);
	ck_assert_int_eq(route("POST", "/submission/a/b"), 404);
	ck_assert_int_eq(route("POST", "/user/a/b"), 404);
	ck_assert_int_eq(route("POST", "/gpus/a/b"), 404);
	ck_assert_int_eq(route("POST", "/auth/a/b"), 404);
	ck_assert_int_eq(route("POST", "/discord/a/b"), 404);
	ck_assert_int_eq(route("GET", "/a/b/c"), 405);
	ck_assert_str_eq(R.allow, "POST");
	ck_assert_int_eq(route("POST", "/a/b/c/d"), 404);
	ck_assert_int_eq(route("POST", "/a/b"), 404);
}
END_TEST

START_TEST(methods_of_shared_paths)
{
	ck_assert_int_eq(route("PUT", "/user/submissions/7"), 405);
	ck_assert_str_eq(R.allow, "GET, HEAD, DELETE");
	ck_assert_int_eq(route("GET", "/admin/ban/u"), 405);
	ck_assert_str_eq(R.allow, "POST, DELETE");
	ck_assert_int_eq(route("POST", "/admin/leaderboards/x/rate-limits"),
			 405);
	ck_assert_str_eq(R.allow, "GET, HEAD, PUT");
	ck_assert_int_eq(route("HEAD", "/user/submissions/7"), 0);
	ck_assert_int_eq(R.id, KB_ROUTE_USER_SUBMISSION);
}
END_TEST

START_TEST(query_parameters)
{
	ck_assert(kb_route_query_ok(KB_ROUTE_RANKING, "limit"));
	ck_assert(kb_route_query_ok(KB_ROUTE_RANKING, "offset"));
	ck_assert(!kb_route_query_ok(KB_ROUTE_RANKING, "limt"));
	ck_assert(!kb_route_query_ok(KB_ROUTE_RANKING, ""));
	ck_assert(!kb_route_query_ok(KB_ROUTE_RANKING, NULL));
	ck_assert(kb_route_query_ok(KB_ROUTE_USER_SUBMISSIONS, "leaderboard"));
	ck_assert(kb_route_query_ok(KB_ROUTE_AUTH_CLI, "code"));
	ck_assert(kb_route_query_ok(KB_ROUTE_AUTH_CLI, "state"));
	ck_assert(kb_route_query_ok(KB_ROUTE_ADMIN_LB_DELETE, "force"));
	ck_assert(kb_route_query_ok(KB_ROUTE_ADMIN_STATS, "last_day_only"));
	ck_assert(!kb_route_query_ok(KB_ROUTE_HEALTH, "x"));
	ck_assert(!kb_route_query_ok(KB_ROUTE_SUBMIT, "file"));
	ck_assert(!kb_route_query_ok(KB_ROUTE_NONE, "limit"));
}
END_TEST

START_TEST(head_where_get)
{
	ck_assert_int_eq(route("HEAD", "/health"), 0);
	ck_assert_int_eq(R.id, KB_ROUTE_HEALTH);
	ck_assert_int_eq(route("HEAD", "/submissions/a/b"), 0);
	ck_assert_int_eq(route("HEAD", "/admin/users"), 405);
	ck_assert_str_eq(R.allow, "POST");
}
END_TEST

START_TEST(trailing_slash)
{
	ck_assert_int_eq(route("GET", "/leaderboards/"), 0);
	ck_assert_int_eq(R.id, KB_ROUTE_LEADERBOARDS);
	ck_assert_int_eq(route("GET", "/gpus/x/"), 0);
	ck_assert_str_eq(R.params[0], "x");
	ck_assert_int_eq(route("GET", "/leaderboards//"), 404);
}
END_TEST

START_TEST(wrong_method_is_405)
{
	ck_assert_int_eq(route("POST", "/health"), 405);
	ck_assert_int_eq(R.id, KB_ROUTE_NONE);
	ck_assert_str_eq(R.allow, "GET, HEAD");
	ck_assert_int_eq(route("GET", "/submission/a/b/test"), 405);
	ck_assert_str_eq(R.allow, "POST");
	ck_assert_int_eq(route("DELETE", "/leaderboards"), 405);
	ck_assert_int_eq(route("PUT", "/admin/users"), 405);
	ck_assert_int_eq(route("get", "/health"),
			 405); /* methods are case-sensitive */
}
END_TEST

START_TEST(unknown_is_404)
{
	const char *paths[] = {
		"",
		"health",
		"/healthz",
		"/health/x",
		"/gpus",
		"/gpus/",
		"/gpus//",
		"/submission/a/b",
		"/submission/a/b/c/d",
		"/submission//b/c",
		"/user",
		"/user/submissions/1/x",
		"/submissions/a",
		"/submissions/a/b/c",
		"/admin",
		"/admin/users/1",
		"//health",
		"/a/b/c/d/e/f/g/h/i/j",
	};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		ck_assert_msg(route("GET", paths[i]) == 404, "GET %s",
			      paths[i]);
		ck_assert_int_eq(R.id, KB_ROUTE_NONE);
		ck_assert_ptr_null(R.allow);
	}
	ck_assert_int_eq(kb_route_match(NULL, "/health", &R), 404);
	ck_assert_int_eq(kb_route_match("GET", NULL, &R), 404);
}
END_TEST

START_TEST(long_segments)
{
	char path[512], seg[KB_ROUTE_PARAM_MAX + 1];

	memset(seg, 'a', sizeof(seg) - 1);
	seg[sizeof(seg) - 1] = '\0';
	snprintf(path, sizeof(path), "/gpus/%s", seg);
	ck_assert_int_eq(route("GET", path), 404);
	seg[KB_ROUTE_PARAM_MAX - 1] = '\0';
	snprintf(path, sizeof(path), "/gpus/%s", seg);
	ck_assert_int_eq(route("GET", path), 0);
	ck_assert_uint_eq(strlen(R.params[0]), KB_ROUTE_PARAM_MAX - 1);

	char huge[4096];
	memset(huge, 'x', sizeof(huge) - 1);
	huge[0] = '/';
	huge[sizeof(huge) - 1] = '\0';
	ck_assert_int_eq(route("GET", huge), 404);
}
END_TEST

/* The web pages and /metrics (issue 18): "/" is the index, the rest is
 * under /web/, and the streaming route still takes other first segments. */
START_TEST(web_routes)
{
	ck_assert_int_eq(route("GET", "/"), 0);
	ck_assert_int_eq(R.id, KB_ROUTE_WEB_INDEX);
	ck_assert_int_eq(route("HEAD", "/"), 0);
	ck_assert_int_eq(route("POST", "/"), 405);
	ck_assert_int_eq(route("GET", "/metrics"), 0);
	ck_assert_int_eq(R.id, KB_ROUTE_METRICS);
	ck_assert_int_eq(route("GET", "/web/lb/vectorsum_cpu"), 0);
	ck_assert_int_eq(R.id, KB_ROUTE_WEB_BOARD);
	ck_assert_str_eq(R.params[0], "vectorsum_cpu");
	ck_assert_int_eq(route("GET", "/web/lb/vectorsum_cpu/template/c"), 0);
	ck_assert_int_eq(R.id, KB_ROUTE_WEB_TEMPLATE);
	ck_assert_str_eq(R.params[1], "c");
	ck_assert_int_eq(route("GET", "/web/user/abc"), 0);
	ck_assert_int_eq(R.id, KB_ROUTE_WEB_USER);
	ck_assert_int_eq(route("GET", "/web/me"), 0);
	ck_assert_int_eq(R.id, KB_ROUTE_WEB_ME);
	ck_assert_int_eq(route("GET", "/web/static/kb.js"), 0);
	ck_assert_int_eq(R.id, KB_ROUTE_WEB_STATIC);
	ck_assert_int_eq(route("GET", "/web/events"), 0);
	ck_assert_int_eq(R.id, KB_ROUTE_WEB_EVENTS);
	ck_assert_int_eq(kb_route_query_ok(KB_ROUTE_WEB_EVENTS, "lb"), 1);
	ck_assert_int_eq(route("GET", "//"), 404);
	ck_assert_int_eq(route("GET", "/web"), 404);
	ck_assert_int_eq(route("GET", "/web/lb"), 404);
	/* "web" is a reserved first segment; other names still stream. */
	ck_assert_int_eq(route("POST", "/web/CPU/test"), 404);
	ck_assert_int_eq(route("POST", "/metricsx/CPU/test"), 0);
	ck_assert_int_eq(R.id, KB_ROUTE_STREAM);
	/* "profile" is popcorn-cli's hosted profiling, not a board. */
	ck_assert_int_eq(route("POST", "/profile/CPU/test"), 0);
	ck_assert_int_eq(R.id, KB_ROUTE_PROFILE);
	ck_assert_int_eq(route("POST", "/profile/lb/CPU/test"), 404);
	/* Which parameters name boards and gpus (their spelling is made
	 * canonical). */
	ck_assert_str_eq(kb_route_param_kinds(KB_ROUTE_PROFILE), "lg");
	ck_assert_str_eq(kb_route_param_kinds(KB_ROUTE_GPUS), "l");
	ck_assert_str_eq(kb_route_param_kinds(KB_ROUTE_RUNNER_QUEUE), "g");
	ck_assert_str_eq(kb_route_param_kinds(KB_ROUTE_HEALTH), "");
}
END_TEST

START_TEST(names)
{
	ck_assert_str_eq(kb_route_name(KB_ROUTE_SUBMIT), "submit");
	ck_assert_str_eq(kb_route_name(KB_ROUTE_NONE), "none");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gateway_router");
	TCase *tc = tcase_create("router");

	tcase_add_test(tc, every_route);
	tcase_add_test(tc, full_api);
	tcase_add_test(tc, stream_route_is_last_resort);
	tcase_add_test(tc, methods_of_shared_paths);
	tcase_add_test(tc, query_parameters);
	tcase_add_test(tc, head_where_get);
	tcase_add_test(tc, trailing_slash);
	tcase_add_test(tc, wrong_method_is_405);
	tcase_add_test(tc, unknown_is_404);
	tcase_add_test(tc, long_segments);
	tcase_add_test(tc, web_routes);
	tcase_add_test(tc, names);
	suite_add_tcase(s, tc);
	return kb_check_run(s);
}
