/* The queue's Redis parts against a throwaway redis-server: the job lease
 * (kb_lease.h, lease.lua) and the task store (kb_taskstore.h). */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kb.pb-c.h"
#include "kb_lease.h"
#include "kb_log.h"
#include "kb_redis.h"
#include "kb_taskstore.h"
#include "kb_testenv.h"
#include "kb_check_main.h"

static struct kb_test_server redis;
static redisContext *rc;
static char err[256];

static void setup(void)
{
	ck_assert_int_eq(kb_test_redis_start(&redis), 0);
	rc = kb_redis_connect(redis.url, 5000, err, sizeof(err));
	ck_assert_msg(rc != NULL, "%s", err);
}

static void teardown(void)
{
	redisFree(rc);
	kb_test_server_stop(&redis);
}

static struct kb_lease_take take(uint64_t id, const char *who, long ttl_ms,
				 int max)
{
	struct kb_lease_take lt;

	ck_assert_msg(kb_lease_take(rc, id, who, ttl_ms, max, &lt, err,
				    sizeof(err)) == 0,
		      "%s", err);
	return lt;
}

/* Waits until a lease of ttl_ms taken now has ended on the server. */
static void outlive(long ttl_ms)
{
	usleep((useconds_t)(ttl_ms + 100) * 1000);
}

/* One holder at a time; the holder renews; a done job stays done. */
START_TEST(lease_one_holder)
{
	struct kb_lease_take lt = take(1, "a", 60000, 3);

	ck_assert_int_eq(lt.verdict, KB_LEASE_TAKEN);
	ck_assert_int_eq(lt.attempts, 0);
	ck_assert_int_eq(kb_lease_active(rc, 1, err, sizeof(err)), 1);
	lt = take(1, "b", 60000, 3);
	ck_assert_int_eq(lt.verdict, KB_LEASE_BUSY);
	ck_assert_str_eq(lt.owner, "a");
	/* The holder's own take (after a store hiccup) does not count. */
	lt = take(1, "a", 60000, 3);
	ck_assert_int_eq(lt.verdict, KB_LEASE_TAKEN);
	ck_assert_int_eq(lt.attempts, 0);
	ck_assert_int_eq(kb_lease_renew(rc, 1, "a", 60000, err, sizeof(err)),
			 1);
	ck_assert_int_eq(kb_lease_renew(rc, 1, "b", 60000, err, sizeof(err)),
			 0);
	ck_assert_int_eq(kb_lease_finish(rc, 1, "a", 3600, err, sizeof(err)),
			 1);
	lt = take(1, "b", 60000, 3);
	ck_assert_int_eq(lt.verdict, KB_LEASE_DONE);
	ck_assert_str_eq(lt.owner, "a");
	ck_assert_int_eq(kb_lease_active(rc, 1, err, sizeof(err)), 1);
	/* Kept for keep_s, then gone with its key. */
	redisReply *r = redisCommand(rc, "TTL kb:lease:1");
	ck_assert_int_gt(r->integer, 3000);
	freeReplyObject(r);
}
END_TEST

/* A lease that ended unrenewed is one attempt (a crash or a hang); a
 * released one (a drain) is none; at max attempts the taker gives up. */
START_TEST(lease_counts_crashes_only)
{
	struct kb_lease_take lt = take(2, "a", 200, 3);

	ck_assert_int_eq(kb_lease_active(rc, 3, err, sizeof(err)), 0);
	ck_assert_int_eq(lt.verdict, KB_LEASE_TAKEN);
	ck_assert_int_eq(kb_lease_release(rc, 2, "a", err, sizeof(err)), 1);
	ck_assert_int_eq(kb_lease_active(rc, 2, err, sizeof(err)), 0);
	lt = take(2, "b", 200, 3);
	ck_assert_int_eq(lt.verdict, KB_LEASE_TAKEN);
	ck_assert_int_eq(lt.attempts, 0);
	outlive(200);
	ck_assert_int_eq(kb_lease_active(rc, 2, err, sizeof(err)), 0);
	/* b's process is gone: its renewal no longer holds anything. */
	lt = take(2, "c", 200, 3);
	ck_assert_int_eq(lt.verdict, KB_LEASE_TAKEN);
	ck_assert_int_eq(lt.attempts, 1);
	ck_assert_int_eq(kb_lease_renew(rc, 2, "b", 200, err, sizeof(err)), 0);
	outlive(200);
	lt = take(2, "d", 200, 3);
	ck_assert_int_eq(lt.verdict, KB_LEASE_TAKEN);
	ck_assert_int_eq(lt.attempts, 2);
	outlive(200);
	lt = take(2, "e", 200, 3);
	ck_assert_int_eq(lt.verdict, KB_LEASE_GIVE_UP);
	ck_assert_int_eq(lt.attempts, 3);
	/* The one giving up holds it until it has published why. */
	ck_assert_int_eq(take(2, "f", 200, 3).verdict, KB_LEASE_BUSY);
	ck_assert_int_eq(kb_lease_finish(rc, 2, "e", 60, err, sizeof(err)), 1);
	ck_assert_int_eq(take(2, "f", 200, 3).verdict, KB_LEASE_DONE);
}
END_TEST

