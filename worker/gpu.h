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
 * itself uses) by PCI bus id; every reading is best effort.
 *
 * Thread-safety: kb_gpu_probe() forks: call it before starting threads.
 * kb_gpu_sample() and kb_gpu_driver_string() are thread-safe (NVML is
 * opened once, under pthread_once). The arch helpers are pure.
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
};

/* Reads the first CUDA device visible to this process into *g (zeroed
 * first; g->minor = -1 unless found). Runs the driver calls in a child
 * process killed after timeout_s. Returns 0 with g->ok = 1, or -1 with
 * g->why set (no libcuda, no device, driver error, timeout). Not
 * thread-safe (forks). */
int kb_gpu_probe(struct kb_gpu_info *g, double timeout_s);

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

#endif
