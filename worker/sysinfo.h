/* kb_sysinfo: what the Result says about the machine that ran a job.
 *
 * For the CPU device: the processor's model name (/proc/cpuinfo), the
 * kernel release as "driver", runtime "cpu", and "<sysname> <machine>" as
 * platform, plus clock and temperature readings where sysfs offers them.
 * GPU devices will fill the same fields from their management library
 * (NVML, amdsmi); until then they report the device type as the name.
 *
 * Every reading is best effort: a field that cannot be read stays empty
 * or zero. Thread-safe.
 */
#ifndef KB_SYSINFO_H
#define KB_SYSINFO_H

#include "kb.pb-c.h"

/* Fills the static fields and the readings "at start" of si (which must
 * be initialized; strings are replaced, so it may be reused). */
void kb_sysinfo_start(const char *gpu, Kb__SystemInfo *si);

/* Fills the readings "at end". */
void kb_sysinfo_end(const char *gpu, Kb__SystemInfo *si);

#endif
