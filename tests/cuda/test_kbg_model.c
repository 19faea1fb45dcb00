/* Unit tests of the GPU driver's host-side decisions
 * (problems/harness/cuda/kbg_model.c): device ceilings and the physical
 * floor / suspect flag they feed, the L2 flush size, the per-mode limits and
 * their per-case overrides, the stopping rule as the driver configures it,
 * and the "work outlives the timed region" verdict. No GPU needed. */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "kbg_model.h"
#include "kb_check_main.h"

#define MIB ((size_t)1 << 20)

static struct kbg_devinfo h100_sxm(void)
{
	struct kbg_devinfo d;
	memset(&d, 0, sizeof d);
	snprintf(d.name, sizeof d.name, "NVIDIA H100 80GB HBM3");
	d.cc_major = 9;
	d.cc_minor = 0;
	d.sms = 132;
	d.clock_khz = 1980000;
	d.mem_clock_khz = 2619000;
	d.bus_bits = 5120;
	d.l2_bytes = 50 * MIB;
	return d;
}

static void assert_rel(double got, double want, double rel)
{
	ck_assert_msg(fabs(got - want) <= rel * fabs(want),
		      "got %.6g, want %.6g (rel %.1g)", got, want, rel);
}

/* ---- ceilings ----------------------------------------------------------- */

START_TEST(flops_table)
{
	ck_assert_double_eq(kbg_flops_per_clk_sm(9, 0, KBG_OPS_FP16_TC), 4096);
	ck_assert_double_eq(kbg_flops_per_clk_sm(9, 0, KBG_OPS_FP32), 256);
	ck_assert_double_eq(kbg_flops_per_clk_sm(8, 0, KBG_OPS_FP16_TC), 2048);
	ck_assert_double_eq(kbg_flops_per_clk_sm(8, 0, KBG_OPS_FP32), 128);
	ck_assert_double_eq(kbg_flops_per_clk_sm(8, 9, KBG_OPS_FP16_TC), 1024);
	/* T4 has no tf32: falls back to its fp32 rate */
	ck_assert_double_eq(kbg_flops_per_clk_sm(7, 5, KBG_OPS_TF32_TC), 128);
	/* an unknown architecture gets more than any known one */
	ck_assert(kbg_flops_per_clk_sm(99, 0, KBG_OPS_FP16_TC) >
		  kbg_flops_per_clk_sm(10, 0, KBG_OPS_FP16_TC));
	ck_assert_double_eq(kbg_flops_per_clk_sm(9, 0, KBG_OPS_NONE), 0);
}
END_TEST

START_TEST(bandwidth_attrs_and_table)
{
	struct kbg_devinfo d = h100_sxm();
	assert_rel(kbg_bw_from_attrs(&d), 3.352e12, 1e-3);
	d.bus_bits = 0;
	ck_assert_double_eq(kbg_bw_from_attrs(&d), 0);

	assert_rel(kbg_bw_from_table("NVIDIA H100 80GB HBM3"), 3.35e12, 1e-9);
	assert_rel(kbg_bw_from_table("NVIDIA H100 PCIe"), 2.0e12, 1e-9);
	assert_rel(kbg_bw_from_table("NVIDIA H200"), 4.8e12, 1e-9);
	assert_rel(kbg_bw_from_table("NVIDIA A100-SXM4-40GB"), 1.555e12, 1e-9);
	assert_rel(kbg_bw_from_table("NVIDIA A100-SXM4-80GB"), 2.039e12, 1e-9);
	assert_rel(kbg_bw_from_table("NVIDIA L4"), 0.3e12, 1e-9);
	assert_rel(kbg_bw_from_table("Tesla T4"), 0.32e12, 1e-9);
	ck_assert_double_eq(kbg_bw_from_table("Some Future GPU"), 0);
	ck_assert_double_eq(kbg_bw_from_table(NULL), 0);
}
END_TEST

START_TEST(peak_derive_h100)
{
	struct kbg_devinfo d = h100_sxm();
	struct kbh_peak p;
	const char *src = NULL;

	kbg_peak_derive(&d, KBG_OPS_FP16_TC, 0.5, &p, &src);
	ck_assert_str_eq(src, "attributes");
	assert_rel(p.bytes_per_s, 3.352e12 * KBG_PEAK_MARGIN, 1e-3);
	assert_rel(p.flops_per_s, 132 * 1.98e9 * 4096 * KBG_PEAK_MARGIN / 0.5,
		   1e-9);

	/* bandwidth only */
	kbg_peak_derive(&d, KBG_OPS_NONE, 1, &p, NULL);
	ck_assert_double_eq(p.flops_per_s, 0);
	/* min_work 0: no flops bound either */
	kbg_peak_derive(&d, KBG_OPS_FP32, 0, &p, NULL);
	ck_assert_double_eq(p.flops_per_s, 0);
}
END_TEST

