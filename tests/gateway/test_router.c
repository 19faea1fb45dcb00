/* The routing table: path + method -> route and parameters, 404, 405. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "router.h"

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

	ck_assert_int_eq(route("POST", "/submission/vectorsum_cpu/CPU/leaderboard"), 0);
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
	ck_assert_int_eq(route("get", "/health"), 405); /* methods are case-sensitive */
}
END_TEST

START_TEST(unknown_is_404)
{
	const char *paths[] = {
		"/", "", "health", "/healthz", "/health/x", "/gpus", "/gpus/",
		"/gpus//", "/submission/a/b", "/submission/a/b/c/d",
		"/submission//b/c", "/user/submissions", "/user/submissions/",
		"/submissions/a", "/submissions/a/b/c", "/admin", "/admin/users/1",
		"//health", "/a/b/c/d/e/f/g/h/i/j",
	};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		ck_assert_msg(route("GET", paths[i]) == 404, "GET %s", paths[i]);
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
	SRunner *r;
	int failed;

	tcase_add_test(tc, every_route);
	tcase_add_test(tc, head_where_get);
	tcase_add_test(tc, trailing_slash);
	tcase_add_test(tc, wrong_method_is_405);
	tcase_add_test(tc, unknown_is_404);
	tcase_add_test(tc, long_segments);
	tcase_add_test(tc, names);
	suite_add_tcase(s, tc);
	r = srunner_create(s);
	srunner_run_all(r, CK_NORMAL);
	failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? 1 : 0;
}
