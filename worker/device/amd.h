/* kb_amdgpu: the AMD device a worker serves, from the amdgpu driver's
 * sysfs files (what rocminfo and rocm-smi read), with no ROCm library in
 * the worker.
 *
 * The device: the KFD topology (<sysfs>/class/kfd/kfd/topology/nodes/N/
 * properties) lists CPU and GPU nodes; GPU nodes (simd_count > 0) in node
 * order are the HIP devices 0, 1, ... A worker serves the first device
 * its ROCR_VISIBLE_DEVICES (else HIP_VISIBLE_DEVICES) names, or device 0.
 * From its properties: the gfx target (gfx_target_version 90402 ->
 * "gfx942"), the PCI address (domain, location_id), and the render node's
 * minor (drm_render_minor: /dev/dri/renderD128), the one DRI node a run
 * needs besides /dev/kfd. The name is the board's product_name where the
 * driver gives one, else "AMD <gfx>".
 *
 * Readings (kb_gpu_sample's fields): the current engine clock
 * (pp_dpm_sclk, the level marked "*"), the junction (else first)
 * temperature and the power from the device's hwmon directory.
 *
 * The fault watch: the RAS uncorrectable error counts
 * (<device>/ras/<block>_err_count, "ue: N") before and after a run, and
 * whether the device is still on the bus. A higher count or a lost device
 * is the device's fault, never the submission's. A device without RAS
 * counters (consumer parts) has no watch: faults after user code started
 * are then charged as before.
 *
 * Thread-safety: the probe and the readings only read files; they are
 * thread-safe except kb_amdgpu_set_sysfs_root, which tests call first.
 */
#ifndef KB_AMDGPU_H
#define KB_AMDGPU_H

#include <stddef.h>

/* For tests: the directory standing for /sys (not thread-safe; NULL
 * restores /sys). */
void kb_amdgpu_set_sysfs_root(const char *root);

/* An AMD device as the probe read it (gpu.h's kb_gpu_probe_amd copies it
 * into a kb_gpu_info). */
struct kb_amdgpu_dev {
	char name[128];      /* product_name, or "AMD gfx942" */
	char gfx[32];        /* "gfx942" */
	char pci_bus_id[32]; /* "0000:c1:00.0" */
	int render_minor;    /* N of /dev/dri/renderDN; -1 when unknown */
	char why[256];       /* when the probe fails: what failed */
};

/* Reads the worker's AMD device into *d (zeroed first). visible is
 * ROCR_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES (a list of indices; NULL or
 * "" = device 0). Returns 0, or -1 with d->why set (no KFD, no such
 * device). */
int kb_amdgpu_probe(struct kb_amdgpu_dev *d, const char *visible);

/* "gfx942" from a gfx_target_version (major*10000 + minor*100 +
 * stepping; minor and stepping in hex digits: 90010 -> "gfx90a").
 * Returns 0, or -EINVAL. Pure. */
int kb_amdgpu_gfx_name(unsigned version, char *out, size_t out_size);

/* 1 if s is a plausible hipcc --offload-arch: "gfx" and 3 or 4
 * alphanumerics, optionally features (":sramecc+:xnack-"). Pure. */
int kb_amdgpu_arch_valid(const char *s);

/* The gfx target of an AMD device type name ("MI300" -> "gfx942",
 * "MI250X" -> "gfx90a", "MI355X" -> "gfx950"; case-insensitive), for when
 * the device cannot be read; NULL when not in the table. Pure. */
const char *kb_amdgpu_arch_for_name(const char *gpu);

/* 1 for device type names that are AMD GPUs ("MI..."). Pure. */
int kb_amdgpu_is_amd_name(const char *gpu);

/* Engine clock (MHz), temperature (°C) and power (mW) of the device at
 * PCI address pci; -1 for what could not be read. Returns 0 when the
 * device's sysfs directory answered (fields may still be -1), or -1. */
int kb_amdgpu_sample(const char *pci, int *sm_mhz, int *temp_c, int *power_mw);

/* The amdgpu driver's version (its module's, else the kernel's
 * release) into out; 0, or -1 with out = "". */
int kb_amdgpu_driver_string(char *out, size_t out_size);

/* The fault watch (see above); kb_gpu_watch_start/_end call these for an
 * AMD device. start returns NULL with errstr set when the device has no
 * RAS counters. end frees w and returns gpu.h's kb_gpu_watch_result
 * values: 1 fault (why names the evidence), 0 clean, -1 unknown. */
struct kb_amdgpu_watch;
struct kb_amdgpu_watch *kb_amdgpu_watch_start(const char *pci, char *errstr,
					      size_t errstr_size);
int kb_amdgpu_watch_end(struct kb_amdgpu_watch *w, char *why, size_t why_size);

#endif
