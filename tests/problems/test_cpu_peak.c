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

	kbh_cpu_peak(&lo, 1e9);   /* a read measured at 1 GB/s */
	kbh_cpu_peak(&hi, 1e12);  /* an absurdly fast one */
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

int main(void)
{
	Suite *s = suite_create("cpu_peak");
	TCase *t = tcase_create("peak");
	tcase_add_test(t, low_measurement_keeps_a_physical_ceiling);
	suite_add_tcase(s, t);
	SRunner *r = srunner_create(s);
	srunner_run_all(r, CK_NORMAL);
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
