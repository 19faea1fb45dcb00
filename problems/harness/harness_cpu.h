/* harness_cpu.h: the CPU timing driver. A CPU problem is one C file that
 * defines `const struct kbh_cpu_problem kbh_cpu_problem_def` (the hooks
 * below) and is compiled with harness.c, harness_cpu.c (which holds
 * main()) and the submission into eval.out:
 *
 *     ./eval.out test|benchmark|profile|leaderboard cases.txt
 *
 * with POPCORN_FD naming the report pipe. See harness_cpu.c for the theory
 * of operation (what each mode does, how inputs are staged, flushed, timed
 * and checked).
 *
 * All hooks run in the harness's own (untimed) time except `call`, which
 * wraps the submission's custom_kernel and is the only thing timed. Hooks
 * must be deterministic: generate(seed) must always produce the same inputs,
 * since the private (secret-seed) run relies on the seed alone.
 *
 * Processes (guard.h): every hook but `call` runs in the trusted parent,
 * which never runs user code; `call` runs in the child, the only process
 * that does, and gets a copy of params -- so params must be plain data (no
 * pointers), at most 2048 bytes. The in/out pointers it gets point into the
 * shared arena.
 *
 * Thread-safety: the driver is single-threaded. generate and reference may
 * use OpenMP internally; vary and check must not (they run between timed
 * calls, and the parent's idle OpenMP threads would spin on the cores the
 * next timed call needs).
 */
#ifndef KBH_HARNESS_CPU_H
#define KBH_HARNESS_CPU_H

#include "harness.h"

#ifdef __cplusplus
extern "C" {
#endif

#pragma GCC visibility push(hidden)

#define KBH_CPU_MAX_INPUTS 4

/* Sizes of one case's buffers, filled in by setup. */
struct kbh_cpu_layout {
	int n_in;                            /* 1..KBH_CPU_MAX_INPUTS */
	size_t in_bytes[KBH_CPU_MAX_INPUTS]; /* each > 0 */
	size_t out_bytes;                    /* > 0: what the submission
					      * writes (or `call` stores) */
	size_t exp_bytes;                    /* > 0: what the harness keeps
					      * to check against */
};

/* Per-mode limits; a zero field takes the driver's default for that mode
 * (kbh_cpu_default_limits). */
struct kbh_cpu_limits {
	struct kbh_stop_rule stop[KBH_MODE_COUNT];
	unsigned watchdog_s[KBH_MODE_COUNT]; /* whole-process cap (exit 114) */
	uint32_t warmup_runs;                /* untimed calls per case */
	uint64_t warmup_ns;                  /* ... and at least this long */
};

struct kbh_cpu_problem {
	const char *name;
	/* Bytes of the problem's parameter struct (parsed by setup and passed
	 * to every other hook as `params`). */
	size_t params_size;
	/* NULL-terminated list of the case keys this problem accepts; "seed"
	 * is always accepted and required. */
	const char *const *keys;
	/* Names of the inputs, for error messages ("a", "b"). */
	const char *in_names[KBH_CPU_MAX_INPUTS];

	/* Parses the case (all of it has been checked against keys) into
	 * params and fills the layout. 0, or -EINVAL with err set: the run
	 * ends with exit 113 before anything executes. */
	int (*setup)(const struct kbh_case *c, void *params,
		     struct kbh_cpu_layout *lay, char *err, size_t err_size);

	/* Fills the inputs from seed (deterministic). */
	void (*generate)(const void *params, uint64_t seed, void *const in[]);

	/* Computes the expected result of the inputs into exp (in whatever
	 * form check wants: e.g. double sums and error bounds). */
	void (*reference)(const void *params, const void *const in[],
			  void *exp);

	/* Optional (NULL: each timed call reuses a base set as is). Makes a
	 * fresh variant of a base set -- new data whose expected result
	 * follows from the base's in O(size) time, e.g. permutations, sign
	 * flips and power-of-two scalings -- so that every timed call sees
	 * data it has never seen, without paying for a reference run. */
	void (*vary)(const void *params, uint64_t seed,
		     const void *const base_in[], const void *base_exp,
		     void *const in[], void *exp);

	/* Calls the submission's custom_kernel on in, writing out. Timed. */
	void (*call)(const void *params, void *const in[], void *out);

	/* 0 when out matches exp; otherwise non-zero with a one-line reason
	 * in msg (first bad element, values, tolerance). */
	int (*check)(const void *params, const void *exp, const void *out,
		     char *msg, size_t msg_size);

	/* Minimum bytes moved and operations per call (for GB/s, GFLOP/s and
	 * the physical floor). */
	void (*cost)(const void *params, struct kbh_cost *cost);

	struct kbh_cpu_limits limits;
};

/* Defined by the problem file. */
extern const struct kbh_cpu_problem kbh_cpu_problem_def;

/* The defaults a zero field of kbh_cpu_limits takes. */
void kbh_cpu_default_limits(struct kbh_cpu_limits *l);

/* Fills every zero field of l from the defaults. Pure. */
void kbh_cpu_limits_resolve(struct kbh_cpu_limits *l);

/* Last-level cache size in bytes: /sys (the cache index with the highest
 * level), else sysconf(_SC_LEVEL3_CACHE_SIZE), else 64 MiB, clamped by
 * kbh_cpu_llc_clamp. sysconf is the second choice because glibc reports
 * the whole package's L3 on some AMD parts (320 MiB on a VM whose cores
 * share 32 MiB). */
size_t kbh_cpu_llc_bytes(void);

/* A reported LLC size made usable for the flush: 64 MiB when unknown
 * (0), at least 1 MiB, at most KBH_CPU_LLC_CAP. Why a cap: virtual
 * machines report what the host package has or made up (300 MiB on this
 * project's 2-vCPU CI VM, 512 MiB on another), and a flush of twice that
 * before every timed call ran honest ranked jobs into the watchdog; no
 * core's slice of a shipping LLC holds more, and the slot's own arrays
 * are evicted line by line anyway (clflush). Pure. */
#define KBH_CPU_LLC_CAP ((size_t)128 << 20)
size_t kbh_cpu_llc_clamp(size_t reported);

/* The watchdog (s) for a run of ncases cases in mode m whose samples
 * cost sample_ns each beyond the call (the flush): the limit's own
 * watchdog_s, or more where the run's budget needs it -- per case its
 * warm-up time, its time cap and (warmup_runs + min_runs) samples' cost,
 * doubled, plus 30 s. Pure. */
unsigned kbh_cpu_watchdog_s(const struct kbh_cpu_limits *l, enum kbh_mode m,
			    size_t ncases, double sample_ns);

/* Generous physical ceilings of this machine (see harness_cpu.c). */
void kbh_cpu_peak(struct kbh_peak *p, double measured_read_bytes_per_s);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif
