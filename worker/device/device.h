/* kb_device: the device a worker serves, through one table of operations
 * per device family (NVIDIA, AMD, the host's CPU), as curl reaches its
 * TLS backends: callers ask the family's table, never which family it is.
 *
 * A worker serves one device type (KB_GPU: "H100", "MI300", "CPU"); the
 * family that claims the name (kb_device_family_for) reads the device at
 * start-up and decides what builds target and what runs get
 * (kb_device_setup), reads clocks, temperature and power for the Result
 * and /metrics (sample), says what the Result names it (describe),
 * watches each run for faults of the device itself (watch_start,
 * kb_device_watch_end), names the device nodes an isolated run sees
 * (dev_node, asked by the sandbox's scan of /dev) and the variable that
 * names the device to a run (run_env).
 *
 * Each family's code is in its own files (nvidia.c and nvidia_nvml.c,
 * amd.c, cpu.c); what they share is device_int.h. docs/internals.md,
 * "Device families", tables what each entry provides and lists the files
 * a new family touches.
 *
 * Thread-safety: kb_device_setup() may fork (NVIDIA's probe): call it
 * before starting threads. The table is static and read-only; sample,
 * describe and the watch are thread-safe (a watch belongs to the thread
 * that started it); dev_node and kb_device_family_for are pure.
 */
#ifndef KB_DEVICE_H
#define KB_DEVICE_H

#include <stddef.h>

struct kb_device_family;

/* What a family's probe read of the worker's device. */
struct kb_device_info {
	const struct kb_device_family *family; /* the family that read it */
	int ok;                                /* a device was found and read */
	char name[128];                        /* "NVIDIA H100 80GB HBM3" */
	char pci_bus_id[32];                   /* "0000:18:00.0" (lowercase) */
	char why[256];                         /* when !ok: what failed */
	/* NVIDIA's (nvidia.h): */
	int cc_major, cc_minor; /* compute capability */
	int cuda_driver;        /* cuDriverGetVersion(): 12040 = CUDA 12.4 */
	char uuid[48];          /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" */
	int minor;              /* N of /dev/nvidiaN; -1 when unknown */
	/* AMD's (amd.h): */
	char gfx[32];     /* "gfx942" */
	int render_minor; /* N of /dev/dri/renderDN; -1 when unknown */
};

/* The settings a family's setup reads. */
struct kb_device_cfg {
	const char *gpu; /* KB_GPU, the device type served */
	/* The value of the family's arch_setting (below); "" when unset. */
	const char *arch;
	/* 1: a device that cannot be read stops the worker (the service);
	 * 0: it is a warning (`eval`, for building without a device). */
	int required;
	int restrict_;          /* KB_GPU_RESTRICT: runs see it alone */
	double probe_timeout_s; /* how long a probe may take */
};

/* What a worker decided about its device at start-up. */
struct kb_device {
	const struct kb_device_family *family;
	struct kb_device_info info;
	/* The build target of the family's toolchain ("90a", "gfx942");
	 * "" when none is known. */
	char arch[64];
	char visible[192]; /* run_env's value for runs; "" when unset */
	int restrict_;     /* runs get the device's own node alone: */
	int node;          /* its number, as the family numbers them
			    * (dev_node); -1 when none */
};

/* One reading; -1 for what could not be read. */
struct kb_device_sample {
	int sm_mhz; /* the SM (engine, CPU) clock */
	int temp_c;
	int power_mw;
};

/* What the Result's system info names (sysinfo.h). */
struct kb_device_desc {
	char name[256];      /* the device's name, else the KB_GPU name */
	char driver[160];    /* "550.54.15 (CUDA 12.4)", amdgpu's version, the
			   * kernel release; "" when unknown */
	const char *runtime; /* "cpu"; "" when the build's toolkit says it */
};

/* ---- the device fault watch ----
 *
 * The harness's "device API error" exit after user code started is
 * charged to the user: the submission shares the harness's process and
 * could exit with that code itself. Evidence that the device really
 * failed must come from outside that process: a watch asks the driver,
 * in the worker, across one run (NVIDIA: Xid and ECC events through
 * NVML; AMD: the RAS error counters). */
enum kb_device_watch_result {
	KB_DEVICE_WATCH_UNKNOWN = -1, /* no watch, or it failed: no evidence */
	KB_DEVICE_WATCH_CLEAN = 0,    /* watched, and no device fault */
	KB_DEVICE_WATCH_FAULT = 1,    /* the device failed during the watch */
};

/* The head of every family's watch: the family that ends it. */
struct kb_device_watch {
	const struct kb_device_family *family;
};

