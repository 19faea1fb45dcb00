/* A fake libnvidia-ml for the device fault watch
 * (worker/device/nvidia_nvml.c): the NVML calls the worker makes, for one
 * device, scripted by the environment of the process that loads it. Each
 * variable is read when it matters, so a test may set it before the call.
 *
 *   FAKE_NVML_PCI     the device's PCI bus id (default 0000:18:00.0);
 *                     any other id is NVML_ERROR_NOT_FOUND
 *   FAKE_NVML_XID     Xids that happen after nvmlDeviceRegisterEvents,
 *                     "13,79"; as NVML does, every pending Xid event
 *                     carries the latest Xid
 *   FAKE_NVML_DBE     "1": a double-bit ECC event happens too (first)
 *   FAKE_NVML_EVENTS  the supported event types (default 0xf); registering
 *                     a type outside them is NVML_ERROR_NOT_SUPPORTED
 *   FAKE_NVML_ECC     the volatile uncorrected ECC count, one value per
 *                     read, "0,2" (the last repeats); unset: ECC is off
 *                     (NVML_ERROR_NOT_SUPPORTED)
 *   FAKE_NVML_LOST    "1": the GPU falls off the bus once the watch has
 *                     started: waits and ECC reads are NVML_ERROR_GPU_IS_LOST
 *
 * The layouts and codes are nvml.h's (nvmlEventData_t as
 * nvmlEventSetWait_v2 fills it). fake_nvml_open_sets() and
 * fake_nvml_registered() let a test check what the worker did.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum {
	SUCCESS = 0,
	ERROR_INVALID_ARGUMENT = 2,
	ERROR_NOT_SUPPORTED = 3,
	ERROR_NOT_FOUND = 6,
	ERROR_TIMEOUT = 10,
	ERROR_GPU_IS_LOST = 15,
};

#define EVENT_DBE 0x2ULL
#define EVENT_XID 0x8ULL
#define QUEUE_MAX 16

struct event_data {
	void *device;
	unsigned long long type;
	unsigned long long data;
	unsigned gpu_instance, compute_instance;
};

struct event_set {
	struct event_data q[QUEUE_MAX];
	int n, next;
};

/* The exported calls, declared for -Wmissing-prototypes. */
int nvmlInit_v2(void);
int nvmlDeviceGetHandleByPciBusId_v2(const char *pci, void **dev);
int nvmlDeviceGetClockInfo(void *dev, int type, unsigned *mhz);
int nvmlDeviceGetTemperature(void *dev, int sensor, unsigned *c);
int nvmlDeviceGetPowerUsage(void *dev, unsigned *mw);
int nvmlDeviceGetMinorNumber(void *dev, unsigned *minor);
int nvmlSystemGetDriverVersion(char *out, unsigned size);
int nvmlDeviceGetSupportedEventTypes(void *dev, unsigned long long *types);
int nvmlEventSetCreate(struct event_set **set);
int nvmlDeviceRegisterEvents(void *dev, unsigned long long types,
			     struct event_set *set);
int nvmlEventSetWait_v2(struct event_set *set, struct event_data *data,
			unsigned timeout_ms);
int nvmlEventSetFree(struct event_set *set);
int nvmlDeviceGetTotalEccErrors(void *dev, int error_type, int counter_type,
				unsigned long long *count);
int fake_nvml_open_sets(void);
unsigned long long fake_nvml_registered(void);

static int the_device;
static int open_sets, ecc_reads;
static unsigned long long registered;

static int is_set(const char *name)
{
	const char *v = getenv(name);

	return v && strcmp(v, "1") == 0;
}

/* The GPU is gone once the watch has started: after the first ECC read,
 * or where ECC is off, after the registration. */
static int lost(void)
{
	return is_set("FAKE_NVML_LOST") &&
	       (ecc_reads > 0 || (!getenv("FAKE_NVML_ECC") && registered));
}

int nvmlInit_v2(void)
{
	return SUCCESS;
}

int nvmlDeviceGetHandleByPciBusId_v2(const char *pci, void **dev)
{
	const char *want = getenv("FAKE_NVML_PCI");

	if (!want)
		want = "0000:18:00.0";
	if (!pci || strcasecmp(pci, want) != 0)
		return ERROR_NOT_FOUND;
	*dev = &the_device;
	return SUCCESS;
}

int nvmlDeviceGetClockInfo(void *dev, int type, unsigned *mhz)
{
	*mhz = 1980;
	return dev == &the_device ? SUCCESS : ERROR_INVALID_ARGUMENT;
}

int nvmlDeviceGetTemperature(void *dev, int sensor, unsigned *c)
{
	*c = 41;
	return dev == &the_device ? SUCCESS : ERROR_INVALID_ARGUMENT;
}

int nvmlDeviceGetPowerUsage(void *dev, unsigned *mw)
{
	*mw = 300000;
	return dev == &the_device ? SUCCESS : ERROR_INVALID_ARGUMENT;
}

int nvmlDeviceGetMinorNumber(void *dev, unsigned *minor)
{
	*minor = 3;
	return dev == &the_device ? SUCCESS : ERROR_INVALID_ARGUMENT;
}

int nvmlSystemGetDriverVersion(char *out, unsigned size)
{
	if (size < sizeof("550.54.15"))
		return ERROR_INVALID_ARGUMENT;
	strcpy(out, "550.54.15");
	return SUCCESS;
}

static unsigned long long supported(void)
{
	const char *v = getenv("FAKE_NVML_EVENTS");

	return v ? strtoull(v, NULL, 0) : 0xf;
}

int nvmlDeviceGetSupportedEventTypes(void *dev, unsigned long long *types)
{
	if (dev != &the_device)
		return ERROR_INVALID_ARGUMENT;
	*types = supported();
	return SUCCESS;
}

int nvmlEventSetCreate(struct event_set **set)
{
	*set = calloc(1, sizeof(**set));
	if (!*set)
		return ERROR_INVALID_ARGUMENT;
	open_sets++;
	return SUCCESS;
}

static void push(struct event_set *set, unsigned long long type,
		 unsigned long long data)
{
	struct event_data *e;

	if (set->n >= QUEUE_MAX)
		return;
	e = &set->q[set->n++];
	e->device = &the_device;
	e->type = type;
	e->data = data;
	e->gpu_instance = e->compute_instance = 0xFFFFFFFFu;
}

/* What happens on the device while the watch is on. */
int nvmlDeviceRegisterEvents(void *dev, unsigned long long types,
			     struct event_set *set)
{
	const char *xids = getenv("FAKE_NVML_XID");
	unsigned long long last = 0;
	const char *p;
	char *end;
	int n = 0;

	if (dev != &the_device || !set)
		return ERROR_INVALID_ARGUMENT;
	if (types & ~supported())
		return ERROR_NOT_SUPPORTED;
	registered = types;
	if ((types & EVENT_DBE) && is_set("FAKE_NVML_DBE"))
		push(set, EVENT_DBE, 0);
	for (p = xids; p && *p; p = *end ? end + 1 : end) {
		last = strtoull(p, &end, 10);
		n++;
	}
	/* NVML reports the latest Xid for every pending Xid event. */
	for (int i = 0; (types & EVENT_XID) && i < n; i++)
		push(set, EVENT_XID, last);
	return SUCCESS;
}

int nvmlEventSetWait_v2(struct event_set *set, struct event_data *data,
			unsigned timeout_ms)
{
	if (!set || !data)
		return ERROR_INVALID_ARGUMENT;
	if (lost())
		return ERROR_GPU_IS_LOST;
	if (set->next >= set->n)
		return ERROR_TIMEOUT;
	*data = set->q[set->next++];
	return SUCCESS;
}

int nvmlEventSetFree(struct event_set *set)
{
	if (!set)
		return ERROR_INVALID_ARGUMENT;
	free(set);
	open_sets--;
	return SUCCESS;
}

int nvmlDeviceGetTotalEccErrors(void *dev, int error_type, int counter_type,
				unsigned long long *count)
{
	const char *v = getenv("FAKE_NVML_ECC");
	char *end;
	int i = 0;

	/* Uncorrected (1), volatile (0): the worker's question. */
	if (dev != &the_device || error_type != 1 || counter_type != 0)
		return ERROR_INVALID_ARGUMENT;
	if (!v)
		return ERROR_NOT_SUPPORTED;
	if (lost())
		return ERROR_GPU_IS_LOST;
	for (;;) {
		*count = strtoull(v, &end, 10);
		if (i++ == ecc_reads || *end != ',')
			break;
		v = end + 1;
	}
	ecc_reads++;
	return SUCCESS;
}

int fake_nvml_open_sets(void)
{
	return open_sets;
}

unsigned long long fake_nvml_registered(void)
{
	return registered;
}
