/* kb_sysinfo: what the Result says about the machine that ran a job.
 *
 * Two sources, the better one last:
 *  1. the worker's own readings (kb_sysinfo_start/_end), through the
 *     device table (device.h) of the device type's family: the device's
 *     name (the probed device's, else the device type; the processor's
 *     model for the CPU), its driver (NVML's version string and the CUDA
 *     driver version; amdgpu's version; the kernel release for the CPU),
 *     the runtime ("cpu" for the CPU), and the clock, temperature and
 *     power at the job's start and end; "<sysname> <machine>" as
 *     platform;
 *  2. the harness's system.* report keys (kb_sysinfo_apply_report), taken
 *     inside the run, next to the measurement: system.device,
 *     system.driver, system.runtime, system.sm_clock_start/_end (MHz),
 *     system.temp_start/_end (°C), system.power_start/_end (W). Start
 *     values come from the first run that reports them, end values from
 *     the last.
 *
 * Every reading is best effort: a field that cannot be read stays empty
 * or zero. Thread-safe.
 */
#ifndef KB_SYSINFO_H
#define KB_SYSINFO_H

#include <stddef.h>

#include "device.h"
#include "kb.pb-c.h"

/* Fills the static fields and the readings "at start" of si (which must
 * be initialized; strings are replaced, so it may be reused). gpu: the
 * device type; dev: the probed device of a GPU worker, or NULL. */
void kb_sysinfo_start(const char *gpu, const struct kb_device_info *dev,
		      Kb__SystemInfo *si);

/* Fills the readings "at end". */
void kb_sysinfo_end(const char *gpu, const struct kb_device_info *dev,
		    Kb__SystemInfo *si);

/* Replaces fields of si with what the harness reported in runs[0..n).
 * Values that do not parse are ignored. Pure. */
void kb_sysinfo_apply_report(Kb__SystemInfo *si, Kb__RunResult *const *runs,
			     size_t n);

#endif
