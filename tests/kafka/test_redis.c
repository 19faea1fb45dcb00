/* kb_redis: the URL parser with no server, then connect, AUTH, SELECT and
 * scripts against a throwaway redis-server on loopback. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kb_log.h"
#include "kb_redis.h"
#include "kb_testenv.h"
#include "kb_check_main.h"

START_TEST(url_good)
{
	struct kb_redis_url u;
	char err[256] = "";

	ck_assert_int_eq(kb_redis_url_parse("redis://127.0.0.1", &u, err,
					    sizeof(err)),
			 0);
	ck_assert_str_eq(u.host, "127.0.0.1");
	ck_assert_int_eq(u.port, 6379);
	ck_assert_int_eq(u.db, -1);
	ck_assert_int_eq(u.is_unix, 0);
	ck_assert_str_eq(u.password, "");

	ck_assert_int_eq(kb_redis_url_parse("redis://cache.svc:7000/3", &u, err,
					    sizeof(err)),
			 0);
	ck_assert_str_eq(u.host, "cache.svc");
	ck_assert_int_eq(u.port, 7000);
	ck_assert_int_eq(u.db, 3);

	ck_assert_int_eq(kb_redis_url_parse("redis://localhost:6380/", &u, err,
					    sizeof(err)),
			 0);
	ck_assert_int_eq(u.port, 6380);
	ck_assert_int_eq(u.db, -1);

	ck_assert_int_eq(kb_redis_url_parse("redis://[::1]:6390/0", &u, err,
					    sizeof(err)),
			 0);
	ck_assert_str_eq(u.host, "::1");
	ck_assert_int_eq(u.port, 6390);
	ck_assert_int_eq(u.db, 0);

	ck_assert_int_eq(kb_redis_url_parse("redis://:s3cr:et@h:1", &u, err,
					    sizeof(err)),
			 0);
	ck_assert_str_eq(u.user, "");
	ck_assert_str_eq(u.password, "s3cr:et");
	ck_assert_str_eq(u.host, "h");
	ck_assert_int_eq(u.port, 1);

	ck_assert_int_eq(
		kb_redis_url_parse("redis://kb:pw@h", &u, err, sizeof(err)), 0);
	ck_assert_str_eq(u.user, "kb");
	ck_assert_str_eq(u.password, "pw");

	ck_assert_int_eq(kb_redis_url_parse("unix:/run/redis.sock", &u, err,
					    sizeof(err)),
			 0);
	ck_assert_int_eq(u.is_unix, 1);
	ck_assert_str_eq(u.path, "/run/redis.sock");
	ck_assert_int_eq(kb_redis_url_parse("unix:///run/r.sock", &u, err,
					    sizeof(err)),
			 0);
	ck_assert_str_eq(u.path, "/run/r.sock");
}
END_TEST

START_TEST(url_bad)
{
	static const char *const bad[] = {"",
					  "http://h:1",
					  "rediss://h:1",
					  "redis://",
					  "redis://:6379",
					  "redis:///0",
					  "redis://h:",
					  "redis://h:0",
					  "redis://h:65536",
					  "redis://h:12a",
					  "redis://h:-1",
					  "redis://h:1/x",
					  "redis://h:1/-1",
					  "redis://h:1/1/2",
					  "redis://h:1/1?x=y",
					  "redis://[::1",
					  "redis://[::1]x:1",
					  "redis://user@h:1",
					  "unix:",
					  "unix:rel/path",
					  "redis://h:99999999999"};
	struct kb_redis_url u;
	char err[256], path[300];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		ck_assert_msg(kb_redis_url_parse(bad[i], &u, err,
						 sizeof(err)) == -EINVAL,
			      "accepted \"%s\"", bad[i]);
		ck_assert_msg(err[0] != '\0', "no error text for \"%s\"",
			      bad[i]);
	}
	ck_assert_int_eq(kb_redis_url_parse(NULL, &u, err, sizeof(err)),
			 -EINVAL);

	memset(path, 'p', sizeof(path));
	memcpy(path, "unix:/", 6);
	path[sizeof(path) - 1] = '\0';
	ck_assert_int_eq(kb_redis_url_parse(path, &u, err, sizeof(err)),
			 -EINVAL);

	/* A password never shows up in an error. */
	ck_assert_int_eq(kb_redis_url_parse("redis://:hunter2@h:0", &u, err,
					    sizeof(err)),
			 -EINVAL);
	ck_assert_msg(strstr(err, "hunter2") == NULL, "err leaks: %s", err);
	ck_assert_int_eq(kb_redis_url_parse("http://:hunter2@h", &u, err,
					    sizeof(err)),
			 -EINVAL);
	ck_assert_msg(strstr(err, "hunter2") == NULL, "err leaks: %s", err);
}
END_TEST

