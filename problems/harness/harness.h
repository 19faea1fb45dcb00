/* harness.h: the device-independent half of our problem harnesses.
 *
 * A harness is compiled into the same executable as the user's submission
 * (eval.out), so everything here is written to be robust against the code it
 * measures: no global names that a submission might plausibly define (every
 * symbol starts with kbh_), hidden visibility, and the libc functions that
 * measurement and validation depend on (clock_gettime, memcpy, memset,
 * write) are called through pointers resolved from libc itself at start-up,
 * so a submission that defines its own clock_gettime or memcmp changes
 * nothing (see kbh_trusted_init).
 *
 * Modules (all prefixed kbh_):
 *   modes and exit codes      kbh_mode_*, KBH_EXIT_*
 *   trusted libc + timer      kbh_trusted_init, kbh_now_ns, kbh_copy, kbh_fill
 *   watchdog                  kbh_watchdog_arm (exit 114 on expiry)
 *   cases file                kbh_case_*, kbh_cases_*
 *   seeded PRNG               kbh_rng_* (xoshiro256** seeded by splitmix64),
 *                             kbh_hash_u64 (counter-based, usable on device)
 *   report writer             kbh_report_* (POPCORN_FD, strict key order)
 *   running statistics        kbh_stats_*
 *   stopping rule             kbh_stop_*
 *   cost model, floor         kbh_cost_*, struct kbh_peak
 *   comparisons               kbh_compare_f32, kbh_first_diff, kbh_poison
 *
 * Conventions: functions return 0 or a negative errno value; calls that can
 * fail for a reason worth telling take (char *err, size_t err_size) and
 * write a one-line message there. Nothing here allocates behind the
 * caller's back except kbh_cases_load and kbh_report_open (freed by their
 * _free/_close). Thread-safety: the PRNG, stats, stop rule, cost and
 * comparison functions are pure (re-entrant on distinct objects); the
 * trusted-libc table is written once by kbh_trusted_init and read-only
 * after; a kbh_report must be used by one thread at a time.
 *
 * The header is C17 and also valid C++ (extern "C"), so a .cu file can
 * include it; kbh_hash_u64 and kbh_hash_unitf are inline and marked
 * __host__ __device__ under nvcc and hipcc.
 */
#ifndef KBH_HARNESS_H
#define KBH_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#define KBH_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define KBH_PRINTF(a, b)
#endif

#if defined(__CUDACC__) || defined(__HIP__)
#define KBH_HD __host__ __device__
#else
#define KBH_HD
#endif

/* ---- exit codes (upstream KernelBot protocol) --------------------------- */

enum {
	KBH_EXIT_OK = 0,
	KBH_EXIT_USAGE = 2,      /* wrong arguments, unknown mode */
	KBH_EXIT_DEVICE = 110,   /* device / runtime API error (our fault) */
	KBH_EXIT_NO_FD = 111,    /* POPCORN_FD unset, invalid or unwritable */
	KBH_EXIT_FAILED = 112,   /* a test or a correctness re-check failed */
	KBH_EXIT_BAD_SPEC = 113, /* cases file missing or malformed */
	KBH_EXIT_TIMEOUT = 114,  /* the harness's own watchdog fired */
	KBH_EXIT_CRASHED = 115,  /* the submission's process died or exited
				  * during a call (harnesses that run it in
				  * a child process: guard.h); the report
				  * says how, with check: fail */
};

/* ---- modes -------------------------------------------------------------- */

enum kbh_mode {
	KBH_MODE_TEST,
	KBH_MODE_BENCHMARK,
	KBH_MODE_PROFILE,
	KBH_MODE_LEADERBOARD,
	KBH_MODE_COUNT
};

/* "test", "benchmark", "profile", "leaderboard" -> *out. 0 or -EINVAL. */
int kbh_mode_parse(const char *s, enum kbh_mode *out);
/* The name, or "?" when out of range. */
const char *kbh_mode_name(enum kbh_mode m);

/* ---- trusted libc and the clock ----------------------------------------- */

/* Resolves clock_gettime, memcpy, memset and write from the already-loaded
 * libc (dlopen RTLD_NOLOAD + dlsym), not through the executable's symbol
 * binding, so definitions of those names in the submission are bypassed.
 * Falls back to the directly linked functions when libc cannot be opened
 * (static build); kbh_trusted_direct() then returns 1. Call once, before
 * any other kbh_ function, from main. Returns 0, or -ENOSYS with err set if
 * CLOCK_MONOTONIC does not work. */
int kbh_trusted_init(char *err, size_t err_size);
int kbh_trusted_direct(void);

/* CLOCK_MONOTONIC in nanoseconds, through the trusted pointer. */
uint64_t kbh_now_ns(void);

/* memcpy / memset through the trusted pointers. */
void kbh_copy(void *dst, const void *src, size_t n);
void kbh_fill(void *dst, int byte, size_t n);

/* Fills with 0xFF bytes: a NaN for every float and double element, so an
 * output the submission never writes fails every tolerance check. */
void kbh_poison(void *dst, size_t n);

/* Index of the first differing byte of a and b, or n if equal. A plain
 * loop, not memcmp, so it cannot be interposed. */
size_t kbh_first_diff(const void *a, const void *b, size_t n);

/* Square root without libm (the worker links eval.out with plain
 * `cc ... -fopenmp`, no -lm; a sqrt call would not link): Newton's method
 * from a bit-level first guess, accurate to ~1 ulp. sqrt(<0) and NaN give
 * NaN, +inf gives +inf. Problems should use it (and fabs/isfinite, which
 * are builtins) rather than <math.h> functions that need libm. */
double kbh_sqrt(double x);

/* ---- watchdog ----------------------------------------------------------- */

/* After `seconds` (> 0) of wall time the process exits with 114 from a
 * SIGALRM handler (async-signal-safe: a fixed message on fd 2, then
 * _exit). seconds == 0 disarms. Re-arming replaces the previous timer. */
void kbh_watchdog_arm(unsigned seconds);

/* ---- cases -------------------------------------------------------------- */

#define KBH_SPEC_MAX 512 /* longest case line */
#define KBH_KEY_MAX 32
#define KBH_VALUE_MAX 64
#define KBH_CASE_KEYS 16

struct kbh_kv {
	char key[KBH_KEY_MAX];
	char value[KBH_VALUE_MAX];
};

struct kbh_case {
	char spec[KBH_SPEC_MAX]; /* the line, trimmed: reported as *.spec */
	size_t n;
	struct kbh_kv kv[KBH_CASE_KEYS];
};

struct kbh_cases {
	struct kbh_case *v; /* malloc'd, owned */
	size_t n;
};

/* Parses "k: v; k: v". Keys [A-Za-z0-9_]+, unique; values non-empty,
 * without ';'; surrounding blanks trimmed. 0 or -EINVAL with err set. */
int kbh_case_parse(const char *line, struct kbh_case *out, char *err,
		   size_t err_size);

/* Value of key, or NULL. */
const char *kbh_case_get(const struct kbh_case *c, const char *key);

/* Strict unsigned decimal value of key within [lo, hi]. Returns 0, -ENOENT
 * (missing), -EINVAL (not a number) or -ERANGE, with err naming the key. */
int kbh_case_u64(const struct kbh_case *c, const char *key, uint64_t lo,
		 uint64_t hi, uint64_t *out, char *err, size_t err_size);

/* 0 if every key of c is in the NULL-terminated list allowed, else -EINVAL
 * naming the first unknown key. */
int kbh_case_keys_only(const struct kbh_case *c, const char *const *allowed,
		       char *err, size_t err_size);

/* Reads a cases file: one case per line; blank lines and lines starting with
 * '#' are skipped; CRLF accepted. An unreadable file, a bad line or no case
 * at all is an error (-ENOENT/-EIO/-EINVAL, err says which line). On success
 * out->v is malloc'd; release with kbh_cases_free (NULL-safe). */
int kbh_cases_load(const char *path, struct kbh_cases *out, char *err,
		   size_t err_size);
void kbh_cases_free(struct kbh_cases *cs);

/* The worker asks (environment KBH_CASES_UNLINK=1) that the cases file be
 * removed once loaded, so that code running later in the run (the
 * submission) cannot read the seeds from it. Call right after
 * kbh_cases_load, before any user code can run. Removes the variable from
 * the environment either way. Returns 1 when the file was unlinked, 0
 * when not asked, or -errno (the unlink failed: the caller decides; the
 * CUDA driver warns on stderr and goes on, since per-run random seeds
 * already keep timed inputs unpredictable). Without the variable nothing
 * is removed, so scripts can reuse a cases file. */
#define KBH_CASES_UNLINK_ENV "KBH_CASES_UNLINK"
int kbh_cases_consume(const char *path);

/* ---- pseudo-random numbers ---------------------------------------------- */

/* xoshiro256** (Blackman & Vigna), state expanded from a 64-bit seed with
 * splitmix64, so every seed (0 included) gives a good stream. */
struct kbh_rng {
	uint64_t s[4];
};

void kbh_rng_seed(struct kbh_rng *r, uint64_t seed);
uint64_t kbh_rng_u64(struct kbh_rng *r);
/* Uniform in [0, n), unbiased (Lemire's method); n > 0. */
uint64_t kbh_rng_below(struct kbh_rng *r, uint64_t n);
/* Uniform in [0, 1): 53 random bits for double, 24 for float. */
double kbh_rng_unit(struct kbh_rng *r);
float kbh_rng_unitf(struct kbh_rng *r);
/* Uniform float in [lo, hi). */
float kbh_rng_uniformf(struct kbh_rng *r, float lo, float hi);

/* One splitmix64 step: advances *state, returns the next output. */
uint64_t kbh_splitmix64(uint64_t *state);

/* Derives an independent seed for (stream, index) from a case seed, e.g.
 * the k-th input set or the i-th timed call. Different (stream, index)
 * pairs give unrelated seeds. */
uint64_t kbh_seed_derive(uint64_t seed, uint64_t stream, uint64_t index);

/* 64 bits from the kernel's CSPRNG (getrandom(2), or /dev/urandom where
 * the call is missing), for per-run randomness a submission cannot
 * predict: harnesses draw it at start-up and mix it into the seeds of
 * timed calls (the case seed still fixes shapes and the first, reproducible
 * check). Returns 0, or -errno with *out untouched. */
int kbh_seed_random(uint64_t *out);

/* Counter-based generator: a strong 64-bit mix of (key, counter), so
 * element i of an array can be generated independently (OpenMP, or a GPU
 * thread per element) and still be reproducible. */
static inline KBH_HD uint64_t kbh_hash_u64(uint64_t key, uint64_t ctr)
{
	uint64_t z = key + (ctr + 1) * 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	/* second round: keys that differ in few bits must not give
	 * correlated streams */
	z = (z ^ (z >> 32)) * 0xd6e8feb86659fd93ull;
	return z ^ (z >> 32);
}

/* Uniform float in [0, 1) from kbh_hash_u64 (24 bits). */
static inline KBH_HD float kbh_hash_unitf(uint64_t key, uint64_t ctr)
{
	return (float)(kbh_hash_u64(key, ctr) >> 40) * (1.0f / 16777216.0f);
}

/* ---- report writer ------------------------------------------------------ */

/* Writes "key: value\n" lines to the report fd, enforcing the protocol's
 * order so a harness bug cannot produce a report the worker rejects:
 *   - test-count before any test.<i>.*, benchmark-count before any
 *     benchmark.<i>.*; each count at most once;
 *   - indices start at 0, never go back, never skip, stay below the count;
 *   - a key is never written twice (per index for test/benchmark keys);
 *   - keys match [A-Za-z0-9_.-]+; values have newlines replaced by spaces
 *     and are truncated to KBH_REPORT_VALUE_MAX bytes.
 * A violation returns -EPROTO and writes nothing. Each line is a single
 * write() (retried on EINTR and partial writes), so a watchdog exit never
 * tears a line. A write error returns -EIO and marks the report broken
 * (kbh_report_ok() == 0); later calls fail fast. */

