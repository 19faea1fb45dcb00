/* Unit tests of the configuration table and the signal flag. */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kb_config.h"
#include "kb_log.h"
#include "kb_signal.h"
#include "kb_check_main.h"

struct fake_env {
	const char *const *kv; /* name, value, name, value, ..., NULL */
};

static const char *fake_get(const char *name, void *ctx)
{
	const struct fake_env *e = ctx;
	for (size_t i = 0; e->kv[i]; i += 2)
		if (strcmp(e->kv[i], name) == 0)
			return e->kv[i + 1];
	return NULL;
}

static char *s_addr;
static long s_port;
static int s_json;
static char *s_token;

static const struct kb_cfg_entry table[] = {
	{"KB_HTTP_ADDR", KB_CFG_STRING, "127.0.0.1", 0, 0, 0, &s_addr,
	 "listen address"},
	{"KB_HTTP_PORT", KB_CFG_INT, "8000", 1, 65535, 0, &s_port,
	 "listen port"},
	{"KB_LOG_JSON", KB_CFG_BOOL, "0", 0, 0, 0, &s_json, "JSON logs"},
	{"KB_ADMIN_TOKEN", KB_CFG_STRING, NULL, 0, 0, 1, &s_token,
	 "admin token"},
};

static int load(const char *const *kv, char *err, size_t n)
{
	struct fake_env e = {kv};
	return kb_config_load_from(table, KB_ARRAY_LEN(table), fake_get, &e,
				   err, n);
}

START_TEST(defaults_apply)
{
	const char *kv[] = {NULL};
	char err[256] = "";
	ck_assert_int_eq(load(kv, err, sizeof(err)), 0);
	ck_assert_str_eq(s_addr, "127.0.0.1");
	ck_assert_int_eq(s_port, 8000);
	ck_assert_int_eq(s_json, 0);
	ck_assert_ptr_null(s_token);
	kb_config_free(table, KB_ARRAY_LEN(table));
	ck_assert_ptr_null(s_addr);
}
END_TEST

START_TEST(environment_overrides)
{
	const char *kv[] = {"KB_HTTP_PORT",   "9001",   "KB_LOG_JSON", "yes",
			    "KB_ADMIN_TOKEN", "s3cret", NULL};
	char err[256] = "";
	ck_assert_int_eq(load(kv, err, sizeof(err)), 0);
	ck_assert_int_eq(s_port, 9001);
	ck_assert_int_eq(s_json, 1);
	ck_assert_str_eq(s_token, "s3cret");
	kb_config_free(table, KB_ARRAY_LEN(table));
}
END_TEST

START_TEST(out_of_range_names_the_variable)
{
	const char *kv[] = {"KB_HTTP_PORT", "70000", NULL};
	char err[256] = "";
	ck_assert_int_eq(load(kv, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "KB_HTTP_PORT") &&
			      strstr(err, "out of range"),
		      "error was: %s", err);
	kb_config_free(table, KB_ARRAY_LEN(table));
}
END_TEST

START_TEST(garbage_is_rejected)
{
	const char *bad_int[] = {"KB_HTTP_PORT", "80x", NULL};
	const char *empty_int[] = {"KB_HTTP_PORT", "", NULL};
	const char *bad_bool[] = {"KB_LOG_JSON", "maybe", NULL};
	char err[256] = "";
	ck_assert_int_eq(load(bad_int, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "not an integer"), "error was: %s", err);
	ck_assert_int_eq(load(empty_int, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(load(bad_bool, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "KB_LOG_JSON"), "error was: %s", err);
	kb_config_free(table, KB_ARRAY_LEN(table));
}
END_TEST

START_TEST(required_int_without_default_fails)
{
	static long v;
	static const struct kb_cfg_entry t[] = {
		{"KB_REQUIRED", KB_CFG_INT, NULL, 0, 10, 0, &v, "needed"},
	};
	const char *kv[] = {NULL};
	struct fake_env e = {kv};
	char err[256] = "";
	ck_assert_int_eq(kb_config_load_from(t, 1, fake_get, &e, err,
					     sizeof(err)),
			 -EINVAL);
	ck_assert_msg(strstr(err, "KB_REQUIRED is required"), "error was: %s",
		      err);
}
END_TEST

START_TEST(signal_sets_flag_and_wakes_fd)
{
	char c;
	ck_assert_int_eq(kb_signal_install(), 0);
	ck_assert_int_eq(kb_signal_stopping(), 0);
	ck_assert_int_eq(read(kb_signal_fd(), &c, 1), -1); /* nothing yet */
	raise(SIGTERM);
	ck_assert_int_eq(kb_signal_stopping(), 1);
	ck_assert_int_eq(read(kb_signal_fd(), &c, 1), 1);
}
END_TEST

START_TEST(second_signal_exits_at_once)
{
	ck_assert_int_eq(kb_signal_install(), 0);
	raise(SIGTERM);
	raise(SIGTERM); /* must _exit(130) here */
	ck_abort_msg("second signal did not exit");
}
END_TEST

START_TEST(log_level_parse)
{
	ck_assert_int_eq(kb_log_level_parse("debug"), KB_LOG_DEBUG);
	ck_assert_int_eq(kb_log_level_parse("error"), KB_LOG_ERROR);
	ck_assert_int_eq(kb_log_level_parse("loud"), -1);
	ck_assert_int_eq(kb_log_level_parse(NULL), -1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("core");
	TCase *tc = tcase_create("config");
	tcase_add_test(tc, defaults_apply);
	tcase_add_test(tc, environment_overrides);
	tcase_add_test(tc, out_of_range_names_the_variable);
	tcase_add_test(tc, garbage_is_rejected);
	tcase_add_test(tc, required_int_without_default_fails);
	tcase_add_test(tc, signal_sets_flag_and_wakes_fd);
	tcase_add_exit_test(tc, second_signal_exits_at_once, 130);
	tcase_add_test(tc, log_level_parse);
	suite_add_tcase(s, tc);
	return kb_check_run(s);
}
