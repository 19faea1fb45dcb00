/* kbg_model.c: see kbg_model.h. Numbers and where they come from.
 *
 * Math rates (flops per clock per SM, dense, FMA = 2):
 *   cc 7.5 (T4)      fp32 128   fp16 tensor 1024  tf32 -    (no tf32)
 *   cc 8.0 (A100)    fp32 128   fp16 tensor 2048  tf32 1024
 *   cc 8.6/8.7/8.9   fp32 256   fp16 tensor 1024  tf32  512 (Ampere/Ada
 *                                                  consumer + L4, fp16
 *                                                  accumulate rate)
 *   cc 9.0 (H100)    fp32 256   fp16 tensor 4096  tf32 2048
 *   cc 10.x/12.x     fp32 256   fp16 tensor 8192  tf32 4096
 *   unknown          fp32 512   fp16 tensor 16384 tf32 8192
 * e.g. H100 SXM: 132 SMs x 1.98 GHz x 4096 = 1070 TFLOP/s fp16 (datasheet
 * 989 at 1.83 GHz), x 1.10 margin. tf32 on a device without it falls back
 * to the fp32 rate.
 *
 * Bandwidth: memory clock (kHz) x 1000 x 2 x bus bits / 8; e.g. H100 SXM
 * 2619 MHz x 2 x 5120 bit / 8 = 3.35 TB/s; L4 (GDDR6, which reports half
 * its data rate) 6251 MHz x 2 x 192 / 8 = 300 GB/s. The table below is the
 * fallback (and a cross-check: the larger wins) when attributes are
 * missing or implausible.
 *
 * AMD (flops per clock per compute unit, dense; datasheet TFLOP/s over
 * CUs x peak engine clock):
 *   gfx908 (MI100)          fp32 256   fp16 matrix 1024  tf32 -  (fp32)
 *   gfx90a (MI250X, MI210)  fp32 256   fp16 matrix 1024  tf32 -  (fp32)
 *   gfx940-942 (MI300X/A)   fp32 256   fp16 matrix 2048  xf32 1024
 *   gfx950 (MI355X)         fp32 256   fp16 matrix 4096  tf32 2048 (none in
 *                                                   hardware: generous)
 *   unknown gfx             fp32 512   fp16 16384        tf32 8192
 * e.g. MI300X: 304 CUs x 2.1 GHz x 2048 = 1307 TFLOP/s fp16 (datasheet
 * 1307.4). fp32 is the packed/matrix rate (MI250X 95.7 TFLOP/s per OAM).
 * AMD's memory clock and bus width attributes understate HBM3 (MI300X
 * reports 1.3 GHz x 8192 bit = 2.7 TB/s of its 5.3), so the name table
 * and the per-target table usually win. A MI250X is two devices (GCDs) of
 * 1.6 TB/s each; HIP shows each as "AMD Instinct MI250X".
 */
#include "kbg_model.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

/* The rate of ops among a generation's three; tf32 0 = none (fp32's). */
static double kbg__rate(enum kbg_ops ops, double fp32, double fp16, double tf32)
{
	switch (ops) {
	case KBG_OPS_FP32:
		return fp32;
	case KBG_OPS_FP16_TC:
		return fp16;
	case KBG_OPS_TF32_TC:
		return tf32 > 0 ? tf32 : fp32;
	case KBG_OPS_NONE:
	case KBG_OPS_COUNT:
		break;
	}
	return 0;
}

double kbg_flops_per_clk_sm(int major, int minor, enum kbg_ops ops)
{
	double fp32, fp16, tf32;

	if (major == 7 && minor == 5) {
		fp32 = 128, fp16 = 1024, tf32 = 0;
	} else if (major == 8 && minor == 0) {
		fp32 = 128, fp16 = 2048, tf32 = 1024;
	} else if (major == 8) {
		fp32 = 256, fp16 = 1024, tf32 = 512;
	} else if (major == 9) {
		fp32 = 256, fp16 = 4096, tf32 = 2048;
	} else if (major == 10 || major == 12) {
		fp32 = 256, fp16 = 8192, tf32 = 4096;
	} else {
		fp32 = 512, fp16 = 16384, tf32 = 8192;
	}
	return kbg__rate(ops, fp32, fp16, tf32);
}

/* The gfx target's number ("gfx942:sramecc+" -> 942, "gfx90a" -> 0x90a
 * read as hex digits), or -1. */
static long kbg__gfx_id(const char *gfx)
{
	char *end;
	long v;

	if (!gfx || strncmp(gfx, "gfx", 3) != 0)
		return -1;
	v = strtol(gfx + 3, &end, 16);
	if (end == gfx + 3 || (*end != '\0' && *end != ':'))
		return -1;
	return v;
}

double kbg_flops_per_clk_cu(const char *gfx, enum kbg_ops ops)
{
	double fp32, fp16, tf32;

	switch (kbg__gfx_id(gfx)) {
	case 0x908:
	case 0x90a:
		fp32 = 256, fp16 = 1024, tf32 = 0;
		break;
	case 0x940:
	case 0x941:
	case 0x942:
		fp32 = 256, fp16 = 2048, tf32 = 1024;
		break;
	case 0x950:
		fp32 = 256, fp16 = 4096, tf32 = 2048;
		break;
	default:
		fp32 = 512, fp16 = 16384, tf32 = 8192;
		break;
	}
	return kbg__rate(ops, fp32, fp16, tf32);
}

int kbg_is_amd(const struct kbg_devinfo *d)
{
	return strncmp(d->arch, "gfx", 3) == 0;
}

double kbg_bw_from_attrs(const struct kbg_devinfo *d)
{
	if (d->mem_clock_khz <= 0 || d->bus_bits <= 0)
		return 0;
	return (double)d->mem_clock_khz * 1e3 * 2.0 * (double)d->bus_bits / 8.0;
}

/* Datasheet peak DRAM bandwidth, most specific names first (matched as
 * substrings of the CUDA device name). */
static const struct {
	const char *match;
	double bytes_per_s;
} kbg__bw_table[] = {
	{"GH200", 4.9e12},
	{"H200", 4.8e12},
	{"H100 NVL", 3.9e12},
	{"H100 PCIe", 2.0e12},
	{"H100", 3.35e12},
	{"H800", 3.35e12},
	{"B200", 8.0e12},
	{"A100 80GB PCIe", 1.935e12},
	{"A100-PCIE-40GB", 1.555e12},
	{"A100-SXM4-40GB", 1.555e12},
	{"A100", 2.039e12},
	{"A800", 2.039e12},
	{"L40S", 0.864e12},
	{"L40", 0.864e12},
	{"A10G", 0.6e12},
	{"A10", 0.6e12},
	{"L4", 0.3e12},
	{"T4", 0.32e12},
	{"V100", 0.9e12},
	{"MI355X", 8.0e12},
	{"MI350X", 8.0e12},
	{"MI325X", 6.0e12},
	{"MI300X", 5.3e12},
	{"MI300A", 5.3e12},
	{"MI250X", 1.6384e12}, /* per GCD (one HIP device) */
	{"MI250", 1.6384e12},
	{"MI210", 1.6384e12},
	{"MI100", 1.2288e12},
};

double kbg_bw_from_table(const char *name)
{
	if (!name)
		return 0;
	for (size_t i = 0; i < sizeof kbg__bw_table / sizeof kbg__bw_table[0];
	     i++)
		if (strstr(name, kbg__bw_table[i].match))
			return kbg__bw_table[i].bytes_per_s;
	return 0;
}

double kbg_bw_from_gfx(const char *gfx)
{
	switch (kbg__gfx_id(gfx)) {
	case 0x908:
		return 1.2288e12;
	case 0x90a:
		return 1.6384e12;
	case 0x940:
	case 0x941:
	case 0x942:
		return 6.0e12;
	case 0x950:
		return 8.0e12;
	default:
		return 0;
	}
}

size_t kbg_llc_bytes(const struct kbg_devinfo *d)
{
	size_t mall = 0;

	switch (kbg__gfx_id(d->arch)) {
	case 0x940:
	case 0x941:
	case 0x942:
	case 0x950:
		mall = (size_t)256 << 20; /* Infinity Cache */
		break;
	default:
		break;
	}
	return mall > d->l2_bytes ? mall : d->l2_bytes;
}

void kbg_peak_derive(const struct kbg_devinfo *d, enum kbg_ops ops,
		     double min_work, struct kbh_peak *out, const char **source)
{
	double attr = kbg_bw_from_attrs(d);
	double table = kbg_bw_from_table(d->name);
	/* the gfx target's fastest part, only for a name the table lacks */
	double gfx = kbg_is_amd(d) && table == 0 ? kbg_bw_from_gfx(d->arch) : 0;
	const char *src = "none";
	double bw = 0;

	/* An attribute below 10 GB/s or above 100 TB/s is not a real
	 * device's: ignore it. */
	if (attr < 1e10 || attr > 1e14)
		attr = 0;
	/* The larger: a floor must never flag an honest run. */
	if (attr > 0 && attr >= table && attr >= gfx) {
		bw = attr;
		src = "attributes";
	} else if (table > 0 && table >= gfx) {
		bw = table;
		src = "table";
	} else if (gfx > 0) {
		bw = gfx;
		src = "gfx";
	}
	out->bytes_per_s = bw * KBG_PEAK_MARGIN;

	out->flops_per_s = 0;
	if (ops != KBG_OPS_NONE && min_work > 0 && d->sms > 0) {
		/* An unknown clock is taken as 3 GHz: above any shipping
		 * data-centre part. */
		double clk = d->clock_khz > 0 ? d->clock_khz * 1e3 : 3e9;
		double rate = kbg_is_amd(d)
				      ? kbg_flops_per_clk_cu(d->arch, ops)
				      : kbg_flops_per_clk_sm(d->cc_major,
							     d->cc_minor, ops);
		out->flops_per_s =
			d->sms * clk * rate * KBG_PEAK_MARGIN / min_work;
	}
	if (source)
		*source = src;
}

size_t kbg_flush_bytes(size_t llc_bytes)
{
	const size_t mib = (size_t)1 << 20;
	size_t n;

	if (llc_bytes == 0)
		return 256 * mib;
	n = 4 * llc_bytes;
	if (n < 64 * mib)
		n = 64 * mib;
	return (n + mib - 1) / mib * mib;
}

/* Defaults. Benchmark: 0.1% relative standard error, at least 10 samples,
 * at most 400 or 2 s of wall time per case (sampling overhead included:
 * input restore, flush, checks). Leaderboard: more samples and time, since
 * the mean becomes a score. Profile: exactly 5 timed calls, for a profiler
 * attached from outside (cudaProfilerStart/Stop bracket them). */
void kbg_limits_default(enum kbh_mode mode, struct kbg_limits *l)
{
	memset(l, 0, sizeof *l);
	l->stop.rel_err = 0.001;
	switch (mode) {
	case KBH_MODE_LEADERBOARD:
		l->stop.min_runs = 20;
		l->stop.max_runs = 1000;
		l->stop.max_ns = 3000000000ull;
		l->warmup_min = 3;
		l->warmup_max = 20;
		l->warmup_ns = 50000000ull;
		break;
	case KBH_MODE_PROFILE:
		l->stop.rel_err = 0; /* never converges: exactly max_runs */
		l->stop.min_runs = 5;
		l->stop.max_runs = 5;
		l->stop.max_ns = 10000000000ull;
		l->warmup_min = 2;
		l->warmup_max = 2;
		l->warmup_ns = 0;
		break;
	case KBH_MODE_TEST:
	case KBH_MODE_BENCHMARK:
	case KBH_MODE_COUNT:
		l->stop.min_runs = 10;
		l->stop.max_runs = 400;
		l->stop.max_ns = 2000000000ull;
		l->warmup_min = 2;
		l->warmup_max = 10;
		l->warmup_ns = 30000000ull;
		break;
	}
}

const char *const kbg_driver_keys[] = {"seed", "min_runs", "max_runs", "max_ms",
				       NULL};

int kbg_limits_from_case(enum kbh_mode mode, const struct kbh_case *c,
			 struct kbg_limits *l, char *err, size_t err_size)
{
	uint64_t v;
	int rc;

	kbg_limits_default(mode, l);
	if (mode == KBH_MODE_PROFILE)
		return 0;
	rc = kbh_case_u64(c, "min_runs", 1, 100000, &v, err, err_size);
	if (rc == 0)
		l->stop.min_runs = (uint32_t)v;
	else if (rc != -ENOENT)
		return rc;
	rc = kbh_case_u64(c, "max_runs", 1, 100000, &v, err, err_size);
	if (rc == 0)
		l->stop.max_runs = (uint32_t)v;
	else if (rc != -ENOENT)
		return rc;
	rc = kbh_case_u64(c, "max_ms", 1, 600000, &v, err, err_size);
	if (rc == 0)
		l->stop.max_ns = v * 1000000ull;
	else if (rc != -ENOENT)
		return rc;
	if (l->stop.min_runs > l->stop.max_runs) {
		snprintf(err, err_size, "min_runs %u exceeds max_runs %u",
			 (unsigned)l->stop.min_runs,
			 (unsigned)l->stop.max_runs);
		return -EINVAL;
	}
	if (err_size)
		err[0] = '\0';
	return 0;
}

static int kbg__cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double kbg_median(double *v, size_t n)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof *v, kbg__cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int kbg_outlives(double gap_med_ns, double base_ns, double mean_ns)
{
	double slack = 20000.0 + 0.02 * (mean_ns > 0 ? mean_ns : 0);
	return gap_med_ns - base_ns > slack;
}

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

/* ---- where a sample comes from ------------------------------------------ */

/* How much sooner than the time slice a probe must land to count as the
 * end of the call (at least; 1 % of the slice where that is more): the
 * slice test's own spread is a few microseconds (2384.5-2387.7 us over
 * eight runs on the H100, bench/RESULTS.md). A probe that got in at the
 * slice's end is refused by the "done" test in any case: the rest of
 * the work, and a switch back to it, come before "done". */
static const double kSliceMarginNs = 30e3;
/* How much sooner than an empty call's (dev_ns) a probe may come back
 * and still have waited for the child's context: the calibration's own
 * spread is about 3 us (bench/RESULTS.md). */
static const double kSwitchMarginNs = 50e3;
/* How much less than an empty call's round trip (dev_ns) a jump of the
 * parent's watch is taken to have cost in switches alone, when charging
 * it (kbg_time_switch_ns): the calibration's own spread is about 3 us,
 * and a turn that preempts a running kernel of the parent's costs more,
 * not less (bench/RESULTS.md). */
static const double kChargeMarginNs = 10e3;
/* kbg_time_turn_ns before dev_ns is known: well under the two switches
 * another context's turn costs on the H100 and the H200 (about 280 us)
 * and well over the 20-30 us in which the parent's probe runs right
 * after its own watch (the scheduler had not switched yet). */
static const double kUncalTurnNs = 100e3;
/* kbg_time_release_ns: how much later than an empty call's "launched"
 * the hold is released, and the most it waits (before calibration). */
static const double kLaunchMarginNs = 20e3;
static const double kReleaseMaxNs = 500e3;
/* kbg_time_allowance: issue 29's bound on what a lie may gain. */
static const double kAllowNs = 2e3;
static const double kAllowRel = 0.01;

static double pos_diff(uint64_t a, uint64_t b)
{
	return a > b ? (double)(a - b) : 0.0;
}

double kbg_time_turn_ns(const struct kbg_tcal *cal)
{
	return cal->dev_ns > kSwitchMarginNs ? cal->dev_ns - kSwitchMarginNs
					     : kUncalTurnNs;
}

/* 1 when the successor probe took the GPU from the child's context:
 * between the release and the probe the GPU went to the child's context
 * and came back, two switches, which an empty call calibrates (dev_ns).
 * A probe back sooner ran before the child's work did (the scheduler
 * had not switched yet). */
static int switched(const struct kbg_tcal *cal, const struct kbg_tcall *c)
{
	return c->back_dev &&
	       pos_diff(c->back_dev, c->rel_dev) >= kbg_time_turn_ns(cal);
}

double kbg_time_release_ns(const struct kbg_tcal *cal)
{
	double t = cal->launch_ns + kLaunchMarginNs;
	return cal->launch_ns > 0 && t < kReleaseMaxNs ? t : kReleaseMaxNs;
}

double kbg_time_switch_ns(const struct kbg_tcal *cal)
{
	return cal->dev_ns > kChargeMarginNs ? cal->dev_ns - kChargeMarginNs
					     : 0.0;
}

/* The end probe's slack on c's path. */
static double probe_slack(const struct kbg_tcal *cal, const struct kbg_tcall *c)
{
	return switched(cal, c) ? cal->dprobe_ns : cal->probe_ns;
}

enum kbg_tpath kbg_time_path(const struct kbg_tcal *cal,
			     const struct kbg_tcall *c)
{
	if (c->broken)
		return KBG_TPATH_HOST_GO;
	/* The probe marks the end of the work if it waited for the child's
	 * context, came back before a time slice could expire, and watched
	 * from then on without seeing the child's context again. A later
	 * turn means more work after host time the device's account would
	 * leave out (a result computed on the host between two turns): the
	 * host's window times that call. */
	if (switched(cal, c) && c->p_watch && c->p_charge_ns == 0 &&
	    pos_diff(c->back_dev, c->rel_dev) < cal->short_ns)
		return KBG_TPATH_DEVICE;
	return KBG_TPATH_HOST;
}

uint64_t kbg_time_end(const struct kbg_tcal *cal, const struct kbg_tcall *c)
{
	double late = c->t_probe ? pos_diff(c->t_probe, c->t_seen) : 0.0;
	double slack = probe_slack(cal, c);
	if (late > slack)
		return c->t_seen + (uint64_t)(late - slack);
	return c->t_seen;
}

double kbg_time_sample(const struct kbg_tcal *cal, const struct kbg_tcall *c,
		       enum kbg_tpath *path)
{
	enum kbg_tpath p = kbg_time_path(cal, c);
	double s;

	if (p == KBG_TPATH_DEVICE)
		s = pos_diff(c->back_dev, c->rel_dev) - cal->dev_ns;
	else if (p == KBG_TPATH_HOST)
		/* a probe that took the GPU from the child's context put its
		 * two switches inside the window */
		s = pos_diff(kbg_time_end(cal, c), c->t_rel) -
		    (switched(cal, c) ? cal->dev_ns + cal->tail_ns
				      : cal->rel_ns);
	else
		s = pos_diff(kbg_time_end(cal, c), c->t_go) - cal->go_ns;
	if (path)
		*path = p;
	s += (double)c->outside_ns + kbg_time_late_work(cal, c);
	return s > 0 ? s : 0;
}

double kbg_time_late_work(const struct kbg_tcal *cal, const struct kbg_tcall *c)
{
	if (!c->watch_dev || !c->probe_dev)
		return 0;
	double gap = pos_diff(c->watch_dev, c->probe_dev);
	if (gap < cal->wgap_ns + kbg_time_turn_ns(cal))
		return 0;
	gap -= cal->wgap_ns + kbg_time_switch_ns(cal);
	return gap > 0 ? gap : 0;
}

double kbg_time_allowance(double m)
{
	return m * kAllowRel > kAllowNs ? m * kAllowRel : kAllowNs;
}

