#include "sysinfo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <stdint.h>
#include <sys/utsname.h>

#include "pbutil.h"

static int is_cpu(const char *gpu)
{
	return gpu && strcasecmp(gpu, "CPU") == 0;
}

/* The value of the first "key<ws>: value" line of /proc/cpuinfo. */
static int cpuinfo(const char *key, char *out, size_t size)
{
	FILE *f = fopen("/proc/cpuinfo", "re");
	char line[512];
	size_t klen = strlen(key);
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		char *v;

		if (strncmp(line, key, klen) != 0 ||
		    !strchr(" \t:", line[klen]) || !(v = strchr(line, ':')))
			continue;
		v += 1 + strspn(v + 1, " \t");
		v[strcspn(v, "\n")] = '\0';
		snprintf(out, size, "%s", v);
		found = 1;
	}
	fclose(f);
	return found;
}

static long read_long(const char *path)
{
	FILE *f = fopen(path, "re");
	long v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static int cpu_mhz(void)
{
	long khz =
		read_long("/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq");
	char buf[64];

	if (khz > 0)
		return (int)(khz / 1000);
	if (cpuinfo("cpu MHz", buf, sizeof(buf)))
		return atoi(buf);
	return 0;
}

static int cpu_temp_c(void)
{
	long milli = read_long("/sys/class/thermal/thermal_zone0/temp");

	return milli > 0 ? (int)(milli / 1000) : 0;
}

/* The GPU's static fields and one NVML reading, start or end. */
static void gpu_start(const char *gpu, const struct kb_gpu_info *dev,
		      Kb__SystemInfo *si)
{
	char drv[96] = "";
	struct kb_gpu_sample smp;

	kb__pb_set_str(&si->device_name,
		       dev && dev->ok ? dev->name : gpu ? gpu : "");
	kb_gpu_device_driver(dev, drv, sizeof(drv));
	if (dev && dev->ok && dev->cuda_driver > 0)
		kb__pb_take_str(&si->driver,
				kb__xasprintf("%s%sCUDA %d.%d%s", drv,
					      drv[0] ? " (" : "",
					      dev->cuda_driver / 1000,
					      dev->cuda_driver % 1000 / 10,
					      drv[0] ? ")" : ""));
	else
		kb__pb_set_str(&si->driver, drv);
	/* The runtime is the toolkit a job is built with: eval.c or the
	 * harness fills it in. */
	kb__pb_set_str(&si->runtime, "");
	if (kb_gpu_sample(dev, &smp) == 0) {
		si->sm_clock_start_mhz = smp.sm_mhz > 0 ? smp.sm_mhz : 0;
		si->temp_start_c = smp.temp_c > 0 ? smp.temp_c : 0;
		si->power_start_mw = smp.power_mw > 0 ? smp.power_mw : 0;
	}
}

void kb_sysinfo_start(const char *gpu, const struct kb_gpu_info *dev,
		      Kb__SystemInfo *si)
{
	struct utsname u;
	char model[256] = "";

	if (uname(&u) == 0) {
		kb__pb_set_str(&si->driver, u.release);
		kb__pb_take_str(&si->platform,
				kb__xasprintf("%s %s", u.sysname, u.machine));
	}
	if (!is_cpu(gpu)) {
		gpu_start(gpu, dev, si);
		return;
	}
	if (!cpuinfo("model name", model, sizeof(model)))
		snprintf(model, sizeof(model), "CPU");
	kb__pb_set_str(&si->device_name, model);
	kb__pb_set_str(&si->runtime, "cpu");
	si->sm_clock_start_mhz = cpu_mhz();
	si->temp_start_c = cpu_temp_c();
}

void kb_sysinfo_end(const char *gpu, const struct kb_gpu_info *dev,
		    Kb__SystemInfo *si)
{
	struct kb_gpu_sample smp;

	if (!is_cpu(gpu)) {
		if (kb_gpu_sample(dev, &smp) == 0) {
			si->sm_clock_end_mhz = smp.sm_mhz > 0 ? smp.sm_mhz : 0;
			si->temp_end_c = smp.temp_c > 0 ? smp.temp_c : 0;
			si->power_end_mw = smp.power_mw > 0 ? smp.power_mw : 0;
		}
		return;
	}
	si->sm_clock_end_mhz = cpu_mhz();
	si->temp_end_c = cpu_temp_c();
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