#define KBH_REPORT_VALUE_MAX 1024

struct kbh_report;

/* From the environment: POPCORN_FD must be a decimal fd that is open for
 * writing. Marks it close-on-exec and removes POPCORN_FD from the
 * environment (the submission has no business with it). Returns 0, or
 * -ENOENT (unset) / -EBADF (bad or closed fd) / -ENOMEM; main maps any
 * error to exit 111. */
int kbh_report_open_env(struct kbh_report **out, char *err, size_t err_size);
/* On an fd the caller owns (tests). */
int kbh_report_open_fd(struct kbh_report **out, int fd);
/* Lines go to fn(ctx, line, len) instead of an fd: one call per complete
 * line ("key: value\n", len <= KBH_REPORT_VALUE_MAX + 128), after the
 * order checks. fn returns 0, or nonzero to mark the report broken (the
 * call then returns -EIO). For a harness that passes its report on to
 * another process (the CUDA driver's relay). 0 or -ENOMEM. */
typedef int (*kbh_report_sink_fn)(void *ctx, const char *line, size_t len);
int kbh_report_open_sink(struct kbh_report **out, kbh_report_sink_fn fn,
			 void *ctx);
/* Frees the writer; does not close the fd. NULL-safe. */
void kbh_report_close(struct kbh_report *r);
int kbh_report_ok(const struct kbh_report *r);

/* The submission's entry point (guard.h, kbh_guard_load): set in the
 * child, the only process that loads the submission; NULL in the parent.
 * KBH_ENTRY(custom_kernel)(args...) calls it with the type of the
 * problem's declaration of custom_kernel, which gives only the type: the
 * harness is linked without the submission. */
extern void *kbh_guard_entry;
#define KBH_ENTRY(decl) ((__typeof__(&(decl)))kbh_guard_entry)
/* The environment variable naming the submission's shared object, and
 * the symbol it must define. */
#define KBH_SUBMISSION_ENV "KBH_SUBMISSION"
#define KBH_SUBMISSION_SYMBOL "custom_kernel"

/* "user-code: started": written by a harness right before the first call
 * of user code (custom_kernel), once. The worker takes an exit status the
 * harness reserves for its own errors (2, 110, 111, 113) as the
 * submission's doing when this line came before it (the submission shares
 * the process and can exit with any status). 0, or as kbh_report_kv. */
#define KBH_REPORT_USER_KEY "user-code"
#define KBH_REPORT_USER_STARTED "started"
int kbh_report_user_started(struct kbh_report *r);

/* A top-level key such as "check". */
int kbh_report_kv(struct kbh_report *r, const char *key, const char *fmt, ...)
	KBH_PRINTF(3, 4);
/* "test-count" / "benchmark-count". */
int kbh_report_test_count(struct kbh_report *r, size_t n);
int kbh_report_bench_count(struct kbh_report *r, size_t n);
/* "test.<i>.<sub>" / "benchmark.<i>.<sub>". */
int kbh_report_test(struct kbh_report *r, size_t i, const char *sub,
		    const char *fmt, ...) KBH_PRINTF(4, 5);
int kbh_report_bench(struct kbh_report *r, size_t i, const char *sub,
		     const char *fmt, ...) KBH_PRINTF(4, 5);

/* ---- running statistics ------------------------------------------------- */

/* Welford's online mean and variance; values in any unit (we use ns). */
struct kbh_stats {
	uint64_t n;
	double mean;
	double m2; /* sum of squared deviations from the mean */
	double best;
	double worst;
	double total;
};

void kbh_stats_init(struct kbh_stats *s);
void kbh_stats_add(struct kbh_stats *s, double x);
/* Sample standard deviation (n - 1); 0 when n < 2. */
double kbh_stats_std(const struct kbh_stats *s);
/* Standard error of the mean, std / sqrt(n); 0 when n < 2. */
double kbh_stats_err(const struct kbh_stats *s);
/* err / mean; +inf when n < 2 or mean <= 0 (never "converged"). */
double kbh_stats_rel_err(const struct kbh_stats *s);

/* Writes benchmark.<i>.{runs,mean,std,err,best,worst} in that order. */
int kbh_report_stats(struct kbh_report *r, size_t i, const struct kbh_stats *s);

/* ---- stopping rule ------------------------------------------------------ */

struct kbh_stop_rule {
	double rel_err;    /* stop once err/mean is below this (0.001) ... */
	uint32_t min_runs; /* ... and at least this many samples exist */
	uint32_t max_runs; /* never take more samples than this */
	uint64_t max_ns;   /* wall-time cap for one case's timed phase */
};

enum kbh_stop {
	KBH_STOP_CONTINUE = 0,
	KBH_STOP_CONVERGED, /* rel_err reached with >= min_runs samples */
	KBH_STOP_MAX_RUNS,  /* max_runs samples taken */
	KBH_STOP_TIME,      /* elapsed >= max_ns with >= 2 samples (even
			     * below min_runs: the cap protects the task's
			     * timeout; 2 so that std and err exist) */
};

/* Decides after each sample. elapsed_ns is the wall time since the timed
 * phase began (overheads included, as they count against timeouts).
 * Precedence: converged, then max runs, then time. Pure. */
enum kbh_stop kbh_stop_check(const struct kbh_stop_rule *rule,
			     const struct kbh_stats *s, uint64_t elapsed_ns);
/* "continue", "converged", "max-runs", "time-cap". */
const char *kbh_stop_name(enum kbh_stop st);

/* ---- cost model and physical floor -------------------------------------- */

/* What one call must do at minimum, declared by the problem: bytes that must
 * cross the memory interface (inputs read once, outputs written once; the
 * caches are flushed before each sample so they come from memory) and
 * arithmetic operations (flops, counting an FMA as 2). Either may be 0. */
struct kbh_cost {
	double bytes;
	double flops;
};

/* Physical ceilings of the device; 0 means unknown (that bound is skipped).
 * They should be generous (true peak or above), because a floor derived
 * from them flags results as impossible. */
struct kbh_peak {
	double bytes_per_s;
	double flops_per_s;
};

/* The fastest time the laws of the device allow: max(bytes / bandwidth,
 * flops / peak) in ns; 0 when nothing is known. Pure. */
double kbh_cost_floor_ns(const struct kbh_cost *c, const struct kbh_peak *p);

/* 1 when a measured time (ns) is below the floor: the sample cannot have
 * done the declared work (cached results, skipped work, a broken clock).
 * We test the best sample, not the mean: a single impossible sample is
 * already evidence. 0 when the floor is unknown. Pure. */
int kbh_cost_suspect(const struct kbh_cost *c, const struct kbh_peak *p,
		     double time_ns);

/* Achieved rates for a time in ns: GB/s (1e9 bytes/s) and GFLOP/s. */
double kbh_cost_gbps(const struct kbh_cost *c, double time_ns);
double kbh_cost_gflops(const struct kbh_cost *c, double time_ns);

/* Writes the cost keys of benchmark <i> for mean time mean_ns:
 * bytes, flops (when non-zero), gbps, gflops (when non-zero), floor_ns
 * (when known). Does not write status; the caller decides. */
int kbh_report_cost(struct kbh_report *r, size_t i, const struct kbh_cost *c,
		    const struct kbh_peak *p, double mean_ns);

/* ---- comparisons -------------------------------------------------------- */

struct kbh_mismatch {
	size_t count; /* elements outside tolerance (NaN/Inf included) */
	size_t index; /* the first one */
	double got, want, tol;
};

/* Compares got[i] against want[i] with |got - want| <= atol + rtol*|want|;
 * a non-finite got always fails. Returns the mismatch count (also in
 * m->count; m may be NULL). */
size_t kbh_compare_f32(const float *got, const float *want, size_t n,
		       double rtol, double atol, struct kbh_mismatch *m);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif
