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
 *   kbg_median       median of a small array (in place).
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
	int sms;               /* multiprocessors (compute units on AMD) */
	int clock_khz;         /* peak SM clock */
	int mem_clock_khz;     /* peak memory clock (DDR: half the data rate) */
	int bus_bits;          /* global memory bus width */
	size_t l2_bytes;
	size_t mem_bytes;
};

/* The arithmetic unit whose rate bounds a problem's flops. */
enum kbg_ops {
	KBG_OPS_NONE = 0,   /* no flops bound (bandwidth only) */
	KBG_OPS_FP32,       /* float32 on the CUDA cores (FMA = 2 flops) */
	KBG_OPS_FP16_TC,    /* float16 inputs on the tensor cores, dense */
	KBG_OPS_TF32_TC,    /* float32 inputs on the tensor cores (tf32) */
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
	uint32_t warmup_min;     /* untimed calls before sampling ... */
	uint32_t warmup_max;     /* ... at most this many ... */
	uint64_t warmup_ns;      /* ... continuing until this much wall time */
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

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif
