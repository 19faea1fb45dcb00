/* kb_gpu: see gpu.h.
 *
 * The few driver and NVML entry points used are restated below as
 * function-pointer types (stable C ABI; all return 0 on success), so the
 * worker builds without cuda.h or nvml.h and links neither library.
 */
#include "nvidia.h"

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "amd.h"
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

static int nvml_minor(const char *pci);

int kb_gpu_probe(struct kb_gpu_info *g, double timeout_s)
{
	struct probe_msg m;
	int fds[2], rc, status;
	pid_t pid;

	memset(g, 0, sizeof(*g));
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
			g->minor = nvml_minor(g->pci_bus_id);
	}
	return 0;
}

/* ---- arch ---- */

int kb_gpu_arch_for_cc(int major, int minor, char *out, size_t out_size)
{
	int n;

	if (major < 5 || major > 99 || minor < 0 || minor > 9)
		return -EINVAL;
	n = snprintf(out, out_size, "%d%d%s", major, minor,
		     major >= 9 ? "a" : "");
	return n > 0 && (size_t)n < out_size ? 0 : -EINVAL;
}

const char *kb_gpu_arch_for_name(const char *gpu)
{
	static const char *const table[][2] = {
		{"H100", "90a"}, {"H200", "90a"},  {"GH200", "90a"},
		{"H800", "90a"}, {"H20", "90a"},   {"A100", "80"},
		{"A800", "80"},  {"A10G", "86"},   {"A10", "86"},
		{"A40", "86"},   {"L4", "89"},     {"L40", "89"},
		{"L40S", "89"},  {"T4", "75"},     {"B200", "100a"},
		{"GB200", "100a"}, {"B300", "103a"}, {"GB300", "103a"},
	};

	for (size_t i = 0; gpu && i < sizeof(table) / sizeof(table[0]); i++)
		if (strcasecmp(table[i][0], gpu) == 0)
			return table[i][1];
	return NULL;
}

int kb_gpu_arch_valid(const char *s)
{
	size_t digits = 0;

	while (s && isdigit((unsigned char)s[digits]))
		digits++;
	if (digits < 2 || digits > 3)
		return 0;
	s += digits;
	return *s == '\0' || ((*s == 'a' || *s == 'f') && s[1] == '\0');
}

/* ---- NVML ---- */

typedef int (*nvml_init_fn)(void);
typedef int (*nvml_by_pci_fn)(const char *, void **);
typedef int (*nvml_clock_fn)(void *, int, unsigned *);
typedef int (*nvml_uint_fn)(void *, unsigned *);
typedef int (*nvml_temp_fn)(void *, int, unsigned *);
typedef int (*nvml_driver_fn)(char *, unsigned);

/* nvmlEventData_t as nvmlEventSetWait_v2 fills it (nvml.h since CUDA
 * 11: the _v2 call added the two instance ids). */
struct nvml_event {
	void *device;
	unsigned long long type;
	unsigned long long data; /* an Xid event's Xid (999: unknown) */
	unsigned gpu_instance, compute_instance;
};

typedef int (*nvml_set_create_fn)(void **);
typedef int (*nvml_set_free_fn)(void *);
typedef int (*nvml_register_fn)(void *, unsigned long long, void *);
typedef int (*nvml_supported_fn)(void *, unsigned long long *);
typedef int (*nvml_wait_fn)(void *, struct nvml_event *, unsigned);
typedef int (*nvml_ecc_fn)(void *, int, int, unsigned long long *);

enum {
	NVML_CLOCK_SM = 1,
	NVML_TEMPERATURE_GPU = 0,
	NVML_ERROR_TIMEOUT = 10,
	NVML_ERROR_GPU_IS_LOST = 15,
	NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1, /* nvmlMemoryErrorType_t */
	NVML_VOLATILE_ECC = 0,                  /* nvmlEccCounterType_t */
};

/* nvmlEventType* bits. */
#define NVML_EVENT_DOUBLE_BIT_ECC 0x2ULL
#define NVML_EVENT_XID_CRITICAL 0x8ULL

