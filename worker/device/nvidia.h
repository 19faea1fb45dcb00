/* kb_gpu: the NVIDIA device a worker serves, as the device itself says.
 *
 * A GPU worker reads its device once at start-up (kb_gpu_probe): name,
 * compute capability (which nvcc target to build for), CUDA driver
 * version, PCI bus id, UUID and the minor number of its /dev/nvidiaN node
 * (which device node the sandbox binds into runs). The device is the first
 * one CUDA enumerates under the worker's own CUDA_VISIBLE_DEVICES, exactly
 * the one a CUDA program started with that environment would use.
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
 * Clocks, temperature and power for the Result's system info are read
 * through NVML (dlopen("libnvidia-ml.so.1"), the library nvidia-smi
 * itself uses; KB_NVML_LIB names another) by PCI bus id; every reading is
 * best effort. NVML also watches each run for device faults (below).
 *
 * Thread-safety: kb_gpu_probe() forks: call it before starting threads.
 * kb_gpu_sample(), kb_gpu_driver_string() and the watch calls are
 * thread-safe (NVML is opened once, under pthread_once; a watch belongs
 * to the thread that started it). The arch and Xid helpers are pure.
 */
#ifndef KB_GPU_H
#define KB_GPU_H

#include <stddef.h>

struct kb_gpu_info {
	int ok;                 /* a CUDA device was found and read */
	char name[128];         /* "NVIDIA H100 80GB HBM3" */
	int cc_major, cc_minor; /* compute capability */
	int cuda_driver;        /* cuDriverGetVersion(): 12040 = CUDA 12.4 */
	char pci_bus_id[32];    /* "0000:18:00.0" (lowercase) */
	char uuid[48];          /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" */
	int minor;              /* N of /dev/nvidiaN; -1 when unknown */
	char why[256];          /* when !ok: what failed */
	/* AMD devices (kb_gpu_probe_amd fills these and name, pci_bus_id;
	 * kb_gpu_sample and the watch then read amdgpu's sysfs files
	 * instead of NVML: amdgpu.h): */
	int amd;
	char gfx[32];     /* "gfx942" */
	int render_minor; /* N of /dev/dri/renderDN; -1 when unknown */
};

/* Reads the first CUDA device visible to this process into *g (zeroed
 * first; g->minor = -1 unless found). Runs the driver calls in a child
 * process killed after timeout_s. Returns 0 with g->ok = 1, or -1 with
 * g->why set (no libcuda, no device, driver error, timeout). Not
 * thread-safe (forks). */
int kb_gpu_probe(struct kb_gpu_info *g, double timeout_s);

/* Reads the worker's AMD device from amdgpu's sysfs files (amdgpu.h:
 * kb_amdgpu_probe) into *g (zeroed first; g->amd = 1, g->minor = -1).
 * visible: ROCR_VISIBLE_DEVICES or HIP_VISIBLE_DEVICES. Returns 0 with
 * g->ok = 1, or -1 with g->why set. Thread-safe (reads files only). */
int kb_gpu_probe_amd(struct kb_gpu_info *g, const char *visible);

/* The nvcc target for a compute capability: "<major><minor>", with the
 * arch-specific suffix "a" from 9.0 on (9.0 -> "90a", 10.0 -> "100a"; 8.0
 * -> "80", 8.9 -> "89", 7.5 -> "75"): a worker builds for exactly its own
 * device, so the arch-specific features (wgmma, TMA multicast, tcgen05)
 * are always usable. Writes into out; returns 0, or -EINVAL for a
 * capability below 5.0 or a buffer too small. */
int kb_gpu_arch_for_cc(int major, int minor, char *out, size_t out_size);

/* The nvcc target conventionally used for a device type name ("H100" ->
 * "90a", "A100" -> "80", "L4" -> "89", "T4" -> "75", "B200" -> "100a",
 * case-insensitive), for when the device cannot be read; NULL when the
 * name is not in the table. */
const char *kb_gpu_arch_for_name(const char *gpu);

/* 1 if s is a plausible nvcc target: 2 or 3 digits, optionally followed by
 * "a" or "f" ("90a", "100f", "75"). */
int kb_gpu_arch_valid(const char *s);

/* One NVML reading; -1 for what could not be read. */
struct kb_gpu_sample {
	int sm_mhz;
	int temp_c;
	int power_mw;
};

/* Reads the device's SM clock, temperature and power draw. Returns 0 when
 * NVML answered for the device (some fields may still be -1), or -1. */
int kb_gpu_sample(const struct kb_gpu_info *g, struct kb_gpu_sample *s);

/* The driver's version string ("550.54.15") into out; returns 0, or -1
 * (out = "") without NVML. */
int kb_gpu_driver_string(char *out, size_t out_size);

/* The same for g's device: amdgpu's version for an AMD device
 * (kb_amdgpu_driver_string), else kb_gpu_driver_string. */
int kb_gpu_device_driver(const struct kb_gpu_info *g, char *out,
			 size_t out_size);

/* ---- device faults during a run ----
 *
 * The harness's "device API error" exit (110) after user code started is
 * charged to the user (kb_run_classify_started): the submission shares
 * the harness's process and could exit with that code itself. Evidence
 * that the device really failed must come from outside that process: the
 * watch asks NVML, in the worker, for the device's critical-Xid and
 * double-bit-ECC events and its volatile uncorrected ECC count across one
 * run, and whether the GPU is lost.
 *
 * NVML events are per device: a watch also sees faults that another
 * process on the same GPU (or, under MIG, another instance of it) causes.
 * It is meant for a worker that owns its GPU, one worker per GPU, as
 * deployed. Pending Xid events all carry the latest Xid (NVML's
 * nvmlEventSetWait), so a fault followed by a consequential Xid (43, 45)
 * before the drain reads as the later one; an ECC fault still shows as
 * its own event and in the ECC count.
 */

/* 1 when Xid xid reports a fault of the device, its memory, firmware or
 * driver (gpu.c lists them, with NVIDIA's descriptions and sources); 0
 * for Xids that a program on the device can cause (13, 31, 43, 45, 68),
 * corrected errors (92) and every Xid not in the list. Pure. */
int kb_gpu_xid_is_device_fault(unsigned xid);

/* NVIDIA's description of an Xid in the list ("GPU has fallen off the
 * bus"), or NULL. Pure. */
const char *kb_gpu_xid_name(unsigned xid);

enum kb_gpu_watch_result {
	KB_GPU_WATCH_UNKNOWN = -1, /* no watch, or NVML failed: no evidence */
	KB_GPU_WATCH_CLEAN = 0,    /* watched, and no device fault */
	KB_GPU_WATCH_FAULT = 1,    /* the device failed during the watch */
};

struct kb_gpu_watch;

/* Starts watching g's device: registers for its critical-Xid and
 * double-bit-ECC events (those NVML supports on it; events from before
 * the call are not seen) and reads its volatile uncorrected ECC count
 * where ECC is on. Returns the watch, which the caller must end with
 * kb_gpu_watch_end(), or NULL with errstr set: no device was read at
 * start-up, NVML is missing or failed, or it offers neither events nor
 * ECC counts for the device. */
struct kb_gpu_watch *kb_gpu_watch_start(const struct kb_gpu_info *g,
					char *errstr, size_t errstr_size);

/* Ends w and frees it: takes the events that arrived since the start
 * without waiting, re-reads the ECC count. Returns KB_GPU_WATCH_FAULT
 * with why naming the evidence ("Xid 79 (GPU has fallen off the bus)",
 * "uncorrected ECC errors 0 -> 2"), KB_GPU_WATCH_CLEAN (why names Xids
 * seen that are not device faults, or is ""), or KB_GPU_WATCH_UNKNOWN
 * with why saying what failed. w NULL gives KB_GPU_WATCH_UNKNOWN. */
enum kb_gpu_watch_result kb_gpu_watch_end(struct kb_gpu_watch *w, char *why,
					  size_t why_size);

#endif
