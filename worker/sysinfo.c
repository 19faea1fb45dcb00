#include "sysinfo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
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

void kb_sysinfo_start(const char *gpu, Kb__SystemInfo *si)
{
	struct utsname u;
	char model[256] = "";

	if (uname(&u) == 0) {
		kb__pb_set_str(&si->driver, u.release);
		kb__pb_take_str(&si->platform,
				kb__xasprintf("%s %s", u.sysname, u.machine));
	}
	if (!is_cpu(gpu)) {
		/* Hook for GPU workers: NVML / amdsmi readings go here. */
		kb__pb_set_str(&si->device_name, gpu ? gpu : "");
		kb__pb_set_str(&si->runtime, "unknown");
		return;
	}
	if (!cpuinfo("model name", model, sizeof(model)))
		snprintf(model, sizeof(model), "CPU");
	kb__pb_set_str(&si->device_name, model);
	kb__pb_set_str(&si->runtime, "cpu");
	si->sm_clock_start_mhz = cpu_mhz();
	si->temp_start_c = cpu_temp_c();
}

void kb_sysinfo_end(const char *gpu, Kb__SystemInfo *si)
{
	if (!is_cpu(gpu))
		return;
	si->sm_clock_end_mhz = cpu_mhz();
	si->temp_end_c = cpu_temp_c();
}