static struct {
	int ok;
	char why[200]; /* when !ok */
	nvml_by_pci_fn by_pci;
	nvml_clock_fn clock;
	nvml_temp_fn temp;
	nvml_uint_fn power, minor;
	nvml_driver_fn driver;
	nvml_set_create_fn set_create;
	nvml_set_free_fn set_free;
	nvml_register_fn register_events;
	nvml_supported_fn supported;
	nvml_wait_fn wait;
	nvml_ecc_fn ecc;
} nvml;
static pthread_once_t nvml_once = PTHREAD_ONCE_INIT;

static void nvml_open(void)
{
	/* KB_NVML_LIB: for an NVML outside the loader's path, and for the
	 * tests' fake. */
	const char *name = getenv("KB_NVML_LIB");
	void *lib;
	nvml_init_fn init;
	int rc;

	if (!name || !name[0])
		name = "libnvidia-ml.so.1";
	lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		const char *e = dlerror();

		snprintf(nvml.why, sizeof(nvml.why), "cannot load %s: %s", name,
			 e ? e : "?");
		return;
	}
	init = (nvml_init_fn)dlsym(lib, "nvmlInit_v2");
	nvml.by_pci = (nvml_by_pci_fn)dlsym(lib,
					    "nvmlDeviceGetHandleByPciBusId_v2");
	nvml.clock = (nvml_clock_fn)dlsym(lib, "nvmlDeviceGetClockInfo");
	nvml.temp = (nvml_temp_fn)dlsym(lib, "nvmlDeviceGetTemperature");
	nvml.power = (nvml_uint_fn)dlsym(lib, "nvmlDeviceGetPowerUsage");
	nvml.minor = (nvml_uint_fn)dlsym(lib, "nvmlDeviceGetMinorNumber");
	nvml.driver = (nvml_driver_fn)dlsym(lib, "nvmlSystemGetDriverVersion");
	nvml.set_create = (nvml_set_create_fn)dlsym(lib, "nvmlEventSetCreate");
	nvml.set_free = (nvml_set_free_fn)dlsym(lib, "nvmlEventSetFree");
	nvml.register_events =
		(nvml_register_fn)dlsym(lib, "nvmlDeviceRegisterEvents");
	nvml.supported = (nvml_supported_fn)dlsym(
		lib, "nvmlDeviceGetSupportedEventTypes");
	nvml.wait = (nvml_wait_fn)dlsym(lib, "nvmlEventSetWait_v2");
	nvml.ecc = (nvml_ecc_fn)dlsym(lib, "nvmlDeviceGetTotalEccErrors");
	/* The library stays loaded for the life of the process. */
	if (!init || !nvml.by_pci)
		snprintf(nvml.why, sizeof(nvml.why),
			 "%s lacks nvmlInit_v2 or "
			 "nvmlDeviceGetHandleByPciBusId_v2",
			 name);
	else if ((rc = init()) != 0)
		snprintf(nvml.why, sizeof(nvml.why),
			 "nvmlInit_v2 failed (NVML error %d)", rc);
	else
		nvml.ok = 1;
}

static void *nvml_device(const char *pci)
{
	void *dev = NULL;

	pthread_once(&nvml_once, nvml_open);
	if (!nvml.ok || !pci || !pci[0] || nvml.by_pci(pci, &dev) != 0)
		return NULL;
	return dev;
}

static int nvml_minor(const char *pci)
{
	void *dev = nvml_device(pci);
	unsigned v;

	return dev && nvml.minor && nvml.minor(dev, &v) == 0 ? (int)v : -1;
}

int kb_gpu_device_driver(const struct kb_gpu_info *g, char *out,
			 size_t out_size)
{
	if (g && g->amd)
		return kb_amdgpu_driver_string(out, out_size);
	return kb_gpu_driver_string(out, out_size);
}

int kb_gpu_probe_amd(struct kb_gpu_info *g, const char *visible)
{
	struct kb_amdgpu_dev d;
	int rc = kb_amdgpu_probe(&d, visible);

	memset(g, 0, sizeof(*g));
	g->minor = -1;
	g->amd = 1;
	g->render_minor = -1;
	if (rc < 0) {
		snprintf(g->why, sizeof(g->why), "%s", d.why);
		return -1;
	}
	snprintf(g->name, sizeof(g->name), "%s", d.name);
	snprintf(g->gfx, sizeof(g->gfx), "%s", d.gfx);
	snprintf(g->pci_bus_id, sizeof(g->pci_bus_id), "%s", d.pci_bus_id);
	g->render_minor = d.render_minor;
	g->ok = 1;
	return 0;
}

int kb_gpu_sample(const struct kb_gpu_info *g, struct kb_gpu_sample *s)
{
	void *dev;
	unsigned v;

	if (g && g->amd)
		return kb_amdgpu_sample(g->ok ? g->pci_bus_id : NULL,
					&s->sm_mhz, &s->temp_c, &s->power_mw);
	dev = g && g->ok ? nvml_device(g->pci_bus_id) : NULL;
	s->sm_mhz = s->temp_c = s->power_mw = -1;
	if (!dev)
		return -1;
	if (nvml.clock && nvml.clock(dev, NVML_CLOCK_SM, &v) == 0)
		s->sm_mhz = (int)v;
	if (nvml.temp && nvml.temp(dev, NVML_TEMPERATURE_GPU, &v) == 0)
		s->temp_c = (int)v;
	if (nvml.power && nvml.power(dev, &v) == 0)
		s->power_mw = (int)v;
	return 0;
}

int kb_gpu_driver_string(char *out, size_t out_size)
{
	pthread_once(&nvml_once, nvml_open);
	if (out_size)
		out[0] = '\0';
	if (!nvml.ok || !nvml.driver || out_size == 0 ||
	    nvml.driver(out, (unsigned)out_size) != 0) {
		if (out_size)
			out[0] = '\0';
		return -1;
	}
	return 0;
}

/* ---- device faults ---- */

/* Xids with a known cause. A device fault is one NVIDIA attributes to
 * the GPU, its memory, firmware, driver or bus, not to the program
 * running on it: a run it hits is not the submission's doing. Sources:
 * NVIDIA's Xid catalog
 * (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html), whose
 * immediate action for the faults below is a GPU reset, a reboot or an
 * ECC or NVLink workflow, but for 63 (logged after an ECC error) and 94
 * (restart the application); NVIDIA's older listing of possible causes
 * (docs.nvidia.com/deploy/xid-errors/index.html), which names no "user
 * app error" for any of them; for 48, 63 and 64 also
 * docs.nvidia.com/deploy/dynamic-page-retirement. The program's own: the
 * Xids NVIDIA's Kubernetes device plugin skips as application errors
 * (github.com/NVIDIA/k8s-device-plugin, internal/rm/health.go). */
static const struct {
	unsigned xid;
	int fault;
	const char *name;
} xids[] = {
	{13, 0, "graphics engine exception"},
	{31, 0, "GPU memory page fault"},
	{43, 0, "GPU stopped processing"},
	{45, 0, "preemptive cleanup, due to previous errors"},
	{48, 1, "double-bit ECC error"},
	{61, 1, "internal micro-controller breakpoint/warning"},
	{62, 1, "internal micro-controller halt"},
	/* Logged only after an ECC error was handled in memory. */
	{63, 1, "ECC page retirement or row remapping recording event"},
	{64, 1, "ECC page retirement or row remapping recording failure"},
	{68, 0, "video processor exception"},
	{74, 1, "NVLink error"},
	{79, 1, "GPU has fallen off the bus"},
	/* Corrected errors: the run was neither stopped nor corrupted
	 * (NVIDIA's immediate action: ignore). */
	{92, 0, "high single-bit ECC error rate"},
	/* Contained to the one process that hit it -- ours -- which the
	 * driver stops: the run died of the memory, not of its code. */
	{94, 1, "contained ECC error"},
	{95, 1, "uncontained ECC error"},
	{119, 1, "GSP RPC timeout"},
	{120, 1, "GSP error"},
	{140, 1, "unrecovered ECC error"},
	/* The driver now asks for a GPU reset, a drain or a reboot. */
	{154, 1, "GPU recovery action changed"},
};