static struct kb_test_server srv;

static redisContext *connect_ok(const char *url)
{
	char err[256] = "";
	redisContext *c = kb_redis_connect(url, 2000, err, sizeof(err));
	ck_assert_msg(c != NULL, "kb_redis_connect(%s): %s", url, err);
	return c;
}

static long long get_int(redisContext *c, const char *cmd)
{
	redisReply *r = redisCommand(c, cmd);
	ck_assert_ptr_nonnull(r);
	ck_assert_msg(r->type == REDIS_REPLY_INTEGER, "%s: reply type %d", cmd,
		      r->type);
	long long v = r->integer;
	freeReplyObject(r);
	return v;
}

START_TEST(connect_select_and_errors)
{
	char url[160], err[256];
	redisReply *r;

	/* On TCP: this test is about redis:// URLs (db, password). */
	ck_assert_int_eq(kb_test_redis_start_tcp(&srv), 0);
	redisContext *c0 = connect_ok(srv.url);
	snprintf(url, sizeof(url), "%s/3", srv.url);
	redisContext *c3 = connect_ok(url);

	r = redisCommand(c3, "SET kb:test:db 3");
	ck_assert_ptr_nonnull(r);
	freeReplyObject(r);
	ck_assert_int_eq(get_int(c3, "EXISTS kb:test:db"), 1);
	ck_assert_int_eq(get_int(c0, "EXISTS kb:test:db"), 0);

	/* SELECT of a db the server lacks fails the connect. */
	snprintf(url, sizeof(url), "%s/99", srv.url);
	err[0] = '\0';
	ck_assert_ptr_null(kb_redis_connect(url, 2000, err, sizeof(err)));
	ck_assert_msg(strstr(err, "SELECT") != NULL, "err: %s", err);

	/* AUTH: a right password connects, a wrong one fails without showing
	 * itself. */
	r = redisCommand(c0, "CONFIG SET requirepass pw-ok");
	ck_assert_ptr_nonnull(r);
	ck_assert_int_ne(r->type, REDIS_REPLY_ERROR);
	freeReplyObject(r);
	snprintf(url, sizeof(url), "redis://:pw-ok@127.0.0.1:%d", srv.port);
	redisContext *ca = connect_ok(url);
	ck_assert_int_eq(get_int(ca, "DBSIZE"), 0);
	snprintf(url, sizeof(url), "redis://:pw-wrong@127.0.0.1:%d", srv.port);
	err[0] = '\0';
	ck_assert_ptr_null(kb_redis_connect(url, 2000, err, sizeof(err)));
	ck_assert_msg(strstr(err, "AUTH") != NULL, "err: %s", err);
	ck_assert_msg(strstr(err, "pw-wrong") == NULL, "err leaks: %s", err);
	redisFree(ca);
	redisFree(c0);
	redisFree(c3);

	/* Nobody listening: an error. */
	int dead_fd, dead = kb_test_refused_port(&dead_fd);
	ck_assert_int_gt(dead, 0);
	snprintf(url, sizeof(url), "redis://127.0.0.1:%d", dead);
	err[0] = '\0';
	ck_assert_ptr_null(kb_redis_connect(url, 1000, err, sizeof(err)));
	ck_assert_msg(err[0] != '\0', "no error text");
	close(dead_fd);
	kb_test_server_stop(&srv);
}
END_TEST

START_TEST(scripts_load_eval_reload)
{
	struct kb_redis_script s = {
		.src = "redis.call('SET', KEYS[1], ARGV[1]) "
		       "return {KEYS[1], ARGV[1], #ARGV[2]}"};
	struct kb_redis_script broken = {.src = "return redis.call('NOPE')"};
	char err[256] = "";
	const char *argv[] = {"kb:test:k", "val", "a\0b"};
	const size_t argvlen[] = {9, 3, 3};
	redisReply *r;

	ck_assert_int_eq(kb_test_redis_start(&srv), 0);
	redisContext *c = connect_ok(srv.url);

	ck_assert_msg(kb_redis_script_load(c, &s, err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert_uint_eq(strlen(s.sha), 40);
	r = kb_redis_eval(c, &s, 1, 3, argv, argvlen, err, sizeof(err));
	ck_assert_msg(r != NULL, "%s", err);
	ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
	ck_assert_uint_eq(r->elements, 3);
	ck_assert_str_eq(r->element[0]->str, "kb:test:k");
	ck_assert_str_eq(r->element[1]->str, "val");
	ck_assert_int_eq(r->element[2]->integer, 3); /* the NUL survived */
	freeReplyObject(r);

	/* The server forgets every script; eval loads it again by itself. */
	r = redisCommand(c, "SCRIPT FLUSH");
	freeReplyObject(r);
	r = redisCommand(c, "SCRIPT EXISTS %s", s.sha);
	ck_assert_int_eq(r->element[0]->integer, 0);
	freeReplyObject(r);
	const char *argv2[] = {"kb:test:k", "again", "x"};
	r = kb_redis_eval(c, &s, 1, 3, argv2, NULL, err, sizeof(err));
	ck_assert_msg(r != NULL, "%s", err);
	ck_assert_int_eq(r->type, REDIS_REPLY_ARRAY);
	ck_assert_str_eq(r->element[1]->str, "again");
	freeReplyObject(r);
	r = redisCommand(c, "SCRIPT EXISTS %s", s.sha);
	ck_assert_int_eq(r->element[0]->integer, 1);
	freeReplyObject(r);
	r = redisCommand(c, "GET kb:test:k");
	ck_assert_str_eq(r->str, "again");
	freeReplyObject(r);

	/* Never loaded: eval loads it first. A script error is a reply. */
	r = kb_redis_eval(c, &broken, 0, 0, NULL, NULL, err, sizeof(err));
	ck_assert_msg(r != NULL, "%s", err);
	ck_assert_int_eq(r->type, REDIS_REPLY_ERROR);
	ck_assert_uint_eq(strlen(broken.sha), 40);
	freeReplyObject(r);

	/* A script that does not compile cannot be loaded. */
	struct kb_redis_script bad = {.src = "this is not lua"};
	err[0] = '\0';
	ck_assert_int_eq(kb_redis_script_load(c, &bad, err, sizeof(err)), -EIO);
	ck_assert_msg(err[0] != '\0', "no error text");
	ck_assert_ptr_null(
		kb_redis_eval(c, &bad, 0, 0, NULL, NULL, err, sizeof(err)));

	redisFree(c);
	kb_test_server_stop(&srv);
}
END_TEST

int main(void)
{
	kb_log_init("test-redis", KB_LOG_WARN, 0);
	Suite *s = suite_create("redis");
	TCase *pure = tcase_create("url");
	tcase_add_test(pure, url_good);
	tcase_add_test(pure, url_bad);
	suite_add_tcase(s, pure);
	TCase *live = tcase_create("server");
	tcase_set_timeout(live, 20);
	tcase_add_test(live, connect_select_and_errors);
	tcase_add_test(live, scripts_load_eval_reload);
	suite_add_tcase(s, live);
	return kb_check_run(s);
}
