/* kb_sysinfo: what the Result says about the machine that ran a job.
 *
 * For the CPU device: the processor's model name (/proc/cpuinfo), the
 * kernel release as "driver", runtime "cpu", and "<sysname> <machine>" as
 * platform, plus clock and temperature readings where sysfs offers them.
 *
 * For a GPU device, two sources, the better one last:
 *  1. the worker's own readings (kb_sysinfo_start/_end): the probed
 *     device's name (else the device type), the driver (NVML's version
 *     string and the CUDA driver version), and the SM clock, temperature
 *     and power through NVML at the job's start and end;
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

#include "nvidia.h"
#include "kb.pb-c.h"

/* Fills the static fields and the readings "at start" of si (which must
 * be initialized; strings are replaced, so it may be reused). dev: the
 * probed device of a GPU worker, or NULL. */
void kb_sysinfo_start(const char *gpu, const struct kb_gpu_info *dev,
		      Kb__SystemInfo *si);

/* Fills the readings "at end". */
void kb_sysinfo_end(const char *gpu, const struct kb_gpu_info *dev,
		    Kb__SystemInfo *si);

/* Replaces fields of si with what the harness reported in runs[0..n).
 * Values that do not parse are ignored. Pure. */
void kb_sysinfo_apply_report(Kb__SystemInfo *si, Kb__RunResult *const *runs,
			     size_t n);

#endif
