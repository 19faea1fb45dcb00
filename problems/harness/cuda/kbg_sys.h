/* kbg_sys.h: system information through NVML, loaded with dlopen.
 *
 * libnvidia-ml.so.1 ships with the driver, not the toolkit, so eval.out
 * must link and run without it: we dlopen it at start-up and resolve the
 * few entry points we use. Without it every NVML field stays unknown (-1)
 * and the report says system.nvml: no.
 *
 * Thread-safety: one kbg_sys per process, used from one thread.
 */
#ifndef KBG_SYS_H
#define KBG_SYS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

struct kbg_sys;

/* One reading of the device's state; -1 = unknown. */
struct kbg_sys_sample {
	int sm_mhz;
	int mem_mhz;
	int temp_c;
	double power_w;
	long long throttle; /* NVML clock-event reasons bit mask */
};

/* Opens NVML (if present) and finds the device with this PCI bus id
 * ("0000:1b:00.0", from cudaDeviceGetPCIBusId). Never fails: returns an
 * object whose queries report unknowns when NVML is missing; NULL only
 * when out of memory. */
struct kbg_sys *kbg_sys_open(const char *pci_bus_id);
void kbg_sys_close(struct kbg_sys *s); /* NULL-safe; nvmlShutdown */

/* 1 when NVML was loaded and the device found. */
int kbg_sys_ok(const struct kbg_sys *s);

/* Driver version string ("580.95.05"), or "" when unknown. */
const char *kbg_sys_driver(const struct kbg_sys *s);

/* Reads clocks, temperature, power and throttle reasons now. */
void kbg_sys_sample(struct kbg_sys *s, struct kbg_sys_sample *out);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif
