/* kb_nvidia: the NVIDIA family's device (see nvidia.h): the probe through
 * libcuda, the nvcc target, what runs get, and the family's table entry;
 * its NVML readings and fault watch are nvidia_nvml.c.
 *
 * The few driver entry points used are restated below as function-pointer
 * types (stable C ABI; all return 0 on success), so the worker builds
 * without cuda.h and links no CUDA library.
 */
#include "nvidia.h"

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "device_int.h"
#include "kb_lang.h"
#include "kb_log.h"
#include "kb_util.h"

/* ---- the driver API, in the probe child ---- */

typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_count_fn)(int *);
typedef int (*cu_get_fn)(int *, int);
typedef int (*cu_attr_fn)(int *, int, int);
typedef int (*cu_name_fn)(char *, int, int);
typedef int (*cu_version_fn)(int *);
typedef int (*cu_uuid_fn)(unsigned char *, int);
typedef int (*cu_errname_fn)(int, const char **);

enum { CU_ATTR_CC_MAJOR = 75, CU_ATTR_CC_MINOR = 76 };

/* What the child sends back: plain bytes, fixed size. */
struct probe_msg {
	int ok;
	char why[200];
	char name[128];
	int cc_major, cc_minor, driver;
	char pci[32];
	unsigned char uuid[16];
	int has_uuid;
};

static void cu_fail(struct probe_msg *m, void *lib, const char *call, int rc)
{
	cu_errname_fn errname = (cu_errname_fn)dlsym(lib, "cuGetErrorName");
	const char *name = NULL;

	if (!errname || errname(rc, &name) != 0 || !name)
		name = "unknown error";
	snprintf(m->why, sizeof(m->why), "%s failed: %s (%d)", call, name, rc);
}

/* The child's whole life: never returns. */
static void probe_child(int fd)
{
	struct probe_msg m;
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	int rc, n = 0, dev = 0;

	memset(&m, 0, sizeof(m));
	if (!lib) {
		const char *e = dlerror();

		snprintf(m.why, sizeof(m.why), "cannot load libcuda.so.1: %s",
			 e ? e : "?");
		goto out;
	}
	cu_init_fn init = (cu_init_fn)dlsym(lib, "cuInit");
	cu_count_fn count = (cu_count_fn)dlsym(lib, "cuDeviceGetCount");
	cu_get_fn get = (cu_get_fn)dlsym(lib, "cuDeviceGet");
	cu_attr_fn attr = (cu_attr_fn)dlsym(lib, "cuDeviceGetAttribute");
	cu_name_fn name = (cu_name_fn)dlsym(lib, "cuDeviceGetName");
	cu_name_fn pci = (cu_name_fn)dlsym(lib, "cuDeviceGetPCIBusId");
	cu_version_fn version = (cu_version_fn)dlsym(lib, "cuDriverGetVersion");
	cu_uuid_fn uuid = (cu_uuid_fn)dlsym(lib, "cuDeviceGetUuid_v2");

	if (!uuid)
		uuid = (cu_uuid_fn)dlsym(lib, "cuDeviceGetUuid");
	if (!init || !count || !get || !attr || !name || !pci || !version) {
		snprintf(m.why, sizeof(m.why),
			 "libcuda.so.1 lacks a driver API entry point");
		goto out;
	}
	if ((rc = init(0)) != 0) {
		cu_fail(&m, lib, "cuInit", rc);
		goto out;
	}
	if ((rc = count(&n)) != 0) {
		cu_fail(&m, lib, "cuDeviceGetCount", rc);
		goto out;
	}
	if (n < 1) {
		snprintf(m.why, sizeof(m.why), "no CUDA device is visible");
		goto out;
	}
	if ((rc = get(&dev, 0)) != 0 ||
	    (rc = attr(&m.cc_major, CU_ATTR_CC_MAJOR, dev)) != 0 ||
	    (rc = attr(&m.cc_minor, CU_ATTR_CC_MINOR, dev)) != 0 ||
	    (rc = name(m.name, (int)sizeof(m.name), dev)) != 0) {
		cu_fail(&m, lib, "reading device 0", rc);
		goto out;
	}
	if (pci(m.pci, (int)sizeof(m.pci), dev) != 0)
		m.pci[0] = '\0';
	if (version(&m.driver) != 0)
		m.driver = 0;
	m.has_uuid = uuid && uuid(m.uuid, dev) == 0;
	m.ok = 1;
out:
	m.name[sizeof(m.name) - 1] = '\0';
	m.pci[sizeof(m.pci) - 1] = '\0';
	if (write(fd, &m, sizeof(m)) != (ssize_t)sizeof(m))
		_exit(1);
	_exit(0);
}

/* Reads exactly one probe_msg from fd within timeout_s. */
static int read_msg(int fd, struct probe_msg *m, double timeout_s)
{
	const double end = kb_mono_s() + timeout_s;
	size_t got = 0;

	while (got < sizeof(*m)) {
		struct pollfd p = {fd, POLLIN, 0};
		const double left = end - kb_mono_s();
		ssize_t n;

		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&p, 1, (int)(left * 1000) + 1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!p.revents)
			continue;
		n = read(fd, (char *)m + got, sizeof(*m) - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EPIPE;
		got += (size_t)n;
	}
	return 0;
}

/* The "Device Minor" of /proc/driver/nvidia/gpus/<bus id>/information
 * (the directory is named in lowercase), or -1. */
static int proc_minor(const char *pci)
{
	char dir[64], path[160], *text = NULL, *p;
	size_t len, i;
	int minor = -1;

	for (i = 0; pci[i] && i < sizeof(dir) - 1; i++)
		dir[i] = (char)tolower((unsigned char)pci[i]);
	dir[i] = '\0';
	snprintf(path, sizeof(path), "/proc/driver/nvidia/gpus/%s/information",
		 dir);
	if (kb_read_file(path, 1 << 16, &text, &len) < 0)
		return -1;
	p = strstr(text, "Device Minor:");
	if (p)
		minor = atoi(p + strlen("Device Minor:"));
	free(text);
	return p && minor >= 0 ? minor : -1;
}

static void format_uuid(const unsigned char u[16], char *out, size_t size)
{
	snprintf(out, size,
		 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
		 u[10], u[11], u[12], u[13], u[14], u[15]);
}

int kb_nvidia_probe(struct kb_device_info *g, double timeout_s)
{
	struct probe_msg m;
	int fds[2], rc, status;
	pid_t pid;

	memset(g, 0, sizeof(*g));
	g->family = &kb_device_nvidia;
	g->minor = -1;
	if (pipe2(fds, O_CLOEXEC) < 0) {
		snprintf(g->why, sizeof(g->why), "pipe: %s", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(g->why, sizeof(g->why), "fork: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0) {
		close(fds[0]);
		probe_child(fds[1]);
	}
	close(fds[1]);
	memset(&m, 0, sizeof(m));
	rc = read_msg(fds[0], &m, timeout_s);
	close(fds[0]);
	if (rc == -ETIMEDOUT)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (rc < 0) {
		snprintf(g->why, sizeof(g->why), "%s",
			 rc == -ETIMEDOUT
				 ? "the CUDA driver did not answer in time"
				 : "the device probe died");
		return -1;
	}
	if (!m.ok) {
		snprintf(g->why, sizeof(g->why), "%s", m.why);
		return -1;
	}
	g->ok = 1;
	snprintf(g->name, sizeof(g->name), "%s", m.name);
	g->cc_major = m.cc_major;
	g->cc_minor = m.cc_minor;
	g->cuda_driver = m.driver;
	snprintf(g->pci_bus_id, sizeof(g->pci_bus_id), "%s", m.pci);
	if (m.has_uuid)
		format_uuid(m.uuid, g->uuid, sizeof(g->uuid));
	if (g->pci_bus_id[0]) {
		g->minor = proc_minor(g->pci_bus_id);
		if (g->minor < 0)
			g->minor = kb__nvidia_nvml_minor(g->pci_bus_id);
	}
	return 0;
}

/* ---- arch ---- */

int kb_nvidia_arch_for_cc(int major, int minor, char *out, size_t out_size)
{
	int n;

	if (major < 5 || major > 99 || minor < 0 || minor > 9)
		return -EINVAL;
	n = snprintf(out, out_size, "%d%d%s", major, minor,
		     major >= 9 ? "a" : "");
	return n > 0 && (size_t)n < out_size ? 0 : -EINVAL;
}

const char *kb_nvidia_arch_for_name(const char *gpu)
{
	static const char *const table[][2] = {
		{"H100", "90a"},   {"H200", "90a"},  {"GH200", "90a"},
		{"H800", "90a"},   {"H20", "90a"},   {"A100", "80"},
		{"A800", "80"},    {"A10G", "86"},   {"A10", "86"},
		{"A40", "86"},     {"L4", "89"},     {"L40", "89"},
		{"L40S", "89"},    {"T4", "75"},     {"B200", "100a"},
		{"GB200", "100a"}, {"B300", "103a"}, {"GB300", "103a"},
	};

	for (size_t i = 0; gpu && i < sizeof(table) / sizeof(table[0]); i++)
		if (strcasecmp(table[i][0], gpu) == 0)
			return table[i][1];
	return NULL;
}

int kb_nvidia_arch_valid(const char *s)
{
	size_t digits = 0;

	while (s && isdigit((unsigned char)s[digits]))
		digits++;
	if (digits < 2 || digits > 3)
		return 0;
	s += digits;
	return *s == '\0' || ((*s == 'a' || *s == 'f') && s[1] == '\0');
}

/* ---- the table's entry ---- */

/* Reads the device and decides the nvcc target and what runs see. */
static int nvidia_setup(const struct kb_device_cfg *c, struct kb_device *d)
{
	const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
	const char *arch_from;
	char own[16] = "";

	if (c->arch[0] && !kb_nvidia_arch_valid(c->arch)) {
		kb_error("KB_CUDA_ARCH must be an nvcc target such as 90a, 80 "
			 "or 100f, not \"%s\"",
			 c->arch);
		return -1;
	}
	if (kb_nvidia_probe(&d->info, c->probe_timeout_s) == 0) {
		kb_info("gpu=%s device \"%s\" cc=%d.%d cuda_driver=%d pci=%s "
			"minor=%d uuid=%s",
			c->gpu, d->info.name, d->info.cc_major,
			d->info.cc_minor, d->info.cuda_driver,
			d->info.pci_bus_id, d->info.minor, d->info.uuid);
		if (!strcasestr(d->info.name, c->gpu))
			kb_warn("gpu=%s but the device is \"%s\": is KB_GPU "
				"right?",
				c->gpu, d->info.name);
		kb_nvidia_arch_for_cc(d->info.cc_major, d->info.cc_minor, own,
				      sizeof(own));
	} else if (kb__device_unread(c, &d->info, "CUDA") < 0) {
		return -1;
	}
	if (c->arch[0] && own[0] && strcmp(own, c->arch) != 0)
		kb_warn("KB_CUDA_ARCH=%s but the device is sm_%s", c->arch,
			own);
	arch_from = kb__device_pick_arch(c, d, own,
					 kb_nvidia_arch_for_name(c->gpu));
	if (!arch_from)
		kb_warn("gpu=%s: no CUDA architecture known: cu builds will "
			"fail (set KB_CUDA_ARCH)",
			c->gpu);
	/* Runs name the device by UUID: right whether or not CUDA in the
	 * sandbox enumerates the other GPUs (whose nodes it lacks). A MIG
	 * instance is kept as the worker was given it. */
	if (cvd && strncmp(cvd, "MIG-", 4) == 0)
		snprintf(d->visible, sizeof(d->visible), "%s", cvd);
	else if (d->info.ok && d->info.uuid[0])
		snprintf(d->visible, sizeof(d->visible), "%s", d->info.uuid);
	else if (cvd)
		snprintf(d->visible, sizeof(d->visible), "%s", cvd);
	d->restrict_ = c->restrict_ && d->info.ok && d->info.minor >= 0;
	d->node = d->info.minor;
	kb_info("gpu=%s arch=%s%s (%s) runs: CUDA_VISIBLE_DEVICES=%s, %s",
		c->gpu, d->arch[0] ? "sm_" : "none", d->arch,
		arch_from ? arch_from : "-",
		d->visible[0] ? d->visible : "(unset)",
		d->restrict_ ? "its device node alone" : "every GPU node");
	return 0;
}

/* Whether /dev/<name> is a per-GPU node of another GPU than index. */
static int other_gpu(const char *name, int index)
{
	char *end;
	long n;

	if (strncmp(name, "nvidia", 6) == 0 && name[6] >= '0' &&
	    name[6] <= '9') {
		n = strtol(name + 6, &end, 10);
		return *end == '\0' && n != index;
	}
	return 0;
}

/* The driver's nodes: nvidiaN per GPU (with restrict_, the worker's own
 * alone: N = own) and the shared control nodes (nvidiactl, nvidia-uvm,
 * nvidia-caps/, ...), which every CUDA program needs. */
static int nvidia_dev_node(const char *entry, int restrict_, int own,
			   char *path, size_t path_size)
{
	if (strncmp(entry, "nvidia", 6) != 0 ||
	    (restrict_ && other_gpu(entry, own)))
		return 0;
	snprintf(path, path_size, "/dev/%s", entry);
	return 1;
}

/* Every device type name no other family claims is NVIDIA's. */
static int nvidia_claims(const char *gpu)
{
	(void)gpu;
	return 1;
}

const struct kb_device_family kb_device_nvidia = {
	.name = "nvidia",
	.has_device = 1,
	.toolchain = KB_LANG_NVIDIA,
	.arch_setting = "KB_CUDA_ARCH",
	.run_env = "CUDA_VISIBLE_DEVICES",
	.claims = nvidia_claims,
	.setup = nvidia_setup,
	.sample = kb__nvidia_sample,
	.describe = kb__nvidia_describe,
	.watch_start = kb__nvidia_watch_start,
	.watch_end = kb__nvidia_watch_end,
	.dev_node = nvidia_dev_node,
};
