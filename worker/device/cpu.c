/* kb_device_cpu: the host's CPU as the device table's family (device.h),
 * for CPU workers (KB_GPU=CPU). There is nothing to probe, no node to
 * bind and no fault watch: every run has the CPU. The Result names the
 * processor's model (/proc/cpuinfo), the kernel release as its "driver"
 * and runtime "cpu"; readings are the clock and the temperature where
 * sysfs offers them (0 where it does not).
 */
#include "device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/utsname.h>

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
	long khz = read_long(
		"/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq");
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

/* Always answers: a reading that sysfs lacks is 0, and there is no power
 * reading. */
static int cpu_sample(const struct kb_device_info *d,
		      struct kb_device_sample *s)
{
	(void)d;
	s->sm_mhz = cpu_mhz();
	s->temp_c = cpu_temp_c();
	s->power_mw = -1;
	return 0;
}

static int cpu_describe(const struct kb_device_info *d, const char *gpu,
			struct kb_device_desc *out)
{
	struct utsname u;

	(void)d;
	(void)gpu;
	if (!cpuinfo("model name", out->name, sizeof(out->name)))
		snprintf(out->name, sizeof(out->name), "CPU");
	out->driver[0] = '\0';
	if (uname(&u) == 0)
		snprintf(out->driver, sizeof(out->driver), "%s", u.release);
	out->runtime = "cpu";
	return out->driver[0] ? 0 : -1;
}

static int cpu_setup(const struct kb_device_cfg *c, struct kb_device *d)
{
	(void)c;
	(void)d;
	return 0;
}

static struct kb_device_watch *cpu_watch_start(const struct kb_device_info *d,
					       char *errstr, size_t errstr_size)
{
	(void)d;
	snprintf(errstr, errstr_size, "a CPU has no device fault watch");
	return NULL;
}

/* Never called: cpu_watch_start starts none. */
static enum kb_device_watch_result cpu_watch_end(struct kb_device_watch *w,
						 char *why, size_t why_size)
{
	(void)w;
	snprintf(why, why_size, "a CPU has no device fault watch");
	return KB_DEVICE_WATCH_UNKNOWN;
}

static int cpu_dev_node(const char *entry, int restrict_, int own, char *path,
			size_t path_size)
{
	(void)entry;
	(void)restrict_;
	(void)own;
	(void)path;
	(void)path_size;
	return 0;
}

static int cpu_claims(const char *gpu)
{
	return gpu && strcasecmp(gpu, "CPU") == 0;
}

const struct kb_device_family kb_device_cpu = {
	.name = "cpu",
	.has_device = 0,
	.toolchain = 0,
	.arch_setting = NULL,
	.run_env = NULL,
	.claims = cpu_claims,
	.setup = cpu_setup,
	.sample = cpu_sample,
	.describe = cpu_describe,
	.watch_start = cpu_watch_start,
	.watch_end = cpu_watch_end,
	.dev_node = cpu_dev_node,
};
