/* What the device families' files (nvidia.c, amd.c, cpu.c) share beside
 * device.h's table: the steps every family's setup takes alike. Not for
 * callers outside worker/device/. Thread-safe but for logging order. */
#ifndef KB_DEVICE_INT_H
#define KB_DEVICE_INT_H

#include <stddef.h>

#include "device.h"

/* After a probe that failed (info->why says why): with c->required, logs
 * an error and returns -1 (the worker does not start); else logs a
 * warning and returns 0. what names the device for people ("CUDA",
 * "AMD"). */
int kb__device_unread(const struct kb_device_cfg *c,
		      const struct kb_device_info *info, const char *what);

/* Chooses d->arch: c->arch (the family's arch_setting) when set, else
 * own (the device's own target; "" when not read), else named (the
 * KB_GPU name's; NULL when the name is not known). Returns where it came
 * from for the log (the setting's name, "the device's", "from the KB_GPU
 * name"), or NULL when no target is known (d->arch stays ""). */
const char *kb__device_pick_arch(const struct kb_device_cfg *c,
				 struct kb_device *d, const char *own,
				 const char *named);

/* The device's name for the Result: the probed name, else the KB_GPU
 * name, else "". */
void kb__device_name(const struct kb_device_info *d, const char *gpu, char *out,
		     size_t size);

#endif