/* Ends w and frees it. Returns KB_DEVICE_WATCH_FAULT with why naming the
 * evidence ("Xid 79 (GPU has fallen off the bus)"), KB_DEVICE_WATCH_CLEAN
 * (why names what was seen that is no device fault, or is ""), or
 * KB_DEVICE_WATCH_UNKNOWN with why saying what failed; w NULL gives
 * KB_DEVICE_WATCH_UNKNOWN ("no device fault watch"). */
enum kb_device_watch_result kb_device_watch_end(struct kb_device_watch *w,
						char *why, size_t why_size);

/* ---- the table ---- */

struct kb_device_family {
	const char *name; /* "nvidia", "amd", "cpu" */
	/* 1 when runs may be given the device (device nodes, run_env, the
	 * toolkit); 0 for the host's CPU, which every run has. */
	int has_device;
	/* kb_lang.h's enum kb_lang_family bit of the languages whose builds
	 * take arch (KB_LANG_NVIDIA: cu); 0: none. */
	unsigned toolchain;
	/* The setting that overrides arch ("KB_CUDA_ARCH"), or NULL. */
	const char *arch_setting;
	/* The variable that names the device to a run, set to
	 * kb_device.visible when the setup chose a value
	 * ("CUDA_VISIBLE_DEVICES"), or NULL when runs find their device
	 * otherwise. */
	const char *run_env;

	/* 1 when a KB_GPU name is of this family. kb_device_family_for asks
	 * the families in table order; the last (NVIDIA) claims every name
	 * no other does. Pure. */
	int (*claims)(const char *gpu);
	/* Reads the device (d->info, family set) and decides d's arch,
	 * visible, restrict_ and node, logging what it found. d is zeroed
	 * with family set and info.minor = -1 first. Returns 0, or -1 after
	 * logging why (a bad arch setting; no device while c->required). */
	int (*setup)(const struct kb_device_cfg *c, struct kb_device *d);
	/* Reads the device's clock, temperature and power into *s (fields
	 * -1 first). Returns 0 when the device answered (fields may still be
	 * -1), or -1. d may be NULL (none was read). */
	int (*sample)(const struct kb_device_info *d,
		      struct kb_device_sample *s);
	/* Fills *out for the Result's system info. d may be NULL; gpu is
	 * the KB_GPU name. Returns 0 when the driver was read, -1 when
	 * out->driver is "". */
	int (*describe)(const struct kb_device_info *d, const char *gpu,
			struct kb_device_desc *out);
	/* Starts watching d's device for faults across one run: a watch to
	 * end with kb_device_watch_end(), or NULL with errstr set (no
	 * device was read, or its driver offers nothing to watch with). d
	 * may be NULL. */
	struct kb_device_watch *(*watch_start)(const struct kb_device_info *d,
					       char *errstr,
					       size_t errstr_size);
	/* Ends a watch this family started (kb_device_watch_end, which
	 * handles NULL and clears why first): as kb_device_watch_end. */
	enum kb_device_watch_result (*watch_end)(struct kb_device_watch *w,
						 char *why, size_t why_size);
	/* The sandbox's scan of /dev (kb_device_dev_node): 1 when /dev/<entry>
	 * is one of this family's device nodes that a run with the device
	 * gets, with path set to what to bind (the entry, or one node inside
	 * it); 0 when it is not the family's or, with restrict_, another
	 * device's. own: the worker's node number in this family's numbering
	 * (kb_device.node), -1 when the worker's device is not of this
	 * family. Pure but for the entry name. */
	int (*dev_node)(const char *entry, int restrict_, int own, char *path,
			size_t path_size);
};

/* The families, in the order kb_device_family_for asks them. */
extern const struct kb_device_family kb_device_cpu, kb_device_amd,
	kb_device_nvidia;

/* The family of the KB_GPU name gpu (NULL: NVIDIA's, as any name no
 * other family claims). Never NULL. Pure. */
const struct kb_device_family *kb_device_family_for(const char *gpu);

/* Zeroes *d, takes the family of c->gpu and runs its setup. Returns what
 * the setup returns. Not thread-safe (may fork). */
int kb_device_setup(const struct kb_device_cfg *c, struct kb_device *d);

/* d->arch when d's family builds the languages of toolchain (kb_lang.h's
 * family bit) and an arch is known, else NULL. */
const char *kb_device_arch(const struct kb_device *d, unsigned toolchain);

/* The sandbox's question for one entry of /dev: whether a run with the
 * device gets it, asked of every family (any family's nodes present on
 * the host are bound, as a GPU run needs its driver's shared nodes). own
 * is the worker's family (NULL: none) and node its node number; with
 * restrict_, a family's per-device nodes other than the worker's own are
 * left out. Returns 1 with path set, or 0. */
int kb_device_dev_node(const struct kb_device_family *own, int restrict_,
		       int node, const char *entry, char *path,
		       size_t path_size);

#endif
