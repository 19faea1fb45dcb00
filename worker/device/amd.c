/* kb_amd: the AMD family of the device table (see amd.h). */
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

#include "device_int.h"
#include "kb_lang.h"
#include "kb_log.h"

static const char *sysfs = "/sys";

void kb_amd_set_sysfs_root(const char *root)
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

int kb_amd_gfx_name(unsigned version, char *out, size_t out_size)
{
	unsigned major = version / 10000, minor = version / 100 % 100,
		 step = version % 100;

	if (major < 7 || minor > 15 || step > 15 || out_size < 8)
		return -EINVAL;
	snprintf(out, out_size, "gfx%u%x%x", major, minor, step);
	return 0;
}

int kb_amd_arch_valid(const char *s)
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

const char *kb_amd_arch_for_name(const char *gpu)
{
	for (size_t i = 0; gpu && i < sizeof(amd_table) / sizeof(amd_table[0]);
	     i++)
		if (strncasecmp(gpu, amd_table[i].name,
				strlen(amd_table[i].name)) == 0)
			return amd_table[i].gfx;
	return NULL;
}

int kb_amd_is_amd_name(const char *gpu)
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

int kb_amd_probe(struct kb_device_info *g, const char *visible)
{
	char props[8192], path[4400], name[128] = "";
	long long ver, loc, dom, render;
	int index = 0;

	memset(g, 0, sizeof(*g));
	g->family = &kb_device_amd;
	g->minor = -1;
	g->render_minor = -1;
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
	    kb_amd_gfx_name((unsigned)ver, g->gfx, sizeof(g->gfx)) < 0) {
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
	g->ok = 1;
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

/* The engine clock (the level of pp_dpm_sclk marked "*"), the junction
 * (else first) temperature and the power from the device's hwmon
 * directory. */
static int amd_sample(const struct kb_device_info *g,
		      struct kb_device_sample *s)
{
	const char *pci = g && g->ok ? g->pci_bus_id : NULL;
	int *sm_mhz = &s->sm_mhz, *temp_c = &s->temp_c,
	    *power_mw = &s->power_mw;
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

/* The amdgpu driver's version (its module's, else the kernel's release)
 * into out; 0, or -1 with out = "". */
static int driver_string(char *out, size_t out_size)
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

/* The driver is named for a device that was read only: a worker that
 * found none cannot say which driver its runs would meet. */
static int amd_describe(const struct kb_device_info *g, const char *gpu,
			struct kb_device_desc *out)
{
	kb__device_name(g, gpu, out->name, sizeof(out->name));
	out->runtime = "";
	if (!g || !g->ok) {
		out->driver[0] = '\0';
		return -1;
	}
	return driver_string(out->driver, sizeof(out->driver));
}

/* ---- the fault watch ---- */

struct amd_watch {
	struct kb_device_watch base;
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

static struct kb_device_watch *amd_watch_start(const struct kb_device_info *g,
					       char *errstr, size_t errstr_size)
{
	const char *pci = g && g->ok ? g->pci_bus_id : NULL;
	struct amd_watch w = {.base.family = &kb_device_amd}, *out;

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
	return &out->base;
}

/* kb_device_watch_end has handled NULL and cleared why. */
static enum kb_device_watch_result amd_watch_end(struct kb_device_watch *base,
						 char *why, size_t why_size)
{
	struct amd_watch *w = (struct amd_watch *)base;
	enum kb_device_watch_result r = KB_DEVICE_WATCH_CLEAN;
	struct stat st;
	long long ue;

	if (stat(w->dev, &st) < 0) {
		snprintf(why, why_size, "the GPU is gone from the PCI bus");
		r = KB_DEVICE_WATCH_FAULT;
	} else if ((ue = ras_ue(w->dev)) < 0) {
		snprintf(why, why_size, "RAS error counters unreadable");
		r = KB_DEVICE_WATCH_UNKNOWN;
	} else if (ue > w->ue) {
		snprintf(why, why_size, "uncorrectable RAS errors %lld -> %lld",
			 w->ue, ue);
		r = KB_DEVICE_WATCH_FAULT;
	}
	free(w);
	return r;
}

/* ---- the table's entry ---- */

/* Reads the device and decides the hipcc target and what runs see:
 * /dev/kfd and the device's own render node. */
static int amd_setup(const struct kb_device_cfg *c, struct kb_device *d)
{
	const char *vis = getenv("ROCR_VISIBLE_DEVICES");
	const char *arch_from;

	if (!vis || !*vis)
		vis = getenv("HIP_VISIBLE_DEVICES");
	if (c->arch[0] && !kb_amd_arch_valid(c->arch)) {
		kb_error("KB_HIP_ARCH must be a gfx target such as gfx942 or "
			 "gfx90a, not \"%s\"",
			 c->arch);
		return -1;
	}
	if (kb_amd_probe(&d->info, vis) == 0)
		kb_info("gpu=%s device \"%s\" %s pci=%s render=%d", c->gpu,
			d->info.name, d->info.gfx, d->info.pci_bus_id,
			d->info.render_minor);
	else if (kb__device_unread(c, &d->info, "AMD") < 0)
		return -1;
	arch_from = kb__device_pick_arch(c, d, d->info.ok ? d->info.gfx : "",
					 kb_amd_arch_for_name(c->gpu));
	if (!arch_from)
		kb_warn("gpu=%s: no gfx target known: hip builds will fail "
			"(set KB_HIP_ARCH)",
			c->gpu);
	d->restrict_ = c->restrict_ && d->info.ok &&
		       d->info.render_minor >= 128;
	d->node = d->restrict_ ? d->info.render_minor : -1;
	kb_info("gpu=%s arch=%s (%s) runs: %s", c->gpu,
		d->arch[0] ? d->arch : "none", arch_from ? arch_from : "-",
		d->restrict_ ? "/dev/kfd and its render node alone"
			     : "every GPU node");
	return 0;
}

/* /dev/kfd, and /dev/dri: with restrict_ and the worker's render node
 * known (own >= 128), that one /dev/dri/renderD<own> alone (what a HIP
 * program needs of its GPU: ROCm skips the GPUs whose render node it
 * cannot open), else the whole of dri/. */
static int amd_dev_node(const char *entry, int restrict_, int own, char *path,
			size_t path_size)
{
	if (strcmp(entry, "kfd") == 0)
		snprintf(path, path_size, "/dev/kfd");
	else if (strcmp(entry, "dri") != 0)
		return 0;
	else if (restrict_ && own >= 128)
		snprintf(path, path_size, "/dev/dri/renderD%d", own);
	else
		snprintf(path, path_size, "/dev/dri");
	return 1;
}

/* Runs are not told their device by a variable: with KB_GPU_RESTRICT they
 * get its render node alone, and ROCm enumerates only the GPUs whose node
 * it can open. */
const struct kb_device_family kb_device_amd = {
	.name = "amd",
	.has_device = 1,
	.toolchain = KB_LANG_AMD,
	.arch_setting = "KB_HIP_ARCH",
	.run_env = NULL,
	.claims = kb_amd_is_amd_name,
	.setup = amd_setup,
	.sample = amd_sample,
	.describe = amd_describe,
	.watch_start = amd_watch_start,
	.watch_end = amd_watch_end,
	.dev_node = amd_dev_node,
};
