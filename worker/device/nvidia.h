/* kb_nvidia: the NVIDIA family of the device table (device.h), and what
 * is NVIDIA's own in it.
 *
 * The device (nvidia.c): a GPU worker reads its device once at start-up
 * (kb_nvidia_probe): name, compute capability (which nvcc target to build
 * for), CUDA driver version, PCI bus id, UUID and the minor number of its
 * /dev/nvidiaN node (which device node the sandbox binds into runs). The
 * device is the first one CUDA enumerates under the worker's own
 * CUDA_VISIBLE_DEVICES, exactly the one a CUDA program started with that
 * environment would use. Runs name it by UUID in CUDA_VISIBLE_DEVICES
 * (a MIG instance as the worker was given it).
 *
 * Why libcuda and not nvidia-smi: libcuda.so.1 is on every host that can
 * run a CUDA program at all (the container runtime's "compute"
 * capability), nvidia-smi only where the "utility" capability is mounted
 * too; and libcuda applies CUDA_VISIBLE_DEVICES (index, GPU-/MIG- UUID)
 * and CUDA's own device order itself, which nvidia-smi does not. The probe
 * runs in a forked child that exits afterwards, so the worker process
 * holds no driver state, and a driver that hangs (a broken GPU) costs a
 * timeout, not the worker.
 *
 * Readings and the fault watch (nvidia_nvml.c): clocks, temperature and
 * power for the Result's system info are read through NVML
 * (dlopen("libnvidia-ml.so.1"), the library nvidia-smi itself uses;
 * KB_NVML_LIB names another) by PCI bus id; every reading is best effort.
 * NVML also watches each run for device faults: the device's
 * critical-Xid and double-bit-ECC events and its volatile uncorrected ECC
 * count across one run, and whether the GPU is lost.
 *
 * NVML events are per device: a watch also sees faults that another
 * process on the same GPU (or, under MIG, another instance of it) causes.
 * It is meant for a worker that owns its GPU, one worker per GPU, as
 * deployed. Pending Xid events all carry the latest Xid (NVML's
 * nvmlEventSetWait), so a fault followed by a consequential Xid (43, 45)
 * before the drain reads as the later one; an ECC fault still shows as
 * its own event and in the ECC count.
 *
 * Thread-safety: kb_nvidia_probe() forks: call it before starting
 * threads. The readings, kb_nvidia_driver_string() and the watch are
 * thread-safe (NVML is opened once, under pthread_once; a watch belongs
 * to the thread that started it). The arch and Xid helpers are pure.
 */
#ifndef KB_NVIDIA_H
#define KB_NVIDIA_H

#include <stddef.h>

#include "device.h"

/* Reads the first CUDA device visible to this process into *g (zeroed
 * first; g->family = &kb_device_nvidia, g->minor = -1 unless found).
 * Runs the driver calls in a child process killed after timeout_s.
 * Returns 0 with g->ok = 1, or -1 with g->why set (no libcuda, no device,
 * driver error, timeout). Not thread-safe (forks). */
int kb_nvidia_probe(struct kb_device_info *g, double timeout_s);

/* The nvcc target for a compute capability: "<major><minor>", with the
 * arch-specific suffix "a" from 9.0 on (9.0 -> "90a", 10.0 -> "100a"; 8.0
 * -> "80", 8.9 -> "89", 7.5 -> "75"): a worker builds for exactly its own
 * device, so the arch-specific features (wgmma, TMA multicast, tcgen05)
 * are always usable. Writes into out; returns 0, or -EINVAL for a
 * capability below 5.0 or a buffer too small. */
int kb_nvidia_arch_for_cc(int major, int minor, char *out, size_t out_size);

/* The nvcc target conventionally used for a device type name ("H100" ->
 * "90a", "A100" -> "80", "L4" -> "89", "T4" -> "75", "B200" -> "100a",
 * case-insensitive), for when the device cannot be read; NULL when the
 * name is not in the table. */
const char *kb_nvidia_arch_for_name(const char *gpu);

/* 1 if s is a plausible nvcc target: 2 or 3 digits, optionally followed by
 * "a" or "f" ("90a", "100f", "75"). */
int kb_nvidia_arch_valid(const char *s);

/* The driver's version string ("550.54.15") into out; returns 0, or -1
 * (out = "") without NVML. */
int kb_nvidia_driver_string(char *out, size_t out_size);

/* 1 when Xid xid reports a fault of the device, its memory, firmware or
 * driver (nvidia_nvml.c lists them, with NVIDIA's descriptions and
 * sources); 0 for Xids that a program on the device can cause (13, 31,
 * 43, 45, 68), corrected errors (92) and every Xid not in the list.
 * Pure. */
int kb_nvidia_xid_is_device_fault(unsigned xid);

/* NVIDIA's description of an Xid in the list ("GPU has fallen off the
 * bus"), or NULL. Pure. */
const char *kb_nvidia_xid_name(unsigned xid);

/* The table's NVML operations (nvidia_nvml.c), for nvidia.c's entry, and
 * the minor number of a device by PCI bus id (-1 when NVML cannot say). */
int kb__nvidia_sample(const struct kb_device_info *g,
		      struct kb_device_sample *s);
int kb__nvidia_describe(const struct kb_device_info *g, const char *gpu,
			struct kb_device_desc *out);
struct kb_device_watch *kb__nvidia_watch_start(const struct kb_device_info *g,
					       char *errstr,
					       size_t errstr_size);
enum kb_device_watch_result kb__nvidia_watch_end(struct kb_device_watch *w,
						 char *why, size_t why_size);
int kb__nvidia_nvml_minor(const char *pci);

#endif