double kbg_time_score(double m, double claim, int forged)
{
	if (forged || !(claim == claim) || claim >= m)
		return m;
	double lo = m - kbg_time_allowance(m);
	if (claim < lo)
		return lo > 0 ? lo : 0;
	return claim;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Quantile q of v (sorted in place). */
static double quantile(double *v, size_t n, double q)
{
	qsort(v, n, sizeof *v, cmp_double);
	return v[(size_t)((double)(n - 1) * q)];
}

int kbg_time_calibrate(const struct kbg_tcall *dev, size_t n_dev,
		       const struct kbg_tcall *host, size_t n_host,
		       double slice_ns, double spin_ns, struct kbg_tcal *out)
{
	double v[256];
	struct kbg_tcall turned[256];
	size_t k = 0;

	/* Device-path calls count only where the probe waited for the
	 * child's context (a turn at least): one that ran before the empty
	 * call's work marks nothing, and taken as the end it would make
	 * tail_ns a turn too long (the host path would then subtract it from
	 * every call, and the device path accept probes that got in
	 * mid-work). */
	for (size_t i = 0; i < n_dev && k < sizeof turned / sizeof turned[0];
	     i++)
		if (pos_diff(dev[i].back_dev, dev[i].rel_dev) >= kUncalTurnNs)
			turned[k++] = dev[i];
	dev = turned;
	n_dev = k;
	if (n_dev == 0 || n_host == 0)
		return -1;
	if (n_host > sizeof v / sizeof v[0])
		n_host = sizeof v / sizeof v[0];
	memset(out, 0, sizeof *out);
	for (size_t i = 0; i < n_dev; i++)
		v[i] = pos_diff(dev[i].back_dev, dev[i].rel_dev);
	out->dev_ns = quantile(v, n_dev, 0.5);
	for (size_t i = 0; i < n_dev; i++)
		v[i] = pos_diff(dev[i].t_seen, dev[i].t_rel) -
		       pos_diff(dev[i].back_dev, dev[i].rel_dev);
	out->tail_ns = quantile(v, n_dev, 0.5);
	for (size_t i = 0; i < n_dev; i++)
		v[i] = dev[i].t_probe ? pos_diff(dev[i].t_probe, dev[i].t_seen)
				      : 0.0;
	out->dprobe_ns = quantile(v, n_dev, 0.9);
	for (size_t i = 0; i < n_dev; i++)
		v[i] = dev[i].watch_dev && dev[i].probe_dev
			       ? pos_diff(dev[i].watch_dev, dev[i].probe_dev)
			       : 0.0;
	out->wgap_ns = quantile(v, n_dev, 0.5);
	for (size_t i = 0; i < n_dev; i++)
		v[i] = pos_diff(dev[i].t_rel, dev[i].t_go);
	out->launch_ns = quantile(v, n_dev, 0.5);
	for (size_t i = 0; i < n_host; i++)
		v[i] = host[i].t_probe
			       ? pos_diff(host[i].t_probe, host[i].t_seen)
			       : 0.0;
	out->probe_ns = quantile(v, n_host, 0.9);
	for (size_t i = 0; i < n_host; i++)
		v[i] = pos_diff(kbg_time_end(out, &host[i]), host[i].t_rel);
	out->rel_ns = quantile(v, n_host, 0.5);
	for (size_t i = 0; i < n_host; i++)
		v[i] = pos_diff(kbg_time_end(out, &host[i]), host[i].t_go);
	out->go_ns = quantile(v, n_host, 0.5);
	/* A probe behind the hold lands at the end of the call or when the
	 * child's time slice expires, whichever comes first: a call that
	 * gave it back clearly before a slice was not preempted. Without a
	 * slice seen in the test, half the test's length. */
	if (slice_ns > 0 && slice_ns < spin_ns)
		out->short_ns = slice_ns - (slice_ns / 100 > kSliceMarginNs
						    ? slice_ns / 100
						    : kSliceMarginNs);
	else
		out->short_ns = spin_ns / 2;
	return 0;
}
