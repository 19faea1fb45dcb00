/* kbg_sys_amd.c: kbg_sys.h for AMD GPUs, from the amdgpu driver's sysfs
 * files (what rocm-smi itself reads), so eval.out needs no ROCm SMI
 * library:
 *
 *   <root>/bus/pci/devices/<pci>/pp_dpm_sclk, pp_dpm_mclk   the clock
 *       levels, the current one marked "*" ("1: 2100Mhz *");
 *   <root>/bus/pci/devices/<pci>/hwmon/hwmon<N>/temp<K>_input
 *       millidegrees: the "junction" (hotspot) sensor where labelled,
 *       else the first ("edge"; MI300 has no edge sensor);
 *   .../hwmon<N>/power1_average or power1_input   microwatts;
 *   <root>/module/amdgpu/version   the DKMS driver's version, else the
 *       kernel's release (the in-tree driver).
 *
 * Throttle reasons are not in sysfs (gpu_metrics is a versioned binary
 * table): throttle stays -1. Every file is optional: what is missing is
 * reported as unknown.
 *
 * Thread-safety: one kbg_sys per process, used from one thread.
 */
#include "kbg_sys.h"
#include "kbg_sys_amd.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

struct kbg_sys {
	int ok;
	char dev[512];   /* <root>/bus/pci/devices/<pci> */
	char hwmon[600]; /* its hwmon directory, or "" */
	int temp_k;      /* the temp<K>_input to read; 0 = none */
	char driver[128];
};

/* First line of a file, newline stripped. 0 or -1. */
static int read_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	int ok;

	if (!f)
		return -1;
	ok = fgets(buf, (int)size, f) != NULL;
	fclose(f);
	if (!ok)
		return -1;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static long long read_ll(const char *path)
{
	char buf[64], *end;
	long long v;

	if (read_line(path, buf, sizeof buf) < 0)
		return -1;
	v = strtoll(buf, &end, 10);
	return end == buf || v < 0 ? -1 : v;
}

int kbg__amd_dpm_current(const char *text)
{
	const char *line = text;

	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		const char *colon = memchr(line, ':', len);

		if (colon && memchr(line, '*', len)) {
			long mhz = strtol(colon + 1, NULL, 10);
			return mhz > 0 && mhz < 100000 ? (int)mhz : -1;
		}
		line = nl ? nl + 1 : NULL;
	}
	return -1;
}

static int dpm_mhz(const struct kbg_sys *s, const char *file)
{
	char path[640], text[1024];
	size_t n;
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", s->dev, file);
	if (!(f = fopen(path, "re")))
		return -1;
	n = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[n] = '\0';
	return kbg__amd_dpm_current(text);
}

/* The hwmon directory and the temperature sensor to read. */
static void find_hwmon(struct kbg_sys *s)
{
	char dir[560], path[700], label[64];
	struct dirent *e;
	DIR *d;

	snprintf(dir, sizeof dir, "%s/hwmon", s->dev);
	if (!(d = opendir(dir)))
		return;
	while ((e = readdir(d)))
		if (strncmp(e->d_name, "hwmon", 5) == 0) {
			snprintf(s->hwmon, sizeof s->hwmon, "%s/%s", dir,
				 e->d_name);
			break;
		}
	closedir(d);
	if (!s->hwmon[0])
		return;
	for (int k = 1; k <= 8; k++) {
		snprintf(path, sizeof path, "%s/temp%d_input", s->hwmon, k);
		if (read_ll(path) < 0)
			continue;
		if (!s->temp_k)
			s->temp_k = k;
		snprintf(path, sizeof path, "%s/temp%d_label", s->hwmon, k);
		if (read_line(path, label, sizeof label) == 0 &&
		    strcmp(label, "junction") == 0) {
			s->temp_k = k;
			break;
		}
	}
}

struct kbg_sys *kbg_sys_amd_open_at(const char *root, const char *pci)
{
	struct kbg_sys *s = calloc(1, sizeof *s);
	char id[32], path[640];
	struct utsname u;
	size_t i;

	if (!s)
		return NULL;
	snprintf(path, sizeof path, "%s/module/amdgpu/version", root);
	if (read_line(path, s->driver, sizeof s->driver) < 0 || !s->driver[0]) {
		if (uname(&u) == 0)
			snprintf(s->driver, sizeof s->driver,
				 "amdgpu (kernel %s)", u.release);
		else
			s->driver[0] = '\0';
	}
	if (!pci || !pci[0])
		return s;
	/* hipDeviceGetPCIBusId may print hex digits in upper case; sysfs
	 * names are lower case. */
	for (i = 0; pci[i] && i + 1 < sizeof id; i++)
		id[i] = (char)tolower((unsigned char)pci[i]);
	id[i] = '\0';
	snprintf(s->dev, sizeof s->dev, "%s/bus/pci/devices/%s", root, id);
	find_hwmon(s);
	s->ok = s->hwmon[0] != '\0' || dpm_mhz(s, "pp_dpm_sclk") >= 0;
	return s;
}

struct kbg_sys *kbg_sys_open(const char *pci_bus_id)
{
	return kbg_sys_amd_open_at("/sys", pci_bus_id);
}

void kbg_sys_close(struct kbg_sys *s)
{
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
	char path[700];
	long long v;

	out->sm_mhz = out->mem_mhz = out->temp_c = -1;
	out->power_w = -1;
	out->throttle = -1;
	if (!s || !s->ok)
		return;
	out->sm_mhz = dpm_mhz(s, "pp_dpm_sclk");
	out->mem_mhz = dpm_mhz(s, "pp_dpm_mclk");
	if (!s->hwmon[0])
		return;
	if (s->temp_k) {
		snprintf(path, sizeof path, "%s/temp%d_input", s->hwmon,
			 s->temp_k);
		if ((v = read_ll(path)) >= 0)
			out->temp_c = (int)(v / 1000);
	}
	snprintf(path, sizeof path, "%s/power1_average", s->hwmon);
	if ((v = read_ll(path)) < 0) {
		snprintf(path, sizeof path, "%s/power1_input", s->hwmon);
		v = read_ll(path);
	}
	if (v >= 0)
		out->power_w = (double)v / 1e6;
}

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
