/* kb_amdgpu: see amdgpu.h. */
#include "amd.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/utsname.h>

static const char *sysfs = "/sys";

void kb_amdgpu_set_sysfs_root(const char *root)
{
	sysfs = root ? root : "/sys";
}

/* Up to size-1 bytes of a file, NUL-terminated. Returns the length, or -1. */
static long slurp(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[n] = '\0';
	return (long)n;
}

/* The value of "key value" in a KFD properties text, or -1. */
static long long prop(const char *text, const char *key)
{
	size_t k = strlen(key);

	for (const char *p = text; p && *p;
	     p = strchr(p, '\n'), p = p ? p + 1 : p)
		if (strncmp(p, key, k) == 0 && p[k] == ' ')
			return strtoll(p + k + 1, NULL, 10);
	return -1;
}

static long long read_num(const char *path)
{
	char buf[64];

	if (slurp(path, buf, sizeof(buf)) <= 0)
		return -1;
	return strtoll(buf, NULL, 10);
}

static int node_cmp(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

int kb_amdgpu_gfx_name(unsigned version, char *out, size_t out_size)
{
	unsigned major = version / 10000, minor = version / 100 % 100,
		 step = version % 100;

	if (major < 7 || minor > 15 || step > 15 || out_size < 8)
		return -EINVAL;
	snprintf(out, out_size, "gfx%u%x%x", major, minor, step);
	return 0;
}

int kb_amdgpu_arch_valid(const char *s)
{
	size_t n = 0;

	if (!s || strncmp(s, "gfx", 3) != 0)
		return 0;
	for (s += 3; isalnum((unsigned char)*s); s++)
		n++;
	if (n < 3 || n > 4)
		return 0;
	/* features: ":name+" or ":name-" */
	while (*s == ':') {
		size_t f = strspn(s + 1, "abcdefghijklmnopqrstuvwxyz");
		if (f == 0 || (s[1 + f] != '+' && s[1 + f] != '-'))
			return 0;
		s += f + 2;
	}
	return *s == '\0';
}

static const struct {
	const char *name, *gfx;
} amd_table[] = {
	{"MI355X", "gfx950"}, {"MI350X", "gfx950"}, {"MI325X", "gfx942"},
	{"MI300X", "gfx942"}, {"MI300A", "gfx942"}, {"MI300", "gfx942"},
	{"MI250X", "gfx90a"}, {"MI250", "gfx90a"},  {"MI210", "gfx90a"},
	{"MI100", "gfx908"},
};

const char *kb_amdgpu_arch_for_name(const char *gpu)
{
	for (size_t i = 0; gpu && i < sizeof(amd_table) / sizeof(amd_table[0]);
	     i++)
		if (strncasecmp(gpu, amd_table[i].name,
				strlen(amd_table[i].name)) == 0)
			return amd_table[i].gfx;
	return NULL;
}

int kb_amdgpu_is_amd_name(const char *gpu)
{
	return gpu && strncasecmp(gpu, "MI", 2) == 0;
}

/* The index-th GPU node's properties text into props. 0 or -1. */
static int gpu_node(int index, char *props, size_t size, char *why,
		    size_t why_size)
{
	char dir[4096], path[4400];
	int nodes[256], n = 0, gpu = 0;
	struct dirent *e;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/class/kfd/kfd/topology/nodes", sysfs);
	if (!(d = opendir(dir))) {
		snprintf(why, why_size,
			 "no KFD topology at %s (amdgpu not "
			 "loaded, or /sys not mounted)",
			 dir);
		return -1;
	}
	while ((e = readdir(d)) && n < 256)
		if (isdigit((unsigned char)e->d_name[0]))
			nodes[n++] = atoi(e->d_name);
	closedir(d);
	qsort(nodes, (size_t)n, sizeof(nodes[0]), node_cmp);
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%d/properties", dir, nodes[i]);
		if (slurp(path, props, size) <= 0 ||
		    prop(props, "simd_count") <= 0)
			continue;
		if (gpu++ == index)
			return 0;
	}
	snprintf(why, why_size, "no AMD GPU %d in the KFD topology (%d GPU%s)",
		 index, gpu, gpu == 1 ? "" : "s");
	return -1;
}

