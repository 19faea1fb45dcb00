/* kbg.h: the GPU timing driver's interface to a problem (C ABI).
 *
 * A CUDA problem is one file, reference.cu, that defines
 *
 *     KBG_PROBLEM_DEF = { ... };
 *
 * and is linked with the driver (kbg_main.cu, kbg_child.cpp,
 * kbg_parent.cpp, kbg_case.cpp, kbg_dev.cu, kbg_model.c, kbg_sys.c), the
 * shared host harness (harness.c) and the sealed submission into
 * eval.out:
 *
 *     POPCORN_FD=3 ./eval.out test|benchmark|profile|leaderboard cases.txt
 *
 * The problem supplies only: its case keys, buffer sizes, a seeded device
 * generator, a device reference, a checker, the cost model, and `call`,
 * the one line that invokes the submission's custom_kernel. The driver
 * owns memory, staging, L2 flushes, timing, the stopping rule, the report
 * and the exit code (README.md tells how each measurement rule is met).
 *
 * Streams: every hook enqueues its work on the legacy default stream
 * (stream 0 in code compiled without --default-stream per-thread) and may
 * return before it finishes; the driver synchronises. Hooks return 0 or a
 * negative value; a CUDA error is picked up by the driver itself.
 *
 * Buffers: hooks get arrays of device pointers, in the order the layout
 * declares them, each from its own cudaMalloc (256-byte aligned; the work
 * slots call gets, 2 MiB aligned).
 *
 * Processes: `call` runs in the untrusted child process, which has its
 * own CUDA context and sees only the work slots (CUDA IPC mappings);
 * every other hook runs in the trusted parent, which never calls user
 * code (README.md, "The process split").
 *
 * Thread-safety: single-threaded driver.
 */
#ifndef KBG_H
#define KBG_H

#include <stddef.h>
#include <stdint.h>

#include "harness.h"
#include "kbg_model.h"
#ifdef __cplusplus
#include "kbg_api.h" /* the device API: CUDA, or HIP under hipcc */
#endif

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

#define KBG_MAX_BUFS 4

/* Sizes and properties of one case, filled in by setup. */
struct kbg_layout {
	int n_in;                       /* 1..KBG_MAX_BUFS inputs */
	size_t in_bytes[KBG_MAX_BUFS];  /* each > 0 */
	int n_out;                      /* 1..KBG_MAX_BUFS outputs */
	size_t out_bytes[KBG_MAX_BUFS]; /* each > 0 */
	size_t exp_bytes;               /* > 0: what reference writes for
					   * check (any form: values,
					   * tolerances, hashes) */
	size_t scratch_bytes;           /* device scratch for reference and
					   * check (0 = none) */
	/* The cost model: minimal bytes through DRAM and nominal flops of one
	 * call, which unit bounds the flops, and the fraction of the nominal
	 * flops the fastest known algorithm still needs (1 plain; 0 no flops
	 * bound). See kbg_model.h. */
	struct kbh_cost cost;
	enum kbg_ops ops;
	double min_work;
	/* 1: every call gets newly generated data (generate before each
	 * call, generate again + reference after it; for problems whose
	 * reference costs about as much as a pass over the data). 0: `sets`
	 * data sets are made once per case and each call draws one at random
	 * (for costly references); their expected results wait in host
	 * memory and are copied back after each call (exp_bytes over PCIe
	 * per checked call, outside the timing). */
	int fresh;
	int sets; /* 1..8; 0 = 4 */
};

struct kbg_problem {
	const char *name;
	size_t params_size; /* <= KBG_PARAMS_MAX */
	/* NULL-terminated case keys of the problem; the driver adds seed
	 * (required), min_runs, max_runs and max_ms. */
	const char *const *keys;

	/* Parses the case into params, fills the layout. 0 or -EINVAL with
	 * err set (the run exits 113). Host only. */
	int (*setup)(const struct kbh_case *c, void *params,
		     struct kbg_layout *lay, char *err, size_t err_size);

