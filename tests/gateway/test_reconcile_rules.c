/* reconcile_rules: which queued submissions the reconciler publishes
 * again or ends, decided with no broker or store. */
#include <check.h>
#include <string.h>

#include "base/reconcile_rules.h"
#include "kb_check_main.h"

static struct kb_gw_log log_now(void)
{
	struct kb_gw_log l;

	memset(&l, 0, sizeof(l));
	strcpy(l.cluster, "c1");
	l.nparts = 2;
	l.low[0] = 10;
	l.high[0] = 20;
	l.low[1] = 0;
	l.high[1] = 5;
	return l;
}

static struct kb_gw_queued placed(int32_t part, int64_t off)
{
	struct kb_gw_queued q;

	memset(&q, 0, sizeof(q));
	q.id = 7;
	q.queued = 1;
	q.published_ms = 1000;
	q.placed = 1;
	strcpy(q.cluster, "c1");
	q.partition = part;
	q.offset = off;
	return q;
}

#define DECIDE(q, now) kb_gw_reconcile_decide(&(q), &l, (now), 60000, 3)

START_TEST(message_in_the_log_is_kept)
{
	struct kb_gw_log l = log_now();
	struct kb_gw_queued q = placed(0, 10);

	ck_assert_int_eq(DECIDE(q, 1000000), KB_GW_RECON_KEEP);
	q = placed(0, 19);
	ck_assert_int_eq(DECIDE(q, 1000000), KB_GW_RECON_KEEP);
	q = placed(1, 0);
	ck_assert_int_eq(DECIDE(q, 1000000), KB_GW_RECON_KEEP);
}
END_TEST

/* Deleted (below low), past the end (the log started again), another
 * cluster (a restarted dev broker) or a partition that is not there. */
START_TEST(message_gone_is_republished)
{
	struct kb_gw_log l = log_now();
	struct kb_gw_queued q = placed(0, 9);

	ck_assert_int_eq(DECIDE(q, 1000000), KB_GW_RECON_REPUBLISH);
	q = placed(0, 20);
	ck_assert_int_eq(DECIDE(q, 1000000), KB_GW_RECON_REPUBLISH);
	q = placed(0, 15);
	strcpy(q.cluster, "c0");
	ck_assert_int_eq(DECIDE(q, 1000000), KB_GW_RECON_REPUBLISH);
	q = placed(2, 0);
	ck_assert_int_eq(DECIDE(q, 1000000), KB_GW_RECON_REPUBLISH);
}
END_TEST

/* With no recorded place, only once the grace period has passed. */
START_TEST(unplaced_waits_for_grace)
{
	struct kb_gw_log l = log_now();
	struct kb_gw_queued q = placed(0, 15);

	q.placed = 0;
	ck_assert_int_eq(DECIDE(q, 1000 + 60000), KB_GW_RECON_KEEP);
	ck_assert_int_eq(DECIDE(q, 1000 + 60001), KB_GW_RECON_REPUBLISH);
}
END_TEST

/* A worker holds it (or evaluated it): the log does not matter; a record
 * that is no longer queued leaves the queue set; one lost too often is
 * ended. */
START_TEST(lease_status_and_limit)
{
	struct kb_gw_log l = log_now();
	struct kb_gw_queued q = placed(0, 1);

	q.lease_active = 1;
	ck_assert_int_eq(DECIDE(q, 1000000), KB_GW_RECON_KEEP);
	q.lease_active = 0;
	q.republished = 2;
	ck_assert_int_eq(DECIDE(q, 1000000), KB_GW_RECON_REPUBLISH);
	q.republished = 3;
	ck_assert_int_eq(DECIDE(q, 1000000), KB_GW_RECON_FAIL);
	q.queued = 0;
	ck_assert_int_eq(DECIDE(q, 1000000), KB_GW_RECON_FORGET);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("reconcile_rules");
	TCase *tc = tcase_create("pure");

	tcase_add_test(tc, message_in_the_log_is_kept);
	tcase_add_test(tc, message_gone_is_republished);
	tcase_add_test(tc, unplaced_waits_for_grace);
	tcase_add_test(tc, lease_status_and_limit);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kb_check_run(suite());
}
