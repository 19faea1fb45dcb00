/* kb_gw_limiter (limiter.h): rates per window and slots per key, and a
 * full table, with the clock given by the test. */
#include <check.h>
#include <errno.h>
#include <sodium.h>
#include <stdio.h>

#include "base/limiter.h"
#include "kb_check_main.h"

START_TEST(rate_per_window)
{
	struct kb_gw_limiter *l = kb_gw_limiter_new(16);

	ck_assert_ptr_nonnull(l);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(kb_gw_limiter_hit(l, "10.0.0.1", 3, 60000,
						   1000 + i),
				 0);
	/* The 4th waits for the window that began at 1000. */
	ck_assert_int_eq(kb_gw_limiter_hit(l, "10.0.0.1", 3, 60000, 2000),
			 59000);
	ck_assert_int_eq(kb_gw_limiter_hit(l, "10.0.0.1", 3, 60000, 60999), 1);
	/* Other keys count on their own. */
	ck_assert_int_eq(kb_gw_limiter_hit(l, "10.0.0.2", 3, 60000, 2000), 0);
	/* A new window. */
	ck_assert_int_eq(kb_gw_limiter_hit(l, "10.0.0.1", 3, 60000, 61000), 0);
	/* No limit counts nothing. */
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(kb_gw_limiter_hit(l, "10.0.0.3", 0, 60000, 1),
				 0);
	kb_gw_limiter_destroy(l);
	kb_gw_limiter_destroy(NULL);
}
END_TEST

START_TEST(slots_per_key)
{
	struct kb_gw_limiter *l = kb_gw_limiter_new(16);

	ck_assert_int_eq(kb_gw_limiter_take(l, "alice", 2), 0);
	ck_assert_int_eq(kb_gw_limiter_take(l, "alice", 2), 0);
	ck_assert_int_eq(kb_gw_limiter_take(l, "alice", 2), -EBUSY);
	ck_assert_int_eq(kb_gw_limiter_take(l, "bob", 2), 0);
	kb_gw_limiter_release(l, "alice");
	ck_assert_int_eq(kb_gw_limiter_take(l, "alice", 2), 0);
	/* Releasing what is not held changes nothing. */
	kb_gw_limiter_release(l, "carol");
	ck_assert_int_eq(kb_gw_limiter_take(l, "alice", 0), 0);
	kb_gw_limiter_destroy(l);
}
END_TEST

START_TEST(full_table)
{
	struct kb_gw_limiter *l = kb_gw_limiter_new(2);
	char key[16];

	ck_assert_int_eq(kb_gw_limiter_hit(l, "a", 5, 1000, 0), 0);
	ck_assert_int_eq(kb_gw_limiter_take(l, "b", 1), 0);
	/* Both places in use: a third key is refused, not let through. */
	ck_assert_int_eq(kb_gw_limiter_hit(l, "c", 5, 1000, 500), -1);
	ck_assert_int_eq(kb_gw_limiter_take(l, "c", 1), -ENOSPC);
	/* a's window is over: its place is taken over. */
	ck_assert_int_eq(kb_gw_limiter_hit(l, "c", 5, 1000, 1000), 0);
	/* b gives its slot back: its place can go (to a slot, not before
	 * c's window ends). */
	kb_gw_limiter_release(l, "b");
	ck_assert_int_eq(kb_gw_limiter_take(l, "d", 1), 0);
	kb_gw_limiter_destroy(l);

	/* Many keys through a small table, each after the last's window. */
	l = kb_gw_limiter_new(4);
	for (int i = 0; i < 1000; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		ck_assert_int_eq(
			kb_gw_limiter_hit(l, key, 1, 10, (int64_t)i * 10), 0);
	}
	kb_gw_limiter_destroy(l);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gateway_limiter");
	TCase *tc = tcase_create("limiter");

	if (sodium_init() < 0)
		return 1;
	tcase_add_test(tc, rate_per_window);
	tcase_add_test(tc, slots_per_key);
	tcase_add_test(tc, full_table);
	suite_add_tcase(s, tc);
	return kb_check_run(s);
}