START_TEST(peak_derive_fallbacks)
{
	struct kbg_devinfo d = h100_sxm();
	struct kbh_peak p;
	const char *src = NULL;

	/* missing attributes: the table */
	d.mem_clock_khz = 0;
	kbg_peak_derive(&d, KBG_OPS_NONE, 1, &p, &src);
	ck_assert_str_eq(src, "table");
	assert_rel(p.bytes_per_s, 3.35e12 * KBG_PEAK_MARGIN, 1e-9);

	/* an implausible attribute (1 GB/s) is ignored */
	d.mem_clock_khz = 100;
	kbg_peak_derive(&d, KBG_OPS_NONE, 1, &p, &src);
	ck_assert_str_eq(src, "table");

	/* the table wins when it is higher (generous) */
	d = h100_sxm();
	d.mem_clock_khz = 1000000; /* 1.28 TB/s from attributes */
	kbg_peak_derive(&d, KBG_OPS_NONE, 1, &p, &src);
	ck_assert_str_eq(src, "table");

	/* nothing known: no bound at all */
	memset(&d, 0, sizeof d);
	snprintf(d.name, sizeof d.name, "Unknown");
	kbg_peak_derive(&d, KBG_OPS_FP16_TC, 1, &p, &src);
	ck_assert_str_eq(src, "none");
	ck_assert_double_eq(p.bytes_per_s, 0);
	ck_assert_double_eq(p.flops_per_s, 0); /* no SM count */

	/* unknown clock: taken as 3 GHz */
	d.sms = 10;
	d.cc_major = 9;
	kbg_peak_derive(&d, KBG_OPS_FP32, 1, &p, NULL);
	assert_rel(p.flops_per_s, 10 * 3e9 * 256 * KBG_PEAK_MARGIN, 1e-9);
}
END_TEST

/* The floor and suspect flag as the driver uses them (harness.c's
 * kbh_cost_* on kbg_peak_derive's ceilings). */
START_TEST(suspect_vectoradd_h100)
{
	struct kbg_devinfo d = h100_sxm();
	struct kbh_peak p;
	struct kbh_cost c = {6.0 * 268435456.0, 0};

	kbg_peak_derive(&d, KBG_OPS_NONE, 0, &p, NULL);
	double floor_ns = kbh_cost_floor_ns(&c, &p);
	/* 1.61 GB at 3.69 TB/s (3.35 x 1.1) */
	assert_rel(floor_ns, 1.61e9 / 3.687e12 * 1e9, 2e-3);
	ck_assert_int_eq(kbh_cost_suspect(&c, &p, floor_ns * 0.9), 1);
	ck_assert_int_eq(kbh_cost_suspect(&c, &p, floor_ns * 1.01), 0);
	/* an honest run at 90% of the datasheet bandwidth is never flagged */
	ck_assert_int_eq(
		kbh_cost_suspect(&c, &p, c.bytes / (0.9 * 3.35e12) * 1e9), 0);
}
END_TEST

START_TEST(suspect_matmul_h100)
{
	struct kbg_devinfo d = h100_sxm();
	struct kbh_peak p;
	double m = 8192, n = 8192, k = 4096;
	struct kbh_cost c = {2 * (m * k + k * n + m * n), 2 * m * n * k};

	kbg_peak_derive(&d, KBG_OPS_FP16_TC, 0.5, &p, NULL);
	double floor_ns = kbh_cost_floor_ns(&c, &p);
	/* 5.5e11 flops over 2.35 PFLOP/s (1.07 x 1.1 / 0.5) */
	assert_rel(floor_ns, c.flops / p.flops_per_s * 1e9, 1e-12);
	ck_assert(floor_ns > 200e3 && floor_ns < 260e3);
	/* returning a cached result (copying 128 MiB) is far below it */
	ck_assert_int_eq(kbh_cost_suspect(&c, &p, 80e3), 1);
	/* cuBLAS-class 700 TFLOP/s is not */
	ck_assert_int_eq(kbh_cost_suspect(&c, &p, c.flops / 700e12 * 1e9), 0);
}
END_TEST

/* ---- flush -------------------------------------------------------------- */

START_TEST(flush_size)
{
	ck_assert_uint_eq(kbg_flush_bytes(50 * MIB), 200 * MIB); /* H100 */
	ck_assert_uint_eq(kbg_flush_bytes(40 * MIB), 160 * MIB); /* A100 */
	ck_assert_uint_eq(kbg_flush_bytes(4 * MIB), 64 * MIB);   /* T4 */
	ck_assert_uint_eq(kbg_flush_bytes(0), 256 * MIB);
	ck_assert_uint_eq(kbg_flush_bytes(50 * MIB + 1), 201 * MIB);
	for (size_t l2 = 1; l2 < 512 * MIB; l2 = l2 * 3 + 7)
		ck_assert(kbg_flush_bytes(l2) >= 2 * l2);
}
END_TEST

/* ---- limits and the stopping rule --------------------------------------- */

static struct kbh_case mkcase(const char *line)
{
	struct kbh_case c;
	char err[128];
	ck_assert_int_eq(kbh_case_parse(line, &c, err, sizeof err), 0);
	return c;
}

START_TEST(limits_defaults)
{
	struct kbg_limits b, l, p;
	kbg_limits_default(KBH_MODE_BENCHMARK, &b);
	kbg_limits_default(KBH_MODE_LEADERBOARD, &l);
	kbg_limits_default(KBH_MODE_PROFILE, &p);
	ck_assert_double_eq(b.stop.rel_err, 0.001);
	ck_assert_double_eq(l.stop.rel_err, 0.001);
	ck_assert(l.stop.min_runs >= b.stop.min_runs);
	ck_assert(l.stop.max_ns >= b.stop.max_ns);
	ck_assert(b.warmup_min >= 1 && b.warmup_min <= b.warmup_max);
	ck_assert(l.warmup_min >= 1 && l.warmup_min <= l.warmup_max);
	ck_assert_uint_eq(p.stop.min_runs, 5);
	ck_assert_uint_eq(p.stop.max_runs, 5);
}
END_TEST

START_TEST(limits_from_case)
{
	struct kbg_limits l;
	char err[128];
	struct kbh_case c =
		mkcase("size: 4; seed: 1; min_runs: 3; max_runs: 7; "
		       "max_ms: 250");

	ck_assert_int_eq(kbg_limits_from_case(KBH_MODE_BENCHMARK, &c, &l, err,
					      sizeof err),
			 0);
	ck_assert_uint_eq(l.stop.min_runs, 3);
	ck_assert_uint_eq(l.stop.max_runs, 7);
	ck_assert_uint_eq(l.stop.max_ns, 250000000ull);

	/* profile ignores them */
	ck_assert_int_eq(kbg_limits_from_case(KBH_MODE_PROFILE, &c, &l, err,
					      sizeof err),
			 0);
	ck_assert_uint_eq(l.stop.max_runs, 5);

	/* absent keys keep the defaults */
	struct kbg_limits d;
	c = mkcase("size: 4; seed: 1");
	ck_assert_int_eq(kbg_limits_from_case(KBH_MODE_LEADERBOARD, &c, &l, err,
					      sizeof err),
			 0);
	kbg_limits_default(KBH_MODE_LEADERBOARD, &d);
	ck_assert_mem_eq(&l, &d, sizeof l);
}
END_TEST

START_TEST(limits_bad)
{
	static const char *const bad[] = {"seed: 1; min_runs: 9; max_runs: 3",
					  "seed: 1; max_runs: 0",
					  "seed: 1; max_ms: 600001",
					  "seed: 1; min_runs: x", NULL};
	struct kbg_limits l;
	char err[128];
	for (int i = 0; bad[i]; i++) {
		struct kbh_case c = mkcase(bad[i]);
		err[0] = '\0';
		ck_assert_msg(kbg_limits_from_case(KBH_MODE_BENCHMARK, &c, &l,
						   err, sizeof err) < 0,
			      "accepted '%s'", bad[i]);
		ck_assert_msg(err[0], "no message for '%s'", bad[i]);
	}
}
END_TEST

/* The stopping rule with the driver's benchmark limits: steady samples
 * converge after min_runs; noisy ones run into the caps. */
START_TEST(stop_rule_benchmark)
{
	struct kbg_limits l;
	struct kbh_stats s;
	enum kbh_stop st = KBH_STOP_CONTINUE;

	kbg_limits_default(KBH_MODE_BENCHMARK, &l);
	kbh_stats_init(&s);
	for (uint32_t i = 0; i < 1000 && st == KBH_STOP_CONTINUE; i++) {
		kbh_stats_add(&s, 500000.0 + (i % 2 ? 100.0 : -100.0));
		st = kbh_stop_check(&l.stop, &s, (uint64_t)(i + 1) * 1000000);
	}
	ck_assert_int_eq(st, KBH_STOP_CONVERGED);
	ck_assert_uint_eq(s.n, l.stop.min_runs);

	/* 20% noise: never converges within the caps */
	kbh_stats_init(&s);
	st = KBH_STOP_CONTINUE;
	uint64_t t = 0;
	for (uint32_t i = 0; i < 100000 && st == KBH_STOP_CONTINUE; i++) {
		kbh_stats_add(&s, 500000.0 * (i % 2 ? 1.2 : 0.8));
		t += 1000000; /* 1 ms of wall time per sample */
		st = kbh_stop_check(&l.stop, &s, t);
	}
	ck_assert(st == KBH_STOP_MAX_RUNS || st == KBH_STOP_TIME);
	ck_assert(s.n <= l.stop.max_runs);
	ck_assert(t <= l.stop.max_ns + 1000000);
}
END_TEST

/* ---- side streams ------------------------------------------------------- */

START_TEST(median)
{
	double a[] = {5, 1, 3};
	double b[] = {4, 1, 3, 2};
	ck_assert_double_eq(kbg_median(a, 3), 3);
	ck_assert_double_eq(kbg_median(b, 4), 2.5);
	ck_assert_double_eq(kbg_median(NULL, 0), 0);
}
END_TEST

START_TEST(outlives)
{
	/* 10 us baseline, 500 us kernel: slack 20 + 10 us */
	ck_assert_int_eq(kbg_outlives(15e3, 10e3, 500e3), 0);
	ck_assert_int_eq(kbg_outlives(39e3, 10e3, 500e3), 0);
	ck_assert_int_eq(kbg_outlives(41e3, 10e3, 500e3), 1);
	/* half the work escaped the end event */
	ck_assert_int_eq(kbg_outlives(260e3, 10e3, 250e3), 1);
	/* a gap below the baseline is never suspect */
	ck_assert_int_eq(kbg_outlives(5e3, 10e3, 1e3), 0);
}
END_TEST

/* ---- where a sample comes from (kbg_time_*) ----------------------------
 * Figures shaped like the H200's (bench/RESULTS.md, "Times the
 * submission cannot touch"): 283 us from the hold's end to the probe for
 * an empty call, a time slice of about 2.1 ms. */
static struct kbg_tcal tcal(void)
{
	struct kbg_tcal c = {.dev_ns = 283e3,
			     .rel_ns = 300e3,
			     .go_ns = 310e3,
			     .probe_ns = 20e3,
			     .short_ns = 1e6,
			     .tail_ns = 147e3,
			     .dprobe_ns = 20e3,
			     .wgap_ns = 30e3};
	return c;
}

/* An honest call of `work` ns: the probe starts work + 283 us after the
 * release and watches, seeing no turn of another context; "done" is seen
 * 147 us after the probe (the child's context gets the GPU back first),
 * as on the H100; the probe ends 25 us after it started and the next
 * watch starts 30 us after that (device clock). */
static struct kbg_tcall honest(uint64_t work)
{
	struct kbg_tcall c = {0};
	c.t_go = 1000000;
	c.t_rel = c.t_go + 10000;
	c.rel_dev = 5000000000ull;
	c.back_dev = c.rel_dev + 283000 + work;
	c.t_seen = c.t_rel + 430000 + work;
	c.probe_dev = c.back_dev + 25000;
	c.watch_dev = c.probe_dev + 30000;
	c.p_watch = 1;
	return c;
}

START_TEST(time_device_path)
{
	struct kbg_tcal cal = tcal();
	struct kbg_tcall c = honest(50000);
	enum kbg_tpath p;
	double s = kbg_time_sample(&cal, &c, &p);
	ck_assert_int_eq(p, KBG_TPATH_DEVICE);
	ck_assert_double_eq_tol(s, 50000, 1);
	/* "done" early (before the work ended): the device's account does
	 * not read the host's clock */
	c.t_seen = c.t_rel + 1000;
	ck_assert_double_eq_tol(kbg_time_sample(&cal, &c, &p), 50000, 1);
	/* the ablation: were "done" the end, the lie would pay */
	ck_assert_double_lt((double)(c.t_seen - c.t_rel), 50000);
}
END_TEST