	/* Fills the inputs on the device from seed (deterministic). */
	int (*generate)(const void *params, uint64_t seed, void *const in[]);

	/* Computes the expected result of in into exp. Runs only after the
	 * submission's call has ended (the expected result never exists on
	 * the device while user code runs), on inputs regenerated from the
	 * seed (fresh data), or once per data set (then exp is moved to host
	 * memory). exp and scratch are zeroed after every check. */
	int (*reference)(const void *params, const void *const in[], void *exp,
			 void *scratch);

	/* Compares the submission's outputs with exp (in are the pristine
	 * inputs). Returns 0 when they match, 1 when not (with a one-line
	 * reason in msg: first bad element, values, tolerance), negative on
	 * error. May synchronise (it reads results back). */
	int (*check)(const void *params, const void *const in[],
		     const void *const out[], const void *exp, void *scratch,
		     char *msg, size_t msg_size);

	/* Calls the submission's custom_kernel. The only timed hook, and the
	 * only one run in the child process. */
	void (*call)(const void *params, void *const in[], void *const out[]);
};

#define KBG_PARAMS_MAX 256

/* Defined by the problem's reference.cu as `KBG_PROBLEM_DEF = {...};`.
 * Not const under hipcc: clang (15) emits an externally visible const
 * variable into the device code object too, where the host hooks it
 * points to do not exist (an undefined-symbol link error). */
#if defined(__HIP__)
#define KBG_PROBLEM_CONST
#else
#define KBG_PROBLEM_CONST const
#endif
#define KBG_PROBLEM_DEF                                                        \
	extern "C" KBG_PROBLEM_CONST struct kbg_problem kbg_problem_def
extern KBG_PROBLEM_CONST struct kbg_problem kbg_problem_def;

/* ---- device helpers for problems (kbg_dev.cu) ---------------------------
 * All enqueue on the legacy default stream; the compare helpers then
 * synchronise and read the result back. Elements are generated from
 * kbh_hash_u64(seed, index), so a buffer is a pure function of (seed, n)
 * whatever the grid. */

/* Uniform float in [lo, hi). */
int kbg_gen_f32(float *p, size_t n, uint64_t seed, float lo, float hi);
/* Uniform float in [lo, hi), rounded to fp16 (stored as uint16 bits). */
int kbg_gen_f16(void *p, size_t n, uint64_t seed, float lo, float hi);
/* Uniform random bytes. */
int kbg_gen_bytes(void *p, size_t n, uint64_t seed);

/* |got - want| <= atol + rtol * s with s = scale[i] (scale may be NULL:
 * s = |want[i]|); a non-finite got fails. Fills m (count, first index,
 * values and tolerance there). 0, or a negative CUDA error. */
int kbg_close_f32(const float *got, const float *want, const float *scale,
		  size_t n, double rtol, double atol, struct kbh_mismatch *m);
/* The same for fp16 got (uint16 bits) against float want. */
int kbg_close_f16(const void *got, const float *want, size_t n, double rtol,
		  double atol, struct kbh_mismatch *m);
/* Bitwise equality of n 32-bit words (m->index in words, got/want the
 * words as numbers). */
int kbg_equal_u32(const uint32_t *got, const uint32_t *want, size_t n,
		  struct kbh_mismatch *m);
/* Bitwise equality of n bytes; *first = first differing byte, or n. */
int kbg_equal_bytes(const void *a, const void *b, size_t n, size_t *first);

/* Launch shape for a grid-stride loop over n elements: at most 8 blocks of
 * 256 threads per SM, at least 1. */
unsigned kbg_grid(size_t n);

/* Formats a kbh_mismatch as a one-line message. */
void kbg_mismatch_msg(const struct kbh_mismatch *m, const char *what, char *msg,
		      size_t msg_size);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif
