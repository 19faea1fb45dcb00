#include "sysinfo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/utsname.h>

#include "pbutil.h"

void kb_sysinfo_start(const char *gpu, const struct kb_device_info *dev,
		      Kb__SystemInfo *si)
{
	const struct kb_device_family *f = kb_device_family_for(gpu);
	struct kb_device_desc desc;
	struct kb_device_sample smp;
	struct utsname u;

	if (uname(&u) == 0)
		kb__pb_take_str(&si->platform,
				kb__xasprintf("%s %s", u.sysname, u.machine));
	f->describe(dev, gpu, &desc);
	kb__pb_set_str(&si->device_name, desc.name);
	kb__pb_set_str(&si->driver, desc.driver);
	kb__pb_set_str(&si->runtime, desc.runtime);
	if (f->sample(dev, &smp) == 0) {
		si->sm_clock_start_mhz = smp.sm_mhz > 0 ? smp.sm_mhz : 0;
		si->temp_start_c = smp.temp_c > 0 ? smp.temp_c : 0;
		si->power_start_mw = smp.power_mw > 0 ? smp.power_mw : 0;
	}
}

void kb_sysinfo_end(const char *gpu, const struct kb_device_info *dev,
		    Kb__SystemInfo *si)
{
	struct kb_device_sample smp;

	if (kb_device_family_for(gpu)->sample(dev, &smp) == 0) {
		si->sm_clock_end_mhz = smp.sm_mhz > 0 ? smp.sm_mhz : 0;
		si->temp_end_c = smp.temp_c > 0 ? smp.temp_c : 0;
		si->power_end_mw = smp.power_mw > 0 ? smp.power_mw : 0;
	}
}

/* The value of key in rr, or NULL. */
static const char *report_value(const Kb__RunResult *rr, const char *key)
{
	for (size_t k = 0; k < rr->n_result; k++)
		if (strcmp(rr->result[k]->key, key) == 0)
			return rr->result[k]->value;
	return NULL;
}

/* The value of key in the first (last: from the end) run reporting it. */
static const char *find(Kb__RunResult *const *runs, size_t n, const char *key,
			int last)
{
	for (size_t i = 0; i < n; i++) {
		const Kb__RunResult *rr = runs[last ? n - 1 - i : i];
		const char *v = rr ? report_value(rr, key) : NULL;

		if (v && v[0])
			return v;
	}
	return NULL;
}

/* A reading as a non-negative integer scaled by scale; -1 if it is not a
 * plain number. */
static long reading(const char *v, double scale)
{
	char *end;
	double d;

	if (!v)
		return -1;
	d = strtod(v, &end);
	if (end == v || *end || !(d >= 0) || d * scale > 2e9)
		return -1;
	return (long)(d * scale + 0.5);
}

static void set_reading(int32_t *field, Kb__RunResult *const *runs, size_t n,
			const char *key, int last, double scale)
{
	long v = reading(find(runs, n, key, last), scale);

	if (v >= 0)
		*field = (int32_t)v;
}

void kb_sysinfo_apply_report(Kb__SystemInfo *si, Kb__RunResult *const *runs,
			     size_t n)
{
	static const char *const strs[] = {"system.device", "system.driver",
					   "system.runtime"};
	char **fields[] = {&si->device_name, &si->driver, &si->runtime};

	for (size_t i = 0; i < 3; i++) {
		const char *v = find(runs, n, strs[i], 0);

		if (v)
			kb__pb_set_str(fields[i], v);
	}
	set_reading(&si->sm_clock_start_mhz, runs, n, "system.sm_clock_start",
		    0, 1);
	set_reading(&si->sm_clock_end_mhz, runs, n, "system.sm_clock_end", 1,
		    1);
	set_reading(&si->temp_start_c, runs, n, "system.temp_start", 0, 1);
	set_reading(&si->temp_end_c, runs, n, "system.temp_end", 1, 1);
	set_reading(&si->power_start_mw, runs, n, "system.power_start", 0,
		    1000);
	set_reading(&si->power_end_mw, runs, n, "system.power_end", 1, 1000);
}
