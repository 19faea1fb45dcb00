/* kbg_sys_amd.h: what kbg_sys_amd.c (kbg_sys.h from amdgpu's sysfs
 * files) offers its unit test besides kbg_sys.h.
 *
 * Thread-safety: as kbg_sys.h.
 */
#ifndef KBG_SYS_AMD_H
#define KBG_SYS_AMD_H

#include "kbg_sys.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

/* kbg_sys_open() with sysfs mounted at root ("/sys" in kbg_sys_open). */
struct kbg_sys *kbg_sys_amd_open_at(const char *root, const char *pci);

/* The current level's MHz in a pp_dpm_* file's text ("0: 500Mhz\n1:
 * 2100Mhz *\n" -> 2100), or -1. Pure. */
int kbg__amd_dpm_current(const char *text);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif
