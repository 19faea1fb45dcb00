/* Unit tests of the HIP driver's host-side AMD logic, no GPU needed:
 * kbg_model.c's AMD ceilings (per-CU rates by gfx target, bandwidth by
 * name, by target and from attributes), the floor and suspect flag on
 * MI300X, the last-level cache and flush size (Infinity Cache), and
 * kbg_sys_amd.c's readings from a fake sysfs tree. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "kb_check_main.h"
#include "kbg_model.h"
#include "kbg_sys.h"
#include "kbg_sys_amd.h"

#define MIB ((size_t)1 << 20)

/* What HIP reports on an MI300X (ROCm 6): its memory attributes
 * understate HBM3 (1.3 GHz x 8192 bit = 2.7 TB/s of 5.3). */
static struct kbg_devinfo mi300x(const char *name)
{
	struct kbg_devinfo d;
	memset(&d, 0, sizeof d);
	snprintf(d.name, sizeof d.name, "%s", name);
	snprintf(d.arch, sizeof d.arch, "gfx942:sramecc+:xnack-");
	d.cc_major = 9;
	d.cc_minor = 4;
	d.sms = 304;
	d.clock_khz = 2100000;
	d.mem_clock_khz = 1300000;
	d.bus_bits = 8192;
	d.l2_bytes = 4 * MIB;
	return d;
}

static void assert_rel(double got, double want, double rel)
{
	ck_assert_msg(fabs(got - want) <= rel * fabs(want),
		      "got %.6g, want %.6g (rel %.1g)", got, want, rel);
}

START_TEST(amd_flops_per_cu)
{
	ck_assert(kbg_flops_per_clk_cu("gfx942", KBG_OPS_FP16_TC) == 2048);
	ck_assert(kbg_flops_per_clk_cu("gfx942:sramecc+:xnack-",
				       KBG_OPS_TF32_TC) == 1024);
	ck_assert(kbg_flops_per_clk_cu("gfx90a", KBG_OPS_FP16_TC) == 1024);
	/* no xf32 on CDNA2: the fp32 rate */
	ck_assert(kbg_flops_per_clk_cu("gfx90a", KBG_OPS_TF32_TC) == 256);
	ck_assert(kbg_flops_per_clk_cu("gfx950", KBG_OPS_FP16_TC) == 4096);
	ck_assert(kbg_flops_per_clk_cu("gfx950", KBG_OPS_FP32) == 256);
	/* unknown targets: above any shipping part */
	ck_assert(kbg_flops_per_clk_cu("gfx1200", KBG_OPS_FP16_TC) == 16384);
	ck_assert(kbg_flops_per_clk_cu("nonsense", KBG_OPS_FP32) == 512);
	ck_assert(kbg_flops_per_clk_cu("gfx942", KBG_OPS_NONE) == 0);
}
END_TEST

START_TEST(amd_bandwidth_tables)
{
	assert_rel(kbg_bw_from_table("AMD Instinct MI300X"), 5.3e12, 1e-12);
	assert_rel(kbg_bw_from_table("AMD Instinct MI300A"), 5.3e12, 1e-12);
	assert_rel(kbg_bw_from_table("AMD Instinct MI250X"), 1.6384e12, 1e-12);
	assert_rel(kbg_bw_from_table("AMD Instinct MI355X"), 8.0e12, 1e-12);
	assert_rel(kbg_bw_from_gfx("gfx942:sramecc+:xnack-"), 6.0e12, 1e-12);
	assert_rel(kbg_bw_from_gfx("gfx90a"), 1.6384e12, 1e-12);
	assert_rel(kbg_bw_from_gfx("gfx950"), 8.0e12, 1e-12);
	ck_assert(kbg_bw_from_gfx("gfx1100") == 0);
	ck_assert(kbg_bw_from_gfx("sm_90") == 0);
}
END_TEST

START_TEST(amd_peak_by_name_and_attributes)
{
	struct kbg_devinfo d = mi300x("AMD Instinct MI300X");
	struct kbh_peak p;
	const char *src;

	ck_assert_int_eq(kbg_is_amd(&d), 1);
	kbg_peak_derive(&d, KBG_OPS_FP16_TC, 1, &p, &src);
	/* the name wins over the low attributes */
	ck_assert_str_eq(src, "table");
	assert_rel(p.bytes_per_s, 5.3e12 * KBG_PEAK_MARGIN, 1e-12);
	/* 304 CUs x 2.1 GHz x 2048 = 1307 TFLOP/s (datasheet 1307.4) */
	assert_rel(p.flops_per_s, 304 * 2.1e9 * 2048 * KBG_PEAK_MARGIN, 1e-12);

	/* ROCm 5 names devices "" or by PCI id: the gfx target decides */
	d = mi300x("");
	kbg_peak_derive(&d, KBG_OPS_FP32, 1, &p, &src);
	ck_assert_str_eq(src, "gfx");
	assert_rel(p.bytes_per_s, 6.0e12 * KBG_PEAK_MARGIN, 1e-12);
	assert_rel(p.flops_per_s, 304 * 2.1e9 * 256 * KBG_PEAK_MARGIN, 1e-12);

	/* an NVIDIA device with HIP's cc 9.4 numbers keeps NVIDIA's rates */
	d = mi300x("");
	d.arch[0] = '\0';
	kbg_peak_derive(&d, KBG_OPS_FP16_TC, 1, &p, NULL);
	assert_rel(p.flops_per_s,
		   304 * 2.1e9 * kbg_flops_per_clk_sm(9, 4, KBG_OPS_FP16_TC) *
			   KBG_PEAK_MARGIN,
		   1e-12);
}
END_TEST

/* MI300X vectoradd, the largest benchmark: never flag 90% of the
 * datasheet bandwidth, always flag a time below the floor. */
START_TEST(amd_suspect_vectoradd)
{
	struct kbg_devinfo d = mi300x("AMD Instinct MI300X");
	struct kbh_cost c = {6.0 * 268435456.0, 0};
	struct kbh_peak p;

	kbg_peak_derive(&d, KBG_OPS_NONE, 0, &p, NULL);
	double floor_ns = kbh_cost_floor_ns(&c, &p);
	ck_assert_int_eq(kbh_cost_suspect(&c, &p, floor_ns * 0.9), 1);
	ck_assert_int_eq(
		kbh_cost_suspect(&c, &p, c.bytes / (0.9 * 5.3e12) * 1e9), 0);
	/* the same device by attributes alone (gfx table) is no stricter */
	d.name[0] = '\0';
	kbg_peak_derive(&d, KBG_OPS_NONE, 0, &p, NULL);
	ck_assert_int_eq(
		kbh_cost_suspect(&c, &p, c.bytes / (0.9 * 5.3e12) * 1e9), 0);
}
END_TEST

START_TEST(amd_flush_covers_infinity_cache)
{
	struct kbg_devinfo d = mi300x("AMD Instinct MI300X");

	/* L2 is 4 MiB per XCD, the Infinity Cache 256 MiB: the flush must
	 * be sized for the latter, at least twice */
	ck_assert_uint_eq(kbg_llc_bytes(&d), 256 * MIB);
	ck_assert_uint_ge(kbg_flush_bytes(kbg_llc_bytes(&d)), 512 * MIB);
	ck_assert_uint_eq(kbg_flush_bytes(kbg_llc_bytes(&d)), 1024 * MIB);
	snprintf(d.arch, sizeof d.arch, "gfx950");
	ck_assert_uint_eq(kbg_llc_bytes(&d), 256 * MIB);
	/* MI250X: no MALL, L2 (8 MiB) rules */
	snprintf(d.arch, sizeof d.arch, "gfx90a:sramecc+:xnack-");
	d.l2_bytes = 8 * MIB;
	ck_assert_uint_eq(kbg_llc_bytes(&d), 8 * MIB);
	/* NVIDIA: L2 as before */
	d.arch[0] = '\0';
	d.l2_bytes = 50 * MIB;
	ck_assert_uint_eq(kbg_llc_bytes(&d), 50 * MIB);
}
END_TEST

/* ---- sysfs ---- */

static void put(const char *dir, const char *name, const char *text)
{
	char path[1024];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
}

static void mkdirs(const char *path)
{
	char cmd[1200];
	snprintf(cmd, sizeof cmd, "mkdir -p '%s'", path);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(amd_dpm_parse)
{
	ck_assert_int_eq(
		kbg__amd_dpm_current("0: 500Mhz\n1: 1300Mhz\n2: 2100Mhz *\n"),
		2100);
	ck_assert_int_eq(kbg__amd_dpm_current("0: 900Mhz *\n1: 1300Mhz\n"),
			 900);
	ck_assert_int_eq(kbg__amd_dpm_current("0: 900Mhz\n"), -1);
	ck_assert_int_eq(kbg__amd_dpm_current(""), -1);
}
END_TEST

START_TEST(amd_sysfs_readings)
{
	char root[] = "/tmp/kbg_amd_sysfs.XXXXXX", dev[512], hw[600];
	struct kbg_sys_sample s;
	struct kbg_sys *sys;

	ck_assert_ptr_nonnull(mkdtemp(root));
	snprintf(dev, sizeof dev, "%s/bus/pci/devices/0000:c1:00.0", root);
	snprintf(hw, sizeof hw, "%s/hwmon/hwmon3", dev);
	mkdirs(hw);
	put(dev, "pp_dpm_sclk", "0: 500Mhz\n1: 2100Mhz *\n");
	put(dev, "pp_dpm_mclk", "0: 900Mhz\n1: 1300Mhz *\n");
	put(hw, "temp1_input", "41000\n");
	put(hw, "temp1_label", "edge\n");
	put(hw, "temp2_input", "57000\n");
	put(hw, "temp2_label", "junction\n");
	put(hw, "power1_average", "325000000\n");
	{
		char mod[600];
		snprintf(mod, sizeof mod, "%s/module/amdgpu", root);
		mkdirs(mod);
		put(mod, "version", "6.8.5\n");
	}

	/* HIP may print the bus id in upper case */
	sys = kbg_sys_amd_open_at(root, "0000:C1:00.0");
	ck_assert_ptr_nonnull(sys);
	ck_assert_int_eq(kbg_sys_ok(sys), 1);
	ck_assert_str_eq(kbg_sys_driver(sys), "6.8.5");
	kbg_sys_sample(sys, &s);
	ck_assert_int_eq(s.sm_mhz, 2100);
	ck_assert_int_eq(s.mem_mhz, 1300);
	ck_assert_int_eq(s.temp_c, 57); /* junction, not edge */
	assert_rel(s.power_w, 325.0, 1e-12);
	ck_assert(s.throttle == -1);
	kbg_sys_close(sys);

	/* another device: nothing known, every reading unknown */
	sys = kbg_sys_amd_open_at(root, "0000:c2:00.0");
	ck_assert_int_eq(kbg_sys_ok(sys), 0);
	kbg_sys_sample(sys, &s);
	ck_assert_int_eq(s.sm_mhz, -1);
	ck_assert_int_eq(s.temp_c, -1);
	ck_assert(s.power_w < 0);
	kbg_sys_close(sys);
	kbg_sys_close(NULL);

	{
		char cmd[600];
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
		ck_assert_int_eq(system(cmd), 0);
	}
}
END_TEST

static Suite *amd_suite(void)
{
	Suite *s = suite_create("hip_amd");
	TCase *tc = tcase_create("amd");
	tcase_add_test(tc, amd_flops_per_cu);
	tcase_add_test(tc, amd_bandwidth_tables);
	tcase_add_test(tc, amd_peak_by_name_and_attributes);
	tcase_add_test(tc, amd_suspect_vectoradd);
	tcase_add_test(tc, amd_flush_covers_infinity_cache);
	tcase_add_test(tc, amd_dpm_parse);
	tcase_add_test(tc, amd_sysfs_readings);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kb_check_run(amd_suite());
}