/* A worker that lost its lease and finishes anyway: the job is done for
 * everyone, and finish says it had lost it. */
START_TEST(lease_finish_after_loss)
{
	take(4, "a", 200, 3);
	outlive(200);
	ck_assert_int_eq(take(4, "b", 60000, 3).verdict, KB_LEASE_TAKEN);
	ck_assert_int_eq(kb_lease_finish(rc, 4, "a", 60, err, sizeof(err)), 0);
	ck_assert_int_eq(take(4, "c", 60000, 3).verdict, KB_LEASE_DONE);
	ck_assert_int_eq(kb_lease_release(rc, 4, "b", err, sizeof(err)), 0);
}
END_TEST

/* A task and its reference, packed as a gateway stores it. */
static void packed_task(uint8_t **buf, size_t *len, char ref[65])
{
	Kb__Task t = KB__TASK__INIT;
	Kb__TaskFile f[2] = {KB__TASK_FILE__INIT, KB__TASK_FILE__INIT};
	Kb__TaskFile *files[2] = {&f[0], &f[1]};

	f[0].name = "eval.c";
	f[0].content.data = (uint8_t *)"int main(void){return 0;}";
	f[0].content.len = strlen((char *)f[0].content.data);
	f[1].name = "submission.c";
	t.lang = "c";
	t.files = files;
	t.n_files = 2;
	t.submission_file = "submission.c";
	*len = kb__task__get_packed_size(&t);
	*buf = malloc(*len);
	kb__task__pack(&t, *buf);
	kb_taskstore_ref(*buf, *len, ref);
}

static Kb__Submission *sub_for(const char *ref)
{
	Kb__Submission *s = calloc(1, sizeof(*s));

	kb__submission__init(s);
	s->id = 9;
	s->task_ref = strdup(ref);
	s->code.data = (uint8_t *)strdup("float k;");
	s->code.len = 8;
	return s;
}

/* Resolved from Redis, then from the cache directory with no store; the
 * code fills the submission file; bytes that are not the task named are
 * refused; an unknown task is -ENOENT, an unreachable store -EIO. */
START_TEST(taskstore_resolve)
{
	char ref[65], dir[] = "/tmp/kb-test-tasks-XXXXXX", other[65];
	uint8_t *buf;
	size_t len;
	kb_taskstore *ts;
	Kb__Submission *s;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	packed_task(&buf, &len, ref);
	ck_assert(kb_taskstore_ref_ok(ref));
	ck_assert(!kb_taskstore_ref_ok("abc"));
	ts = kb_taskstore_new(dir);
	s = sub_for(ref);
	ck_assert_int_eq(kb_taskstore_resolve(ts, rc, s, err, sizeof(err)),
			 -ENOENT);
	ck_assert_int_eq(kb_taskstore_resolve(ts, NULL, s, err, sizeof(err)),
			 -EIO);
	ck_assert_int_eq(kb_taskstore_put(rc, buf, len, ref, err, sizeof(err)),
			 0);
	ck_assert_int_eq(kb_taskstore_resolve(ts, rc, s, err, sizeof(err)), 0);
	ck_assert_uint_eq(s->task->n_files, 2);
	ck_assert_str_eq(s->task->files[0]->name, "eval.c");
	ck_assert_uint_eq(s->task->files[1]->content.len, 8);
	ck_assert_int_eq(memcmp(s->task->files[1]->content.data, "float k;", 8),
			 0);
	kb__submission__free_unpacked(s, NULL);
	kb_taskstore_destroy(ts);
	/* A fresh process, the store down: the directory has it. */
	ts = kb_taskstore_new(dir);
	s = sub_for(ref);
	ck_assert_int_eq(kb_taskstore_resolve(ts, NULL, s, err, sizeof(err)),
			 0);
	ck_assert_str_eq(s->task->lang, "c");
	kb__submission__free_unpacked(s, NULL);
	/* Other bytes under the reference are refused. */
	memset(other, 'a', 64);
	other[64] = '\0';
	ck_assert_int_eq(
		kb_taskstore_put(rc, buf, len, other, err, sizeof(err)), 0);
	s = sub_for(other);
	ck_assert_int_eq(kb_taskstore_resolve(ts, rc, s, err, sizeof(err)),
			 -EBADMSG);
	ck_assert_ptr_null(s->task);
	kb__submission__free_unpacked(s, NULL);
	kb_taskstore_destroy(ts);
	free(buf);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("lease");
	TCase *tc = tcase_create("redis");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, lease_one_holder);
	tcase_add_test(tc, lease_counts_crashes_only);
	tcase_add_test(tc, lease_finish_after_loss);
	tcase_add_test(tc, taskstore_resolve);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	kb_log_init("lease-test", KB_LOG_WARN, 0);
	return kb_check_run(suite());
}