START_TEST(time_probe_before_work)
{
	struct kbg_tcal cal = tcal();
	enum kbg_tpath p;
	/* the probe ran 10 us after the release, before the GPU went to the
	 * child's context: its time marks nothing, the host path times the
	 * call (500 us of work) */
	struct kbg_tcall c = honest(500000);
	c.back_dev = c.rel_dev + 10000;
	c.p_watch = 0; /* it ended at once */
	c.t_probe = c.t_seen + 15000;
	double s = kbg_time_sample(&cal, &c, &p);
	ck_assert_int_eq(p, KBG_TPATH_HOST);
	ck_assert_double_eq_tol(s, (double)(c.t_seen - c.t_rel) - cal.rel_ns,
				1);
	/* ablation: taken as the device's account, nearly nothing */
	ck_assert_double_lt((double)(c.back_dev - c.rel_dev) - cal.dev_ns, 1);
	/* an empty call's round trip less 40 us is still a switch */
	c.back_dev = c.rel_dev + 243000;
	c.t_seen = c.t_rel + 243000 + 147000;
	c.probe_dev = c.back_dev + 25000;
	c.p_watch = 1;
	ck_assert_int_eq(kbg_time_path(&cal, &c), KBG_TPATH_DEVICE);
}
END_TEST

START_TEST(time_probe_mid_work)
{
	struct kbg_tcal cal = tcal();
	enum kbg_tpath p;
	/* the probe got in 17 us into 500 us of work (the child's context
	 * let go early: its work waited on something); the rest ran as a
	 * turn of the child's context while the probe watched, charged less
	 * its switches: (483 + 283) - (283 - 10) us. The host's window
	 * times it: "done" seen after the turn */
	struct kbg_tcall c = honest(500000);
	c.back_dev = c.rel_dev + 300000;
	c.p_charge_ns = 483000 + 283000 - 273000;
	c.t_seen = c.t_rel + 300000 + 766000 + 147000;
	c.t_probe = c.t_seen + 20000;
	double s = kbg_time_sample(&cal, &c, &p);
	ck_assert_int_eq(p, KBG_TPATH_HOST);
	ck_assert_double_ge(s, 500000);
	/* "done" sent right after the probe: the probe, released, ends
	 * only after the child's turn (its end seen late moves the end) */
	c.t_seen = c.t_rel + 310000;
	c.t_probe = c.t_rel + 300000 + 766000 + 20000;
	ck_assert_double_ge(kbg_time_sample(&cal, &c, NULL), 500000);
	/* ablation: the probe taken as the end, its watch not counted */
	c.p_charge_ns = 0;
	ck_assert_double_lt(kbg_time_sample(&cal, &c, NULL), 20000);
}
END_TEST

START_TEST(time_host_gap)
{
	struct kbg_tcal cal = tcal();
	enum kbg_tpath p;
	/* 50 us of work, then 1 ms on the host (a result computed there),
	 * then 10 us more: the probe came back after the first work and saw
	 * the second as a turn, charged (10 + 283) - 273 us. The host's
	 * window counts the millisecond */
	struct kbg_tcall c = honest(50000);
	c.p_charge_ns = 10000 + 283000 - 273000;
	c.t_seen = c.t_rel + 283000 + 50000 + 1000000 + 293000 + 147000;
	c.t_probe = c.t_seen + 20000;
	double s = kbg_time_sample(&cal, &c, &p);
	ck_assert_int_eq(p, KBG_TPATH_HOST);
	ck_assert_double_ge(s, 1000000 + 60000);
	/* ablation: the device's account with the turn charged leaves the
	 * host's millisecond out */
	ck_assert_double_lt((double)(c.back_dev - c.rel_dev) - cal.dev_ns +
				    (double)c.p_charge_ns,
			    100000);
}
END_TEST

START_TEST(time_outside_charged)
{
	struct kbg_tcal cal = tcal();
	/* a head start: 40 us of the call's work ran during staging (the
	 * watch saw another context for 40 + 283 us and charged it less 273
	 * us), the call itself then took 10 us */
	struct kbg_tcall c = honest(10000);
	c.outside_ns = 50000;
	double s = kbg_time_sample(&cal, &c, NULL);
	ck_assert_double_ge(s, 50000);
	c.outside_ns = 0; /* ablation: uncharged, the head start pays */
	ck_assert_double_lt(kbg_time_sample(&cal, &c, NULL), 50000);
}
END_TEST

START_TEST(time_host_path)
{
	struct kbg_tcal cal = tcal();
	enum kbg_tpath p;
	/* a long call: the probe came in at the time slice, mid-work */
	struct kbg_tcall c = honest(5000000);
	c.back_dev = c.rel_dev + 2400000;
	c.t_probe = c.t_seen + 15000; /* the end probe, on an idle GPU */
	double s = kbg_time_sample(&cal, &c, &p);
	ck_assert_int_eq(p, KBG_TPATH_HOST);
	/* the probe's two switches are inside the window: less dev_ns +
	 * tail_ns, not rel_ns */
	ck_assert_double_eq_tol(s, 5000000, 1);
	/* "done" 1 ms early: the end probe waits for the work */
	struct kbg_tcall e = c;
	e.t_seen -= 1000000;
	e.t_probe = c.t_seen + 12000;
	ck_assert_double_ge(kbg_time_sample(&cal, &e, NULL), s - 10000);
	/* ablation: no end probe, the lie pays the millisecond */
	e.t_probe = 0;
	ck_assert_double_lt(kbg_time_sample(&cal, &e, NULL), s - 900000);
	/* no successor probe (the last call was long): the host path */
	c.back_dev = 0;
	ck_assert_int_eq(kbg_time_path(&cal, &c), KBG_TPATH_HOST);
}
END_TEST

START_TEST(time_broken_hold)
{
	struct kbg_tcal cal = tcal();
	enum kbg_tpath p;
	/* the call synchronised inside custom_kernel: its work broke the
	 * hold; timed from "go" */
	struct kbg_tcall c = honest(500000);
	c.broken = 1;
	c.t_probe = c.t_seen + 10000;
	double s = kbg_time_sample(&cal, &c, &p);
	ck_assert_int_eq(p, KBG_TPATH_HOST_GO);
	ck_assert_double_eq_tol(s, (double)(c.t_seen - c.t_go) - 310e3, 1);
}
END_TEST

START_TEST(time_probe_watches)
{
	struct kbg_tcal cal = tcal();
	enum kbg_tpath p;
	/* the parent's thread was 500 us late to end the watching probe
	 * (its host clock): nothing of the device's account reads it */
	struct kbg_tcall c = honest(50000);
	c.t_probe = c.t_seen + 500000;
	c.probe_dev = c.back_dev + 500000;
	double s = kbg_time_sample(&cal, &c, &p);
	ck_assert_int_eq(p, KBG_TPATH_DEVICE);
	ck_assert_double_eq_tol(s, 50000, 1);
	/* 200 us of work queued after the probe, "done" at once: the
	 * watching probe saw a turn of the child's context (two switches
	 * and the work) and, released, ended after it: the host path, the
	 * end moved to the probe's */
	c = honest(50000);
	c.t_seen = c.t_rel + 283000 + 50000;
	c.p_charge_ns = 283000 + 200000 - 273000;
	c.t_probe = c.t_seen + 483000 + 20000;
	s = kbg_time_sample(&cal, &c, &p);
	ck_assert_int_eq(p, KBG_TPATH_HOST);
	ck_assert_double_ge(s, 50000 + 200000);
	/* a probe that did not watch proves no end */
	c.p_watch = 0;
	ck_assert_int_eq(kbg_time_path(&cal, &c), KBG_TPATH_HOST);
}
END_TEST

START_TEST(time_late_work)
{
	struct kbg_tcal cal = tcal();
	/* the next watch 30 us after the end probe, as calibrated */
	struct kbg_tcall c = honest(50000);
	ck_assert_double_eq(kbg_time_late_work(&cal, &c), 0);
	/* 150 us late (the reset took longer): no turn fits in that */
	c.watch_dev = c.probe_dev + 30000 + 150000;
	ck_assert_double_eq(kbg_time_late_work(&cal, &c), 0);
	/* the child's work ran in between: two switches and 100 us,
	 * charged less the switches (283 us less the 10 us margin) */
	c.watch_dev = c.probe_dev + 30000 + 283000 + 100000;
	ck_assert_double_eq_tol(kbg_time_late_work(&cal, &c), 110000, 1);
	ck_assert_double_eq_tol(kbg_time_sample(&cal, &c, NULL), 50000 + 110000,
				1);
	/* no next watch (the case's last call): nothing to measure */
	c.watch_dev = 0;
	ck_assert_double_eq(kbg_time_late_work(&cal, &c), 0);
}
END_TEST

