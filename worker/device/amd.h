/* kb_amd: the AMD family of the device table (device.h), from the amdgpu
 * driver's sysfs files (what rocminfo and rocm-smi read), with no ROCm
 * library in the worker.
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
 * Readings (the table's sample): the current engine clock (pp_dpm_sclk,
 * the level marked "*"), the junction (else first) temperature and the
 * power from the device's hwmon directory; the driver: the amdgpu
 * module's version.
 *
 * The fault watch: the RAS uncorrectable error counts
 * (<device>/ras/<block>_err_count, "ue: N") before and after a run, and
 * whether the device is still on the bus. A higher count or a lost device
 * is the device's fault, never the submission's. A device without RAS
 * counters (consumer parts) has no watch: faults after user code started
 * are then charged as before.
 *
 * Thread-safety: the probe and the readings only read files; they are
 * thread-safe except kb_amd_set_sysfs_root, which tests call first.
 */
#ifndef KB_AMD_H
#define KB_AMD_H

#include <stddef.h>

#include "device.h"

/* For tests: the directory standing for /sys (not thread-safe; NULL
 * restores /sys). */
void kb_amd_set_sysfs_root(const char *root);

/* Reads the worker's AMD device into *g (zeroed first; g->family =
 * &kb_device_amd, g->minor = g->render_minor = -1 unless found). visible
 * is ROCR_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES (a list of indices; NULL
 * or "" = device 0). Returns 0 with g->ok = 1, or -1 with g->why set (no
 * KFD, no such device). */
int kb_amd_probe(struct kb_device_info *g, const char *visible);

/* "gfx942" from a gfx_target_version (major*10000 + minor*100 +
 * stepping; minor and stepping in hex digits: 90010 -> "gfx90a").
 * Returns 0, or -EINVAL. Pure. */
int kb_amd_gfx_name(unsigned version, char *out, size_t out_size);

/* 1 if s is a plausible hipcc --offload-arch: "gfx" and 3 or 4
 * alphanumerics, optionally features (":sramecc+:xnack-"). Pure. */
int kb_amd_arch_valid(const char *s);

/* The gfx target of an AMD device type name ("MI300" -> "gfx942",
 * "MI250X" -> "gfx90a", "MI355X" -> "gfx950"; case-insensitive), for when
 * the device cannot be read; NULL when not in the table. Pure. */
const char *kb_amd_arch_for_name(const char *gpu);

/* 1 for device type names that are AMD GPUs ("MI..."): the family's
 * claim. Pure. */
int kb_amd_is_amd_name(const char *gpu);

#endif
