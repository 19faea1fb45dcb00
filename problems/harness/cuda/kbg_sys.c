/* kbg_sys.c: see kbg_sys.h.
 *
 * The prototypes below restate the handful of NVML entry points we use
 * (stable C ABI since NVML's v2 names; all return nvmlReturn_t, 0 =
 * success), so the build needs no nvml.h and no libnvidia-ml at link time.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include "kbg_sys.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

typedef void *kbg__nvml_dev;
typedef int (*kbg__init_fn)(void);
typedef int (*kbg__shutdown_fn)(void);
typedef int (*kbg__by_pci_fn)(const char *, kbg__nvml_dev *);
typedef int (*kbg__driver_fn)(char *, unsigned);
typedef int (*kbg__clock_fn)(kbg__nvml_dev, int, unsigned *);
typedef int (*kbg__temp_fn)(kbg__nvml_dev, int, unsigned *);
typedef int (*kbg__power_fn)(kbg__nvml_dev, unsigned *);
typedef int (*kbg__reasons_fn)(kbg__nvml_dev, unsigned long long *);

enum { KBG__CLOCK_SM = 1, KBG__CLOCK_MEM = 2, KBG__TEMP_GPU = 0 };

struct kbg_sys {
	void *lib;
	int ok;
	kbg__nvml_dev dev;
	kbg__shutdown_fn shutdown;
	kbg__clock_fn clock;
	kbg__temp_fn temp;
	kbg__power_fn power;
	kbg__reasons_fn reasons;
	char driver[96];
};

static void *kbg__sym(void *lib, const char *a, const char *b)
{
	void *p = dlsym(lib, a);
	if (!p && b)
		p = dlsym(lib, b);
	return p;
}

struct kbg_sys *kbg_sys_open(const char *pci_bus_id)
{
	struct kbg_sys *s = calloc(1, sizeof *s);
	kbg__init_fn init;
	kbg__by_pci_fn by_pci;
	kbg__driver_fn driver;

	if (!s)
		return NULL;
	s->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!s->lib)
		return s;
	init = (kbg__init_fn)kbg__sym(s->lib, "nvmlInit_v2", "nvmlInit");
	s->shutdown = (kbg__shutdown_fn)kbg__sym(s->lib, "nvmlShutdown", NULL);
	by_pci = (kbg__by_pci_fn)kbg__sym(s->lib,
					  "nvmlDeviceGetHandleByPciBusId_v2",
					  "nvmlDeviceGetHandleByPciBusId");
	driver = (kbg__driver_fn)kbg__sym(s->lib, "nvmlSystemGetDriverVersion",
					  NULL);
	s->clock =
		(kbg__clock_fn)kbg__sym(s->lib, "nvmlDeviceGetClockInfo", NULL);
	s->temp = (kbg__temp_fn)kbg__sym(s->lib, "nvmlDeviceGetTemperature",
					 NULL);
	s->power = (kbg__power_fn)kbg__sym(s->lib, "nvmlDeviceGetPowerUsage",
					   NULL);
	s->reasons = (kbg__reasons_fn)kbg__sym(
		s->lib, "nvmlDeviceGetCurrentClocksEventReasons",
		"nvmlDeviceGetCurrentClocksThrottleReasons");
	if (!init || init() != 0) {
		s->shutdown = NULL;
		return s;
	}
	if (driver && driver(s->driver, sizeof s->driver) != 0)
		s->driver[0] = '\0';
	if (by_pci && pci_bus_id && by_pci(pci_bus_id, &s->dev) == 0)
		s->ok = 1;
	return s;
}

void kbg_sys_close(struct kbg_sys *s)
{
	if (!s)
		return;
	if (s->shutdown)
		s->shutdown();
	if (s->lib)
		dlclose(s->lib);
	free(s);
}

int kbg_sys_ok(const struct kbg_sys *s)
{
	return s && s->ok;
}

const char *kbg_sys_driver(const struct kbg_sys *s)
{
	return s ? s->driver : "";
}

void kbg_sys_sample(struct kbg_sys *s, struct kbg_sys_sample *out)
{
	unsigned u;
	unsigned long long r;

	out->sm_mhz = out->mem_mhz = out->temp_c = -1;
	out->power_w = -1;
	out->throttle = -1;
	if (!kbg_sys_ok(s))
		return;
	if (s->clock && s->clock(s->dev, KBG__CLOCK_SM, &u) == 0)
		out->sm_mhz = (int)u;
	if (s->clock && s->clock(s->dev, KBG__CLOCK_MEM, &u) == 0)
		out->mem_mhz = (int)u;
	if (s->temp && s->temp(s->dev, KBG__TEMP_GPU, &u) == 0)
		out->temp_c = (int)u;
	if (s->power && s->power(s->dev, &u) == 0)
		out->power_w = u / 1000.0;
	if (s->reasons && s->reasons(s->dev, &r) == 0)
		out->throttle = (long long)r;
}

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