START_TEST(time_turn)
{
	struct kbg_tcal cal = tcal();
	ck_assert_double_eq_tol(kbg_time_turn_ns(&cal), 233e3, 1);
	ck_assert_double_eq_tol(kbg_time_switch_ns(&cal), 273e3, 1);
	memset(&cal, 0, sizeof cal); /* before calibration */
	ck_assert_double_eq_tol(kbg_time_turn_ns(&cal), 100e3, 1);
	ck_assert_double_eq(kbg_time_switch_ns(&cal), 0);
}
END_TEST

START_TEST(time_release)
{
	struct kbg_tcal cal = {0};
	/* before calibration: 500 us */
	ck_assert_double_eq_tol(kbg_time_release_ns(&cal), 500e3, 1);
	/* empty calls said "launched" 12-16 us after go: released 20 us
	 * after their median, so a call's host time before its GPU work is
	 * kept out up to that, not up to 500 us (ablation: the fixed
	 * timeout) */
	struct kbg_tcall dev[5], host[5];
	for (int i = 0; i < 5; i++) {
		dev[i] = honest(0);
		dev[i].t_rel = dev[i].t_go + 12000 + 1000 * (uint64_t)i;
		host[i] = honest(0);
		host[i].t_probe = host[i].t_seen + 10000;
	}
	ck_assert_int_eq(kbg_time_calibrate(dev, 5, host, 5, 2.39e6, 4e6, &cal),
			 0);
	ck_assert_double_eq_tol(cal.launch_ns, 14000, 1);
	ck_assert_double_eq_tol(kbg_time_release_ns(&cal), 34000, 1);
	ck_assert_double_lt(kbg_time_release_ns(&cal), 500e3 / 10);
	/* a slow host never makes it longer than before calibration */
	cal.launch_ns = 900e3;
	ck_assert_double_eq_tol(kbg_time_release_ns(&cal), 500e3, 1);
}
END_TEST

START_TEST(time_score)
{
	/* an honest claim 7 us under the measurement of a 600 us call
	 * (allowance 6 us): the nearer end */
	ck_assert_double_eq_tol(kbg_time_score(607e3, 600e3, 0), 600.93e3, 1);
	/* 3 us under: the claim refines it */
	ck_assert_double_eq_tol(kbg_time_score(603e3, 600e3, 0), 600e3, 1);
	/* claims x 0.6: at most the allowance below the measurement */
	ck_assert_double_eq_tol(kbg_time_score(607e3, 360e3, 0), 600.93e3, 1);
	/* a short call: 2 us */
	ck_assert_double_eq_tol(kbg_time_allowance(50e3), 2e3, 1e-6);
	ck_assert_double_eq_tol(kbg_time_score(50e3, 1, 0), 48e3, 1);
	ck_assert_double_eq_tol(kbg_time_allowance(5e6), 50e3, 1e-6);
	/* above the measurement (a probe's switches inside the claim),
	 * forged, or not a number: the measurement */
	ck_assert_double_eq_tol(kbg_time_score(5e6, 5.28e6, 0), 5e6, 1);
	ck_assert_double_eq_tol(kbg_time_score(5e6, 4.99e6, 1), 5e6, 1);
	ck_assert_double_eq_tol(kbg_time_score(5e6, NAN, 0), 5e6, 1);
	/* never negative */
	ck_assert_double_eq(kbg_time_score(1e3, 0, 0), 0);
}
END_TEST

START_TEST(time_calibrate)
{
	struct kbg_tcall v[5], h[5];
	struct kbg_tcal cal;
	for (int i = 0; i < 5; i++) {
		v[i] = honest(0);
		v[i].back_dev += (uint64_t)i * 1000; /* 283..287 us */
		v[i].probe_dev = v[i].back_dev + 23000 + (uint64_t)i * 1000;
		v[i].watch_dev = v[i].probe_dev + 30000;
		v[i].t_probe = v[i].t_seen + 10000 + (uint64_t)i * 1000;
		h[i] = v[i]; /* the host path: no successor probe */
		h[i].back_dev = 0;
		h[i].t_seen = h[i].t_rel + 143000;
		h[i].t_probe = h[i].t_seen + 10000 + (uint64_t)i * 1000;
	}
	ck_assert_int_eq(kbg_time_calibrate(v, 5, h, 5, 2.4e6, 4e6, &cal), 0);
	ck_assert_double_eq_tol(cal.dev_ns, 285e3, 1);
	ck_assert_double_eq_tol(cal.probe_ns, 13e3, 1);
	ck_assert_double_eq_tol(cal.rel_ns, 143e3, 1);
	/* 430 us from the release to "done", less 283..287 */
	ck_assert_double_eq_tol(cal.tail_ns, 145e3, 1);
	ck_assert_double_eq_tol(cal.dprobe_ns, 13e3, 1);
	/* device clock: the next watch 30 us after the probe's end */
	ck_assert_double_eq_tol(cal.wgap_ns, 30e3, 1);
	/* the slice less 30 us (1 % is 24 us) */
	ck_assert_double_eq_tol(cal.short_ns, 2.37e6, 1);
	/* a long slice: less 1 % */
	ck_assert_int_eq(kbg_time_calibrate(v, 5, h, 5, 3.9e6, 4e6, &cal), 0);
	ck_assert_double_eq_tol(cal.short_ns, 3.861e6, 1);
	/* no preemption seen within the test: half its length */
	ck_assert_int_eq(kbg_time_calibrate(v, 5, h, 5, 4.3e6, 4e6, &cal), 0);
	ck_assert_double_eq_tol(cal.short_ns, 2e6, 1);
	ck_assert_int_eq(kbg_time_calibrate(v, 0, h, 5, 1, 1, &cal), -1);
	/* device-path calls whose probe ran before the work (30 us after
	 * the release, "done" 400 us after it) are left out: with three of
	 * five taken, dev_ns would be 30 us and tail_ns 400 us */
	struct kbg_tcall w[5];
	for (int i = 0; i < 5; i++) {
		w[i] = v[i];
		if (i < 3) {
			w[i].back_dev = w[i].rel_dev + 30000;
			w[i].t_seen = w[i].t_rel + 430000;
		}
	}
	ck_assert_int_eq(kbg_time_calibrate(w, 5, h, 5, 2.4e6, 4e6, &cal), 0);
	ck_assert_double_ge(cal.dev_ns, 286e3);
	ck_assert_double_lt(cal.tail_ns, 150e3);
	for (int i = 0; i < 5; i++)
		w[i].back_dev = w[i].rel_dev + 30000;
	ck_assert_int_eq(kbg_time_calibrate(w, 5, h, 5, 2.4e6, 4e6, &cal), -1);
	ck_assert_int_eq(kbg_time_calibrate(v, 5, h, 0, 1, 1, &cal), -1);
	/* the calls are not modified */
	ck_assert_uint_eq(v[4].back_dev - v[4].rel_dev, 287000);
}
END_TEST

static Suite *model_suite(void)
{
	Suite *s = suite_create("cuda_model");
	TCase *tc = tcase_create("model");
	tcase_add_test(tc, flops_table);
	tcase_add_test(tc, bandwidth_attrs_and_table);
	tcase_add_test(tc, peak_derive_h100);
	tcase_add_test(tc, peak_derive_fallbacks);
	tcase_add_test(tc, suspect_vectoradd_h100);
	tcase_add_test(tc, suspect_matmul_h100);
	tcase_add_test(tc, flush_size);
	tcase_add_test(tc, limits_defaults);
	tcase_add_test(tc, limits_from_case);
	tcase_add_test(tc, limits_bad);
	tcase_add_test(tc, stop_rule_benchmark);
	tcase_add_test(tc, median);
	tcase_add_test(tc, outlives);
	tcase_add_test(tc, time_device_path);
	tcase_add_test(tc, time_probe_before_work);
	tcase_add_test(tc, time_probe_mid_work);
	tcase_add_test(tc, time_host_gap);
	tcase_add_test(tc, time_release);
	tcase_add_test(tc, time_outside_charged);
	tcase_add_test(tc, time_host_path);
	tcase_add_test(tc, time_broken_hold);
	tcase_add_test(tc, time_probe_watches);
	tcase_add_test(tc, time_late_work);
	tcase_add_test(tc, time_turn);
	tcase_add_test(tc, time_score);
	tcase_add_test(tc, time_calibrate);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return kb_check_run(model_suite());
}
