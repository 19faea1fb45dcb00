/* The CPU harness's physical ceilings (kbh_cpu_peak): a read measured on a
 * loaded machine comes out low, and must never pull the bandwidth ceiling
 * below what the cores can load from L1 -- that made honest runs
 * "suspect" under load. harness_cpu.c is built here with its main()
 * renamed, and a problem definition that is never used. */
#include <check.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"
#include "harness_cpu.h"

const struct kbh_cpu_problem kbh_cpu_problem_def;

START_TEST(low_measurement_keeps_a_physical_ceiling)
{
	struct kbh_peak lo, hi;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	kbh_cpu_peak(&lo, 1e9);  /* a read measured at 1 GB/s */
	kbh_cpu_peak(&hi, 1e12); /* an absurdly fast one */
	/* Any core of at least 1 GHz loads 128 GB/s from L1. */
	ck_assert_msg(lo.bytes_per_s >= 128e9 * (double)(ncpu > 0 ? 1 : 0),
		      "ceiling %.3g B/s from a 1 GB/s measurement on %ld CPUs",
		      lo.bytes_per_s, ncpu);
	/* A faster measurement can only raise it. */
	ck_assert_msg(hi.bytes_per_s >= lo.bytes_per_s, "%.3g < %.3g",
		      hi.bytes_per_s, lo.bytes_per_s);
	ck_assert_msg(lo.flops_per_s > 0, "flops ceiling %.3g", lo.flops_per_s);
}
END_TEST

/* The flush's LLC: a VM's made-up 300 or 512 MiB is capped (a flush of
 * twice that before every call ran honest ranked jobs into the watchdog);
 * a real size passes; unknown is 64 MiB. */
START_TEST(llc_clamped)
{
	ck_assert_uint_eq(kbh_cpu_llc_clamp((size_t)512 << 20),
			  KBH_CPU_LLC_CAP);
	ck_assert_uint_eq(kbh_cpu_llc_clamp((size_t)300 << 20),
			  KBH_CPU_LLC_CAP);
	ck_assert_uint_eq(kbh_cpu_llc_clamp((size_t)32 << 20),
			  (size_t)32 << 20);
	ck_assert_uint_eq(kbh_cpu_llc_clamp(0), (size_t)64 << 20);
	ck_assert_uint_eq(kbh_cpu_llc_clamp(4096), (size_t)1 << 20);
	ck_assert_uint_le(kbh_cpu_llc_bytes(), KBH_CPU_LLC_CAP);
}
END_TEST

/* The watchdog follows the run's budget: never below the limit's own,
 * above it when slow flushes times the samples need more. */
START_TEST(watchdog_from_budget)
{
	struct kbh_cpu_limits l;
	kbh_cpu_default_limits(&l);
	/* 3 cases, 25 ms flushes: 2 x 3 x (20 + 300 + 13 x 25) ms + 30 s */
	ck_assert_uint_eq(kbh_cpu_watchdog_s(&l, KBH_MODE_LEADERBOARD, 3, 25e6),
			  50);
	/* 1 GiB flushes at 2 GB/s (0.5 s each), 3 cases: 69 s + 30 s */
	unsigned w = kbh_cpu_watchdog_s(&l, KBH_MODE_LEADERBOARD, 3, 0.5e9);
	ck_assert_uint_ge(w, 68);
	ck_assert_uint_le(w, 72);
	/* the limit's own, when larger */
	l.watchdog_s[KBH_MODE_LEADERBOARD] = 500;
	ck_assert_uint_eq(
		kbh_cpu_watchdog_s(&l, KBH_MODE_LEADERBOARD, 3, 0.5e9), 500);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cpu_peak");
	TCase *t = tcase_create("peak");
	tcase_add_test(t, low_measurement_keeps_a_physical_ceiling);
	tcase_add_test(t, llc_clamped);
	tcase_add_test(t, watchdog_from_budget);
	suite_add_tcase(s, t);
	SRunner *r = srunner_create(s);
	srunner_run_all(r, CK_NORMAL);
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