static int xid_index(unsigned xid)
{
	for (size_t i = 0; i < sizeof(xids) / sizeof(xids[0]); i++)
		if (xids[i].xid == xid)
			return (int)i;
	return -1;
}

int kb_gpu_xid_is_device_fault(unsigned xid)
{
	const int i = xid_index(xid);

	return i >= 0 && xids[i].fault;
}

const char *kb_gpu_xid_name(unsigned xid)
{
	const int i = xid_index(xid);

	return i >= 0 ? xids[i].name : NULL;
}

struct kb_gpu_watch {
	struct kb_amdgpu_watch *amd; /* an AMD device's watch (amdgpu.h) */
	void *dev;
	void *set;              /* NULL: no event could be registered */
	int ecc_ok;             /* the start's ECC count was read */
	unsigned long long ecc; /* volatile uncorrected ECC errors then */
};

/* Registers w for the fault events its device supports; w->set stays
 * NULL when none can be. */
static void register_events(struct kb_gpu_watch *w)
{
	unsigned long long mask = NVML_EVENT_XID_CRITICAL |
				  NVML_EVENT_DOUBLE_BIT_ECC,
			   supported;

	if (!nvml.set_create || !nvml.set_free || !nvml.register_events ||
	    !nvml.wait)
		return;
	/* Registering a type the device lacks fails the whole call. */
	if (nvml.supported && nvml.supported(w->dev, &supported) == 0)
		mask &= supported;
	if (!mask)
		return;
	if (nvml.set_create(&w->set) != 0) {
		w->set = NULL;
		return;
	}
	if (nvml.register_events(w->dev, mask, w->set) != 0) {
		nvml.set_free(w->set);
		w->set = NULL;
	}
}

struct kb_gpu_watch *kb_gpu_watch_start(const struct kb_gpu_info *g,
					char *errstr, size_t errstr_size)
{
	struct kb_gpu_watch w = {0}, *out;

	if (g && g->amd) {
		w.amd = kb_amdgpu_watch_start(g->ok ? g->pci_bus_id : NULL,
					      errstr, errstr_size);
		if (!w.amd || !(out = malloc(sizeof(*out)))) {
			kb_amdgpu_watch_end(w.amd, NULL, 0);
			return NULL;
		}
		*out = w;
		return out;
	}
	if (!g || !g->ok || !g->pci_bus_id[0]) {
		snprintf(errstr, errstr_size,
			 "no NVIDIA device was read at start-up");
		return NULL;
	}
	w.dev = nvml_device(g->pci_bus_id);
	if (!w.dev) {
		if (nvml.ok)
			snprintf(errstr, errstr_size,
				 "NVML does not know device %s", g->pci_bus_id);
		else
			snprintf(errstr, errstr_size, "%s", nvml.why);
		return NULL;
	}
	register_events(&w);
	w.ecc_ok = nvml.ecc &&
		   nvml.ecc(w.dev, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
			    NVML_VOLATILE_ECC, &w.ecc) == 0;
	if (!w.set && !w.ecc_ok) {
		snprintf(errstr, errstr_size,
			 "NVML offers neither Xid events nor ECC counts for "
			 "device %s",
			 g->pci_bus_id);
		return NULL;
	}
	out = malloc(sizeof(*out));
	if (!out) {
		if (w.set)
			nvml.set_free(w.set);
		snprintf(errstr, errstr_size, "out of memory");
		return NULL;
	}
	*out = w;
	return out;
}

/* What kb_gpu_watch_end found: the first fault wins, and any fault wins
 * over a failure to look. */
struct finding {
	enum kb_gpu_watch_result result;
	char *why;
	size_t size;
};

static void found(struct finding *f, enum kb_gpu_watch_result result,
		  const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void found(struct finding *f, enum kb_gpu_watch_result result,
		  const char *fmt, ...)
{
	va_list ap;

	if (f->result == KB_GPU_WATCH_FAULT ||
	    (f->result == KB_GPU_WATCH_UNKNOWN &&
	     result != KB_GPU_WATCH_FAULT))
		return;
	f->result = result;
	va_start(ap, fmt);
	vsnprintf(f->why, f->size, fmt, ap);
	va_end(ap);
}

/* Takes the events that arrived since the watch started, without
 * waiting (a bound keeps a flood from holding the run's end). */
static void drain_events(struct kb_gpu_watch *w, struct finding *f)
{
	for (int n = 0; n < 64; n++) {
		struct nvml_event ev;
		const char *name;
		unsigned xid;
		int rc;

		memset(&ev, 0, sizeof(ev));
		rc = nvml.wait(w->set, &ev, 0);
		if (rc == NVML_ERROR_TIMEOUT)
			return;
		if (rc == NVML_ERROR_GPU_IS_LOST) {
			found(f, KB_GPU_WATCH_FAULT, "the GPU is lost (NVML)");
			return;
		}
		if (rc != 0) {
			found(f, KB_GPU_WATCH_UNKNOWN,
			      "nvmlEventSetWait_v2 failed (NVML error %d)", rc);
			return;
		}
		if (ev.type & NVML_EVENT_DOUBLE_BIT_ECC)
			found(f, KB_GPU_WATCH_FAULT, "double-bit ECC error");
		if (!(ev.type & NVML_EVENT_XID_CRITICAL))
			continue;
		xid = ev.data <= UINT_MAX ? (unsigned)ev.data : 0;
		name = kb_gpu_xid_name(xid);
		if (kb_gpu_xid_is_device_fault(xid))
			found(f, KB_GPU_WATCH_FAULT, "Xid %u (%s)", xid, name);
		else if (f->result == KB_GPU_WATCH_CLEAN)
			/* Kept for the log: not the device's fault. */
			snprintf(f->why, f->size, "Xid %llu (%s)", ev.data,
				 name ? name : "not a device fault");
	}
}

enum kb_gpu_watch_result kb_gpu_watch_end(struct kb_gpu_watch *w, char *why,
					  size_t why_size)
{
	struct finding f = {KB_GPU_WATCH_CLEAN, why, why_size};
	unsigned long long ecc;
	int rc;

	if (why_size)
		why[0] = '\0';
	if (!w) {
		found(&f, KB_GPU_WATCH_UNKNOWN, "no device fault watch");
		return f.result;
	}
	if (w->amd) {
		f.result = (enum kb_gpu_watch_result)kb_amdgpu_watch_end(
			w->amd, why, why_size);
		free(w);
		return f.result;
	}
	if (w->set)
		drain_events(w, &f);
	if (w->ecc_ok) {
		rc = nvml.ecc(w->dev, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
			      NVML_VOLATILE_ECC, &ecc);
		/* The volatile count restarts when the driver initialises
		 * the GPU afresh, which a client holding it (the worker's
		 * NVML, persistence mode) prevents; a restart would read as
		 * a decrease, which is not taken for a fault. */
		if (rc == 0 && ecc > w->ecc)
			found(&f, KB_GPU_WATCH_FAULT,
			      "uncorrected ECC errors %llu -> %llu", w->ecc,
			      ecc);
		else if (rc == NVML_ERROR_GPU_IS_LOST)
			found(&f, KB_GPU_WATCH_FAULT, "the GPU is lost (NVML)");
		else if (rc != 0)
			found(&f, KB_GPU_WATCH_UNKNOWN,
			      "nvmlDeviceGetTotalEccErrors failed (NVML error "
			      "%d)",
			      rc);
	}
	if (w->set)
		nvml.set_free(w->set);
	free(w);
	return f.result;
}
