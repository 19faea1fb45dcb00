/* kb_nvidia: the NVIDIA family's readings, driver version and device
 * fault watch, through NVML (see nvidia.h).
 *
 * The few NVML entry points used are restated below as function-pointer
 * types (stable C ABI; all return 0 on success), so the worker builds
 * without nvml.h and links no NVIDIA library.
 */
#include "nvidia.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_int.h"

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
	nvml.by_pci =
		(nvml_by_pci_fn)dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
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

int kb__nvidia_nvml_minor(const char *pci)
{
	void *dev = nvml_device(pci);
	unsigned v;

	return dev && nvml.minor && nvml.minor(dev, &v) == 0 ? (int)v : -1;
}

int kb__nvidia_sample(const struct kb_device_info *g,
		      struct kb_device_sample *s)
{
	void *dev = g && g->ok ? nvml_device(g->pci_bus_id) : NULL;
	unsigned v;

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

int kb_nvidia_driver_string(char *out, size_t out_size)
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

/* The name, and the driver as NVML's version string and the CUDA driver
 * version the probe read: "550.54.15 (CUDA 12.4)". The runtime is the
 * toolkit a job is built with: eval.c or the harness fills it in. */
int kb__nvidia_describe(const struct kb_device_info *g, const char *gpu,
			struct kb_device_desc *out)
{
	char drv[96] = "";

	kb__device_name(g, gpu, out->name, sizeof(out->name));
	kb_nvidia_driver_string(drv, sizeof(drv));
	if (g && g->ok && g->cuda_driver > 0)
		snprintf(out->driver, sizeof(out->driver), "%s%sCUDA %d.%d%s",
			 drv, drv[0] ? " (" : "", g->cuda_driver / 1000,
			 g->cuda_driver % 1000 / 10, drv[0] ? ")" : "");
	else
		snprintf(out->driver, sizeof(out->driver), "%s", drv);
	out->runtime = "";
	return out->driver[0] ? 0 : -1;
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

int kb_nvidia_xid_is_device_fault(unsigned xid)
{
	const int i = xid_index(xid);

	return i >= 0 && xids[i].fault;
}

const char *kb_nvidia_xid_name(unsigned xid)
{
	const int i = xid_index(xid);

	return i >= 0 ? xids[i].name : NULL;
}

struct nvidia_watch {
	struct kb_device_watch base;
	void *dev;
	void *set;              /* NULL: no event could be registered */
	int ecc_ok;             /* the start's ECC count was read */
	unsigned long long ecc; /* volatile uncorrected ECC errors then */
};

/* Registers w for the fault events its device supports; w->set stays
 * NULL when none can be. */
static void register_events(struct nvidia_watch *w)
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

struct kb_device_watch *kb__nvidia_watch_start(const struct kb_device_info *g,
					       char *errstr, size_t errstr_size)
{
	struct nvidia_watch w = {.base.family = &kb_device_nvidia}, *out;

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
	return &out->base;
}

/* What kb__nvidia_watch_end found: the first fault wins, and any fault wins
 * over a failure to look. */
struct finding {
	enum kb_device_watch_result result;
	char *why;
	size_t size;
};

static void found(struct finding *f, enum kb_device_watch_result result,
		  const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void found(struct finding *f, enum kb_device_watch_result result,
		  const char *fmt, ...)
{
	va_list ap;

	if (f->result == KB_DEVICE_WATCH_FAULT ||
	    (f->result == KB_DEVICE_WATCH_UNKNOWN &&
	     result != KB_DEVICE_WATCH_FAULT))
		return;
	f->result = result;
	va_start(ap, fmt);
	vsnprintf(f->why, f->size, fmt, ap);
	va_end(ap);
}

/* Takes the events that arrived since the watch started, without
 * waiting (a bound keeps a flood from holding the run's end). */
static void drain_events(struct nvidia_watch *w, struct finding *f)
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
			found(f, KB_DEVICE_WATCH_FAULT,
			      "the GPU is lost (NVML)");
			return;
		}
		if (rc != 0) {
			found(f, KB_DEVICE_WATCH_UNKNOWN,
			      "nvmlEventSetWait_v2 failed (NVML error %d)", rc);
			return;
		}
		if (ev.type & NVML_EVENT_DOUBLE_BIT_ECC)
			found(f, KB_DEVICE_WATCH_FAULT, "double-bit ECC error");
		if (!(ev.type & NVML_EVENT_XID_CRITICAL))
			continue;
		xid = ev.data <= UINT_MAX ? (unsigned)ev.data : 0;
		name = kb_nvidia_xid_name(xid);
		if (kb_nvidia_xid_is_device_fault(xid))
			found(f, KB_DEVICE_WATCH_FAULT, "Xid %u (%s)", xid,
			      name);
		else if (f->result == KB_DEVICE_WATCH_CLEAN)
			/* Kept for the log: not the device's fault. */
			snprintf(f->why, f->size, "Xid %llu (%s)", ev.data,
				 name ? name : "not a device fault");
	}
}

/* kb_device_watch_end has handled NULL and cleared why. */
enum kb_device_watch_result kb__nvidia_watch_end(struct kb_device_watch *base,
						 char *why, size_t why_size)
{
	struct nvidia_watch *w = (struct nvidia_watch *)base;
	struct finding f = {KB_DEVICE_WATCH_CLEAN, why, why_size};
	unsigned long long ecc;
	int rc;

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
			found(&f, KB_DEVICE_WATCH_FAULT,
			      "uncorrected ECC errors %llu -> %llu", w->ecc,
			      ecc);
		else if (rc == NVML_ERROR_GPU_IS_LOST)
			found(&f, KB_DEVICE_WATCH_FAULT,
			      "the GPU is lost (NVML)");
		else if (rc != 0)
			found(&f, KB_DEVICE_WATCH_UNKNOWN,
			      "nvmlDeviceGetTotalEccErrors failed (NVML error "
			      "%d)",
			      rc);
	}
	if (w->set)
		nvml.set_free(w->set);
	free(w);
	return f.result;
}