static void device_dir(const char *pci, char *out, size_t size)
{
	snprintf(out, size, "%s/bus/pci/devices/%s", sysfs, pci);
}

int kb_amdgpu_probe(struct kb_amdgpu_dev *g, const char *visible)
{
	char props[8192], path[4400], name[128] = "";
	long long ver, loc, dom, render;
	int index = 0;

	memset(g, 0, sizeof(*g));
	if (visible && *visible) {
		char *end;
		long v = strtol(visible, &end, 10);
		if (end == visible || (*end && *end != ',') || v < 0 ||
		    v > 255) {
			snprintf(
				g->why, sizeof(g->why),
				"cannot read device "
				"index \"%s\" (AMD devices are named by index)",
				visible);
			return -1;
		}
		index = (int)v;
	}
	if (gpu_node(index, props, sizeof(props), g->why, sizeof(g->why)) < 0)
		return -1;
	ver = prop(props, "gfx_target_version");
	loc = prop(props, "location_id");
	dom = prop(props, "domain");
	render = prop(props, "drm_render_minor");
	if (ver <= 0 ||
	    kb_amdgpu_gfx_name((unsigned)ver, g->gfx, sizeof(g->gfx)) < 0) {
		snprintf(g->why, sizeof(g->why),
			 "AMD GPU %d: no usable gfx_target_version", index);
		return -1;
	}
	if (loc >= 0)
		snprintf(g->pci_bus_id, sizeof(g->pci_bus_id),
			 "%04llx:%02llx:%02llx.%llx", dom > 0 ? dom : 0,
			 (loc >> 8) & 0xff, (loc >> 3) & 0x1f, loc & 7);
	g->render_minor = render >= 128 ? (int)render : -1;
	if (g->pci_bus_id[0]) {
		device_dir(g->pci_bus_id, path, sizeof(path));
		strncat(path, "/product_name", sizeof(path) - strlen(path) - 1);
		if (slurp(path, name, sizeof(name)) > 0)
			name[strcspn(name, "\n")] = '\0';
	}
	if (name[0])
		snprintf(g->name, sizeof(g->name), "%s", name);
	else
		snprintf(g->name, sizeof(g->name), "AMD %s", g->gfx);
	return 0;
}

/* The MHz of the level marked "*" in a pp_dpm_* file, or -1. */
static int dpm_now(const char *path)
{
	char text[2048];
	const char *star, *colon;

	if (slurp(path, text, sizeof(text)) <= 0 || !(star = strchr(text, '*')))
		return -1;
	colon = star;
	while (colon > text && colon[-1] != '\n')
		colon--;
	colon = strchr(colon, ':');
	return colon && colon < star ? atoi(colon + 1) : -1;
}

/* The device's hwmon directory into out; 0 or -1. */
static int hwmon_dir(const char *dev, char *out, size_t size)
{
	char dir[4400];
	struct dirent *e;
	DIR *d;
	int rc = -1;

	snprintf(dir, sizeof(dir), "%s/hwmon", dev);
	if (!(d = opendir(dir)))
		return -1;
	while (rc < 0 && (e = readdir(d)))
		if (strncmp(e->d_name, "hwmon", 5) == 0) {
			snprintf(out, size, "%s/%s", dir, e->d_name);
			rc = 0;
		}
	closedir(d);
	return rc;
}

int kb_amdgpu_sample(const char *pci, int *sm_mhz, int *temp_c, int *power_mw)
{
	char dev[4200], hw[4600], path[4800], label[32];
	long long v;

	*sm_mhz = *temp_c = *power_mw = -1;
	if (!pci || !pci[0])
		return -1;
	device_dir(pci, dev, sizeof(dev));
	snprintf(path, sizeof(path), "%s/pp_dpm_sclk", dev);
	*sm_mhz = dpm_now(path);
	if (hwmon_dir(dev, hw, sizeof(hw)) < 0)
		return *sm_mhz >= 0 ? 0 : -1;
	for (int k = 1; k <= 8; k++) {
		snprintf(path, sizeof(path), "%s/temp%d_input", hw, k);
		if ((v = read_num(path)) < 0)
			continue;
		if (*temp_c < 0)
			*temp_c = (int)(v / 1000);
		snprintf(path, sizeof(path), "%s/temp%d_label", hw, k);
		if (slurp(path, label, sizeof(label)) > 0 &&
		    strncmp(label, "junction", 8) == 0) {
			*temp_c = (int)(v / 1000);
			break;
		}
	}
	snprintf(path, sizeof(path), "%s/power1_average", hw);
	if ((v = read_num(path)) < 0) {
		snprintf(path, sizeof(path), "%s/power1_input", hw);
		v = read_num(path);
	}
	if (v >= 0)
		*power_mw = (int)(v / 1000);
	return 0;
}

int kb_amdgpu_driver_string(char *out, size_t out_size)
{
	char path[4200];
	struct utsname u;

	if (!out_size)
		return -1;
	snprintf(path, sizeof(path), "%s/module/amdgpu/version", sysfs);
	if (slurp(path, out, out_size) > 0) {
		out[strcspn(out, "\n")] = '\0';
		return 0;
	}
	if (uname(&u) == 0) {
		snprintf(out, out_size, "amdgpu (kernel %s)", u.release);
		return 0;
	}
	out[0] = '\0';
	return -1;
}

/* ---- the fault watch ---- */

struct kb_amdgpu_watch {
	char dev[4200];
	long long ue;
};

/* Sum of the "ue:" counts of every <dev>/ras/<block>_err_count, or -1 when
 * there is none. */
static long long ras_ue(const char *dev)
{
	char dir[4400], path[4800], text[256];
	long long sum = -1;
	struct dirent *e;
	const char *p;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/ras", dev);
	if (!(d = opendir(dir)))
		return -1;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if (n < 10 || strcmp(e->d_name + n - 10, "_err_count") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (slurp(path, text, sizeof(text)) <= 0 ||
		    !(p = strstr(text, "ue:")))
			continue;
		sum = (sum < 0 ? 0 : sum) + strtoll(p + 3, NULL, 10);
	}
	closedir(d);
	return sum;
}

struct kb_amdgpu_watch *kb_amdgpu_watch_start(const char *pci, char *errstr,
					      size_t errstr_size)
{
	struct kb_amdgpu_watch w, *out;

	if (!pci || !pci[0]) {
		snprintf(errstr, errstr_size,
			 "no AMD device was read at start-up");
		return NULL;
	}
	device_dir(pci, w.dev, sizeof(w.dev));
	if ((w.ue = ras_ue(w.dev)) < 0) {
		snprintf(errstr, errstr_size,
			 "%s has no RAS error counters: device faults "
			 "cannot be told apart",
			 pci);
		return NULL;
	}
	if (!(out = malloc(sizeof(*out)))) {
		snprintf(errstr, errstr_size, "out of memory");
		return NULL;
	}
	*out = w;
	return out;
}

/* Results as gpu.h's enum kb_gpu_watch_result. */
enum { WATCH_UNKNOWN = -1, WATCH_CLEAN = 0, WATCH_FAULT = 1 };

int kb_amdgpu_watch_end(struct kb_amdgpu_watch *w, char *why, size_t why_size)
{
	int r = WATCH_CLEAN;
	struct stat st;
	long long ue;

	if (why_size)
		why[0] = '\0';
	if (!w) {
		snprintf(why, why_size, "no device fault watch");
		return WATCH_UNKNOWN;
	}
	if (stat(w->dev, &st) < 0) {
		snprintf(why, why_size, "the GPU is gone from the PCI bus");
		r = WATCH_FAULT;
	} else if ((ue = ras_ue(w->dev)) < 0) {
		snprintf(why, why_size, "RAS error counters unreadable");
		r = WATCH_UNKNOWN;
	} else if (ue > w->ue) {
		snprintf(why, why_size, "uncorrectable RAS errors %lld -> %lld",
			 w->ue, ue);
		r = WATCH_FAULT;
	}
	free(w);
	return r;
}
