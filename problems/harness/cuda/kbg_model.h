/* kbg_model.h: the pure, host-only decisions of the GPU timing driver.
 *
 * Everything here is arithmetic on numbers the driver read off the device
 * or measured; nothing touches a GPU, so all of it is unit-tested on a
 * machine without one (tests/cuda/test_kbg_model.c):
 *
 *   kbg_peak_*       generous physical ceilings (memory bandwidth, math
 *                    throughput per operation class) from device attributes
 *                    and a table of known devices;
 *   kbg_flush_bytes  how much to stream through L2 to flush it;
 *   kbg_limits_*     the stopping rule and warm-up per mode, with the
 *                    per-case overrides (min_runs, max_runs, max_ms);
 *   kbg_outlives     whether the submission's work outlives the timed
 *                    region (work on a non-blocking stream);
 *   kbg_median       median of a small array (in place);
 *   kbg_time_*       a timed call's sample from the parent's own
 *                    measurements (README.md, "The sentinel"), and
 *                    their calibration.
 *
 * Pure and thread-safe (no globals). C17, also valid C++ (extern "C").
 */
#ifndef KBG_MODEL_H
#define KBG_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "harness.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

/* What the driver knows about the device (cudaDeviceGetAttribute values;
 * 0 = unknown). On AMD GPUs, arch is the gfx target ("gfx942:sramecc+:
 * xnack-"), cc_major/minor HIP's numbers for it and sms the compute units;
 * on NVIDIA GPUs arch is "sm_<major><minor>" or "". */
struct kbg_devinfo {
	char name[256];
	char arch[64];
	int cc_major, cc_minor;
	int sms;           /* multiprocessors (compute units on AMD) */
	int clock_khz;     /* peak SM clock */
	int mem_clock_khz; /* peak memory clock (DDR: half the data rate) */
	int bus_bits;      /* global memory bus width */
	size_t l2_bytes;
	size_t mem_bytes;
};

/* The arithmetic unit whose rate bounds a problem's flops. */
enum kbg_ops {
	KBG_OPS_NONE = 0, /* no flops bound (bandwidth only) */
	KBG_OPS_FP32,     /* float32 on the CUDA cores (FMA = 2 flops) */
	KBG_OPS_FP16_TC,  /* float16 inputs on the tensor cores, dense */
	KBG_OPS_TF32_TC,  /* float32 inputs on the tensor cores (tf32) */
	KBG_OPS_COUNT
};

/* Margin applied on top of every ceiling: attributes report the boost
 * clock, but a floor must never flag an honest run, so we err high. */
#define KBG_PEAK_MARGIN 1.10

/* Flops per clock per SM for a dense operation class on compute
 * capability major.minor (FMA counted as 2). Generous: where a generation
 * has two rates (fp16 vs fp32 accumulation), the faster one. Unknown
 * architectures get a rate above any shipping part. */
double kbg_flops_per_clk_sm(int major, int minor, enum kbg_ops ops);

/* The same for an AMD gfx target ("gfx942", features after a colon
 * ignored), per compute unit: gfx908 (MI100), gfx90a (MI250X, MI210),
 * gfx940-942 (MI300X, MI300A, MI325X), gfx950 (MI355X); unknown targets
 * get a rate above any shipping part. */
double kbg_flops_per_clk_cu(const char *gfx, enum kbg_ops ops);

/* 1 when d is an AMD GPU (arch starts with "gfx"). */
int kbg_is_amd(const struct kbg_devinfo *d);

/* Peak DRAM bandwidth from the attributes, mem_clock x 2 (double data
 * rate) x bus width; 0 when either is unknown. bytes/s. */
double kbg_bw_from_attrs(const struct kbg_devinfo *d);

/* Peak DRAM bandwidth of a device known by name (datasheet; the table in
 * kbg_model.c), or 0. bytes/s. */
double kbg_bw_from_table(const char *name);

/* Peak DRAM bandwidth of one device of an AMD gfx target, the fastest
 * part of that target (gfx942: MI325X's 6 TB/s), for a device whose name
 * the table does not know (older ROCm names devices "" or by PCI id), or
 * 0. bytes/s. */
double kbg_bw_from_gfx(const char *gfx);

/* The last-level cache a flush must clear: L2, or on AMD targets with a
 * memory-side cache (MI300's Infinity Cache, 256 MB, not an attribute)
 * that cache when larger. bytes. */
size_t kbg_llc_bytes(const struct kbg_devinfo *d);

/* The ceilings used for the floor: bandwidth is the larger of the
 * attribute-derived and the name table's value (AMD: the gfx table's when
 * the name is not in it), times KBG_PEAK_MARGIN; flops are SMs x clock x kbg_flops_per_clk_sm
 * (AMD: CUs x clock x kbg_flops_per_clk_cu) x KBG_PEAK_MARGIN, divided by
 * min_work (the fraction of the nominal flops the fastest known algorithm
 * must still do: 1 for plain, < 1 where e.g. Strassen or Winograd apply,
 * 0 = no flops bound). *source says where bandwidth came from ("attributes",
 * "table", "gfx", "none"). */
void kbg_peak_derive(const struct kbg_devinfo *d, enum kbg_ops ops,
		     double min_work, struct kbh_peak *out,
		     const char **source);

/* Bytes to stream through the last-level cache (kbg_llc_bytes) before
 * each sample: 4 x LLC (at least the 2 x the rules ask for; replacement is
 * not strictly LRU and Hopper's L2 holds some lines in both partitions),
 * at least 64 MiB, rounded up to 1 MiB; 256 MiB when it is unknown (MI300: 4 x 256 MiB = 1 GiB). */
size_t kbg_flush_bytes(size_t llc_bytes);

/* Limits of one case's timing. */
struct kbg_limits {
	struct kbh_stop_rule stop;
	uint32_t warmup_min; /* untimed calls before sampling ... */
	uint32_t warmup_max; /* ... at most this many ... */
	uint64_t warmup_ns;  /* ... continuing until this much wall time */
};

/* Defaults per mode (test mode has no timing; it gets the benchmark
 * values). See kbg_model.c for the numbers and why. */
void kbg_limits_default(enum kbh_mode mode, struct kbg_limits *l);

/* Applies the optional case keys min_runs, max_runs, max_ms (bounded:
 * 1..100000 runs, 1..600000 ms; min_runs <= max_runs) on top of the
 * defaults. Profile mode ignores them (a fixed, small number of calls).
 * 0, or -EINVAL/-ERANGE with err set. */
int kbg_limits_from_case(enum kbh_mode mode, const struct kbh_case *c,
			 struct kbg_limits *l, char *err, size_t err_size);

/* The case keys the driver itself reads (NULL-terminated). */
extern const char *const kbg_driver_keys[];

/* Median of v[0..n) (sorts v). 0 when n == 0. */
double kbg_median(double *v, size_t n);

/* Work outliving the timed region: gap_med_ns is the median time between
 * the end event (recorded on the legacy stream right after custom_kernel
 * returned) and a tail event recorded after cudaDeviceSynchronize();
 * base_ns the same gap measured with no submission work. Returns 1 when
 * the gap exceeds the baseline by more than 20 us + 2% of mean_ns: some
 * work the end event did not wait for (a non-blocking stream, another
 * thread) was still running. */
int kbg_outlives(double gap_med_ns, double base_ns, double mean_ns);

/* ---- where a sample comes from ------------------------------------------
 * Every number below is the parent's: its host clock (CLOCK_MONOTONIC) or
 * the device's global timer as read by its own sentinel kernels
 * (kbg_dev.h). Nothing the child reports is an input. */

/* One timed call. */
struct kbg_tcall {
	uint64_t t_go;       /* host: request posted */
	uint64_t t_rel;      /* host: hold released (the child had launched) */
	uint64_t t_seen;     /* host: the child's "done" seen */
	uint64_t t_probe;    /* host: the parent's context seen back after
			   * "done" (the end probe running, or the watching
			   * successor probe ended); 0 = not seen */
	uint64_t rel_dev;    /* device: the hold saw its release (or broke) */
	uint64_t back_dev;   /* device: the successor probe started; 0 = none */
	uint64_t probe_dev;  /* device: that moment (end probe's start, or
			     * the watching probe's end); 0 = none */
	uint64_t watch_dev;  /* device: the next watch started; 0 = none */
	uint64_t outside_ns; /* device: another context's turns while the
			      * GPU was the parent's (before "go") */
	uint64_t p_charge_ns; /* device: turns of another context while the
			       * successor probe watched, less their switches
			       * (kbg_time_switch_ns); not 0 sends the call to
			       * the host path */
	uint64_t age_ns;      /* host: how long the watch had run at "go" */
	int p_watch;          /* the successor probe watched until "done" */
	int broken;           /* the hold broke after "go": the call's work
			   * needed the GPU before it was released */
};

/* Calibration, from calls that run no user code (kbg_time_calibrate). */
struct kbg_tcal {
	double dev_ns;   /* median back_dev - rel_dev */
	double rel_ns;   /* median end - t_rel (host path) */
	double go_ns;    /* median end - t_go (host path, broken hold) */
	double probe_ns; /* 90th percentile of t_probe - t_seen */
	double short_ns; /* back_dev - rel_dev below this: the child's
			  * context ran out of work (its time slice had not
			  * expired), so back_dev is the end of the call */
	/* device-path calls (a successor probe): */
	double tail_ns;   /* median (t_seen - t_rel) - (back_dev - rel_dev):
			   * from the probe to "done" seen */
	double dprobe_ns; /* 90th percentile of t_probe - t_seen */
	double wgap_ns;   /* median watch_dev - probe_dev */
	double launch_ns; /* median t_rel - t_go: an empty call's "launched"
			   * seen by the parent */
};

enum kbg_tpath {
	KBG_TPATH_DEVICE = 0, /* back_dev - rel_dev: the device's account */
	KBG_TPATH_HOST,       /* the parent's host window from the release */
	KBG_TPATH_HOST_GO,    /* broken hold: the window from "go" */
};

/* The shortest time, on the device clock, in which another context can
 * have had the GPU between two of the parent's kernels: the two switches
 * of an empty call's round trip (dev_ns) less a 50 us margin; 100 us
 * before calibration. A parent's kernel that starts sooner after the
 * last one than this (plus what that step costs with nothing in the way)
 * proves the child's context did not run in between. */
double kbg_time_turn_ns(const struct kbg_tcal *cal);

/* How long after "go" the parent releases its hold if the child has not
 * said it launched: an empty call's launch_ns plus 20 us (500 us before
 * calibration, and at most that). Host time the child spends inside
 * custom_kernel before its GPU work runs is kept out of the sample up to
 * this, no more: a copy engine runs while the hold keeps the SMs, so a
 * call could otherwise copy its inputs out, compute on the host and copy
 * the result back unseen. */
double kbg_time_release_ns(const struct kbg_tcal *cal);

/* What a turn of another context is charged less (a jump of a watch, a
 * late gap): the switches of an empty call's round trip (dev_ns) less a
 * 10 us margin; 0 before calibration (the whole jump). */
double kbg_time_switch_ns(const struct kbg_tcal *cal);

/* Which path a call's sample takes: DEVICE when the successor probe
 * came back no sooner than kbg_time_turn_ns after the release (sooner,
 * it ran before the child's work) and before short_ns (later, the
 * child's time slice may have run out), and watched until "done" without
 * seeing a turn of the child's context (p_charge_ns 0: work queued after
 * the probe came back, after host time that the device's account would
 * leave out: a synchronise inside the call, or a child that says it
 * launched before it did); HOST_GO for a broken
 * hold; else HOST (timed from the release, less rel_ns, or less dev_ns
 * + tail_ns where the probe took the GPU from the child's context). */
enum kbg_tpath kbg_time_path(const struct kbg_tcal *cal,
			     const struct kbg_tcall *c);

/* The end of a host-path call: t_seen, or later where the end probe
 * started later than calibration allows (probe_ns, or dprobe_ns where a
 * successor probe took the GPU from the child's context: the child said
 * "done" before its work ended). */
uint64_t kbg_time_end(const struct kbg_tcal *cal, const struct kbg_tcall *c);

/* Work the child's context ran between the parent's context coming back
 * after "done" (probe_dev) and the next watch (the parent's reset of
 * persisting L2 lines runs there): where the gap was long enough for a
 * turn of another context, the gap less its calibrated length (wgap_ns)
 * and less kbg_time_switch_ns, else 0. */
double kbg_time_late_work(const struct kbg_tcal *cal,
			  const struct kbg_tcall *c);

/* The parent's measurement of a call (ns, >= 0) and its path: the path's
 * window less its calibrated overhead, plus outside_ns (work the child
 * ran on the GPU before the call's "go": a head start, charged to the
 * call) and kbg_time_late_work. */
double kbg_time_sample(const struct kbg_tcal *cal, const struct kbg_tcall *c,
		       enum kbg_tpath *path);

/* What a lie may gain: max(1 % of m, 2 us), the bound issue 29 sets. */
double kbg_time_allowance(double m);

/* A call's score from the parent's measurement m and the child's claim
 * (its own event time): the claim where it lies in [m - allowance, m],
 * else the nearer end; m where the claim is forged (outside the parent's
 * window) or not a number. So the claim refines the parent's measurement
 * (it is more precise for an honest child) but can move the score at
 * most kbg_time_allowance(m) below it. */
double kbg_time_score(double m, double claim, int forged);

/* Calibration from empty calls: n_dev through the device path (each
 * with back_dev) and n_host through the host path (no successor probe:
 * one queued behind the hold would interrupt the call, and the host
 * path's overheads are those of calls without it; each with t_probe);
 * slice_ns, back_dev - rel_dev of a call that ran kbg_dev_spin(spin_ns).
 * The device-path calls' t_seen and t_probe (0: none) give tail_ns and
 * dprobe_ns, their probe_dev and watch_dev wgap_ns; a
 * device-path call whose probe came back sooner than 100 us after the
 * release (before the call's work: no turn of the child's) is left out.
 * short_ns is the time slice that test saw less a margin (the larger of
 * 30 us and 1 %; slice_ns < spin_ns: a probe got in before the work
 * ended), else half of spin_ns. The calls
 * are not modified. 0, or -1 when either count is 0 (device-path calls
 * left out included). */
int kbg_time_calibrate(const struct kbg_tcall *dev, size_t n_dev,
		       const struct kbg_tcall *host, size_t n_host,
		       double slice_ns, double spin_ns, struct kbg_tcal *out);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif
