/* harness_cpu.c: main() of a CPU problem's eval.out.
 *
 * Theory of operation
 * -------------------
 * ./eval.out <mode> <cases>: parse the mode (else exit 2), open the report
 * on POPCORN_FD (else 111), load every case and run the problem's setup on
 * each before anything executes (else 113), arm the watchdog (114).
 *
 * Memory. Each case gets three kinds of mapping:
 *   - pristine: the base input sets (generated up front from seeds derived
 *     from the case seed, so generation is never timed) and a staging set;
 *     the submission is never given a pointer into it;
 *   - secret: the expected results, computed by the harness. While the
 *     submission runs it is mprotect'ed PROT_NONE, so the submission can
 *     neither read nor overwrite them -- it faults instead. (Only the
 *     expected results are locked: mprotect costs per page, and locking
 *     hundreds of MiB of inputs around every call cost more than the call.)
 *   - work slots: the only memory the submission is given. Every array is
 *     its own mapping, 64-byte aligned and ending right before a PROT_NONE
 *     guard page, so a read or write past the end faults. Calls rotate
 *     through the slots, so consecutive calls see different addresses.
 *   Large private mappings ask for transparent huge pages (fewer TLB misses
 *   while staging; cheaper mprotect).
 *
 * One call (untimed unless said otherwise):
 *   1. stage: pick base set (call % nsets); if the problem has a vary hook,
 *      derive a fresh variant of it into the staging set (new data, every
 *      call, with its expected result derived cheaply); copy the inputs
 *      into the slot (call % nslots); fill the output with 0xFF (NaN).
 *   2. lock the secret region (PROT_NONE).
 *   3. flush (timed modes only): read over a buffer of 2x the last-level
 *      cache (on all OpenMP threads, so every core's private caches are
 *      flushed too), then clflush(opt) every line of the slot's arrays, so the
 *      submission starts cold (its inputs are guaranteed out of every
 *      cache level, everything else very likely).
 *   4. TIMED: t0 = now; custom_kernel (via the problem's call hook);
 *      t1 = now. now() is clock_gettime(CLOCK_MONOTONIC) through a pointer
 *      resolved from libc at start (harness.c), so a submission defining
 *      clock_gettime cannot touch it.
 *   5. unlock; verify: every input byte must equal the staged copy (a
 *      submission that mutates its input fails), then the problem's check
 *      compares the output with the expected result. Every call is checked,
 *      in every mode, timed or not.
 *
 * Modes:
 *   test: each case once (base set, no vary, no flush), status per case.
 *   benchmark / profile / leaderboard: per case a quick correctness check
 *      (one call), warm-up calls, then timed calls until the stopping rule
 *      (relative standard error < rel_err with >= min_runs samples, or
 *      max_runs, or the time cap) says stop. Reports runs, mean, std, err,
 *      best, worst (ns), then stop, warmup, cost keys (gbps/gflops,
 *      floor_ns) and, when the best sample beats the physical floor,
 *      status: suspect. The modes differ only in their limits.
 *   A failed check anywhere: status fail + error for that case, check: fail
 *   and exit 112.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include "harness_cpu.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#pragma GCC visibility push(hidden)

/* Seed streams (kbh_seed_derive): base sets and per-call variants. */
#define KBH__STREAM_SET 1
#define KBH__STREAM_CALL 2

#define KBH__MIB (1024.0 * 1024.0)

/* ---- limits ------------------------------------------------------------- */

void kbh_cpu_default_limits(struct kbh_cpu_limits *l)
{
	kbh_fill(l, 0, sizeof *l);
	/* The time caps (per case, timed phase) keep a ranked run (test +
	 * leaderboard + private) of three cases within a few seconds on a
	 * 2-core machine; the watchdog sits inside the 60 s timeouts our
	 * task.yml files declare, so a hang ends as exit 114 with the report
	 * so far, not as a kill from outside. */
	l->stop[KBH_MODE_TEST] = (struct kbh_stop_rule){0.001, 1, 1, 0};
	l->stop[KBH_MODE_BENCHMARK] =
		(struct kbh_stop_rule){0.001, 10, 10000, 400000000ull};
	l->stop[KBH_MODE_PROFILE] =
		(struct kbh_stop_rule){0.01, 3, 20, 200000000ull};
	l->stop[KBH_MODE_LEADERBOARD] =
		(struct kbh_stop_rule){0.001, 10, 10000, 300000000ull};
	for (int m = 0; m < KBH_MODE_COUNT; m++)
		l->watchdog_s[m] = 50;
	l->warmup_runs = 3;
	l->warmup_ns = 20000000ull;
}

void kbh_cpu_limits_resolve(struct kbh_cpu_limits *l)
{
	struct kbh_cpu_limits d;
	kbh_cpu_default_limits(&d);
	for (int m = 0; m < KBH_MODE_COUNT; m++) {
		struct kbh_stop_rule *s = &l->stop[m];
		if (s->rel_err <= 0)
			s->rel_err = d.stop[m].rel_err;
		if (!s->min_runs)
			s->min_runs = d.stop[m].min_runs;
		if (!s->max_runs)
			s->max_runs = d.stop[m].max_runs;
		if (!s->max_ns)
			s->max_ns = d.stop[m].max_ns;
		if (!l->watchdog_s[m])
			l->watchdog_s[m] = d.watchdog_s[m];
	}
	if (!l->warmup_runs)
		l->warmup_runs = d.warmup_runs;
	if (!l->warmup_ns)
		l->warmup_ns = d.warmup_ns;
}

/* ---- machine facts ------------------------------------------------------ */

/* Reads a small text file into buf; 0 on success. */
static int kbh__read_small(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[n] = '\0';
	return n ? 0 : -1;
}

/* "32768K", "8M", "1048576" -> bytes; 0 if unparsable. */
static size_t kbh__parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (end == s)
		return 0;
	if (*end == 'K' || *end == 'k')
		v *= 1024ull;
	else if (*end == 'M' || *end == 'm')
		v *= 1024ull * 1024ull;
	else if (*end == 'G' || *end == 'g')
		v *= 1024ull * 1024ull * 1024ull;
	return (size_t)v;
}

size_t kbh_cpu_llc_bytes(void)
{
	size_t best = 0;
	int best_level = 0;
	for (int idx = 0; idx < 16; idx++) {
		char path[128], buf[64];
		snprintf(path, sizeof path,
			 "/sys/devices/system/cpu/cpu0/cache/index%d/level",
			 idx);
		if (kbh__read_small(path, buf, sizeof buf))
			break;
		int level = atoi(buf);
		snprintf(path, sizeof path,
			 "/sys/devices/system/cpu/cpu0/cache/index%d/type",
			 idx);
		if (kbh__read_small(path, buf, sizeof buf) ||
		    strncmp(buf, "Instruction", 11) == 0)
			continue;
		snprintf(path, sizeof path,
			 "/sys/devices/system/cpu/cpu0/cache/index%d/size",
			 idx);
		if (kbh__read_small(path, buf, sizeof buf))
			continue;
		size_t sz = kbh__parse_size(buf);
		if (sz && level >= best_level) {
			best_level = level;
			best = sz;
		}
	}
	if (best_level >= 2 && best)
		return best;
#ifdef _SC_LEVEL3_CACHE_SIZE
	long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
	if (l3 > 0)
		return (size_t)l3;
#endif
	return (size_t)64 << 20;
}

static unsigned kbh__ncpu(void)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned n = online > 0 ? (unsigned)online : 1;
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) == 0) {
		unsigned a = (unsigned)CPU_COUNT(&set);
		if (a > n)
			n = a;
	}
	return n;
}

/* Highest clock in Hz we can learn, or 0. */
static double kbh__max_hz(void)
{
	char buf[4096];
	if (!kbh__read_small(
		    "/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq",
		    buf, sizeof buf)) {
		double khz = atof(buf);
		if (khz > 0)
			return khz * 1e3;
	}
	/* No cpufreq (VMs): /proc/cpuinfo's current MHz, with room for a
	 * turbo clock we cannot see. */
	FILE *f = fopen("/proc/cpuinfo", "r");
	double mhz = 0;
	if (f) {
		while (fgets(buf, sizeof buf, f)) {
			double v;
			if (sscanf(buf, "cpu MHz : %lf", &v) == 1 && v > mhz)
				mhz = v;
		}
		fclose(f);
	}
	return mhz > 0 ? mhz * 1e6 * 1.5 : 0;
}

/* The ceilings are deliberately generous, so the floor only catches the
 * impossible:
 *   flops: every logical CPU at the highest clock we can find, 64 fp32
 *          flops per cycle (two 16-wide FMA pipes, AVX-512), no
 *          allowance for the shared-core penalty of SMT; 6 GHz when the
 *          clock is unknown.
 *   bytes: the caches are flushed, so declared bytes come from DRAM. We
 *          measure a single-threaded streaming read (kbh__measure_read)
 *          and allow every logical CPU four times that rate -- far above
 *          what the memory system delivers, but the measurement runs on
 *          whatever machine (and load) it gets, and a false "suspect" is
 *          worse than a loose floor: cached or skipped work is orders of
 *          magnitude below it anyway. At least 1 GB/s per CPU is
 *          assumed should the measurement fail. */
void kbh_cpu_peak(struct kbh_peak *p, double measured_read_bytes_per_s)
{
	unsigned ncpu = kbh__ncpu();
	double hz = kbh__max_hz();
	if (!(hz > 0))
		hz = 6e9;
	p->flops_per_s = (double)ncpu * hz * 64.0;
	double rd = measured_read_bytes_per_s > 1e9 ? measured_read_bytes_per_s
						    : 1e9;
	p->bytes_per_s = rd * 4.0 * ncpu;
}

/* ---- memory ------------------------------------------------------------- */

static size_t kbh__page(void)
{
	static size_t page;
	if (!page) {
		long p = sysconf(_SC_PAGESIZE);
		page = p > 0 ? (size_t)p : 4096;
	}
	return page;
}

static size_t kbh__round_up(size_t x, size_t a)
{
	return (x + a - 1) / a * a;
}

/* One array the submission sees: its own mapping, data ending right before
 * a PROT_NONE guard page. */
struct kbh__arr {
	unsigned char *map;
	size_t map_len;
	unsigned char *p;
	size_t bytes;
};

static int kbh__arr_alloc(struct kbh__arr *a, size_t bytes)
{
	size_t page = kbh__page();
	size_t data = kbh__round_up(bytes, 64);
	size_t data_pages = kbh__round_up(data, page);
	a->map_len = data_pages + page;
	a->map = mmap(NULL, a->map_len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a->map == MAP_FAILED) {
		a->map = NULL;
		return -ENOMEM;
	}
	if (mprotect(a->map + data_pages, page, PROT_NONE)) {
		munmap(a->map, a->map_len);
		a->map = NULL;
		return -errno;
	}
	a->p = a->map + data_pages - data;
	a->bytes = bytes;
	return 0;
}

static void kbh__arr_free(struct kbh__arr *a)
{
	if (a->map)
		munmap(a->map, a->map_len);
	a->map = NULL;
}

/* Private memory of the harness for one case (see the theory above). */
struct kbh__region {
	unsigned char *map;
	size_t len, used;
};

static int kbh__region_map(struct kbh__region *v, size_t len)
{
	v->used = 0;
	v->len = len;
	v->map = mmap(NULL, len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (v->map == MAP_FAILED) {
		v->map = NULL;
		return -ENOMEM;
	}
#ifdef MADV_HUGEPAGE
	if (len >= ((size_t)4 << 20))
		madvise(v->map, len, MADV_HUGEPAGE); /* a hint; may fail */
#endif
	return 0;
}

static void kbh__region_unmap(struct kbh__region *v)
{
	if (v->map)
		munmap(v->map, v->len);
	v->map = NULL;
}

static void *kbh__region_take(struct kbh__region *v, size_t bytes)
{
	void *p = v->map + v->used;
	v->used += kbh__round_up(bytes, kbh__page());
	return p;
}

static int kbh__region_protect(struct kbh__region *v, int prot)
{
	return mprotect(v->map, v->len, prot) ? -errno : 0;
}

/* ---- flushing ----------------------------------------------------------- */

static unsigned char *kbh__flushbuf;
static size_t kbh__flushlen;
static volatile uint64_t kbh__flush_sink;

static int kbh__flush_init(void)
{
	size_t len = 2 * kbh_cpu_llc_bytes();
	len = kbh__round_up(len, kbh__page());
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -ENOMEM;
	/* fault every page in now, with distinct data */
	uint64_t *w = p;
#pragma omp parallel for schedule(static)
	for (size_t i = 0; i < len / 8; i++)
		w[i] = i * 0x9e3779b97f4a7c15ull;
	kbh__flushbuf = p;
	kbh__flushlen = len;
	return 0;
}

/* A read of every line of the flush buffer: evicts (and writes back) what
 * the caches held, leaving them full of clean lines of no interest. Reads
 * rather than writes so the submission does not pay for our dirty lines.
 * Spread over the OpenMP threads (the harness is built with -fopenmp like
 * the submission): every core's private caches get flushed, not only
 * ours, and 2x a large LLC (300 MiB on some servers) is read in
 * milliseconds rather than tens of them. */
static void kbh__flush_pass(void)
{
	uint64_t s = 0;
	const unsigned char *b = kbh__flushbuf;
	const size_t n = kbh__flushlen;
#pragma omp parallel for schedule(static) reduction(+ : s)
	for (size_t i = 0; i < n; i += 64)
		s += *(const uint64_t *)(const void *)(b + i);
	kbh__flush_sink = s;
}

/* Evicts [p, p+n) from every cache level. */
static void kbh__evict(const void *p, size_t n)
{
	const char *c = (const char *)((uintptr_t)p & ~(uintptr_t)63);
	const char *end = (const char *)p + n;
#if defined(__x86_64__) || defined(__i386__)
	for (; c < end; c += 64) {
#if defined(__CLFLUSHOPT__)
		__builtin_ia32_clflushopt(c);
#else
		__builtin_ia32_clflush(c);
#endif
	}
	__builtin_ia32_mfence();
#elif defined(__aarch64__)
	for (; c < end; c += 64)
		__asm__ volatile("dc civac, %0" ::"r"(c) : "memory");
	__asm__ volatile("dsb ish" ::: "memory");
#else
	(void)c;
	(void)end;
#endif
}

/* Single-threaded streaming read rate (bytes/s), from the fastest 1 MiB
 * chunk over two passes of the flush buffer (after one pass to fault in
 * TLB entries). The fastest chunk, not the mean: on a loaded machine a
 * whole pass is slowed by preemption, and a low estimate here would put
 * the floor too high and flag honest results as suspect. */
static double kbh__measure_read(void)
{
	const size_t chunk = (size_t)1 << 20, len = kbh__flushlen;
	const uint64_t *w = (const uint64_t *)(void *)kbh__flushbuf;
	uint64_t best_ns = UINT64_MAX, s = 0;
	kbh__flush_pass();
	for (int pass = 0; pass < 2; pass++) {
		for (size_t off = 0; off + chunk <= len; off += chunk) {
			uint64_t t0 = kbh_now_ns();
			for (size_t i = off / 8; i < (off + chunk) / 8; i++)
				s += w[i];
			uint64_t dt = kbh_now_ns() - t0;
			if (dt && dt < best_ns)
				best_ns = dt;
		}
	}
	kbh__flush_sink = s;
	if (best_ns == UINT64_MAX)
		return 0;
	return (double)chunk / ((double)best_ns * 1e-9);
}

/* ---- one case ----------------------------------------------------------- */

#define KBH__MAX_SETS 4
#define KBH__MAX_SLOTS 3

struct kbh__ctx {
	const struct kbh_cpu_problem *p;
	void *params;
	struct kbh_cpu_layout lay;
	uint64_t seed;
	int nsets, nslots, staged;
	struct kbh__region pristine, secret;
	void *base_in[KBH__MAX_SETS][KBH_CPU_MAX_INPUTS];
	void *base_exp[KBH__MAX_SETS];
	void *stage_in[KBH_CPU_MAX_INPUTS];
	void *stage_exp;
	struct kbh__arr slot_in[KBH__MAX_SLOTS][KBH_CPU_MAX_INPUTS];
	struct kbh__arr slot_out[KBH__MAX_SLOTS];
	uint64_t next_call;
};

static void kbh__ctx_close(struct kbh__ctx *x)
{
	for (int s = 0; s < KBH__MAX_SLOTS; s++) {
		for (int k = 0; k < KBH_CPU_MAX_INPUTS; k++)
			kbh__arr_free(&x->slot_in[s][k]);
		kbh__arr_free(&x->slot_out[s]);
	}
	kbh__region_unmap(&x->pristine);
	kbh__region_unmap(&x->secret);
	free(x->params);
	kbh_fill(x, 0, sizeof *x);
}

/* Parses the case into x->params and x->lay; used both for the up-front
 * validation of every case and for opening one. */
static int kbh__ctx_setup(struct kbh__ctx *x, const struct kbh_cpu_problem *p,
			  const struct kbh_case *c, char *err, size_t err_size)
{
	kbh_fill(x, 0, sizeof *x);
	x->p = p;
	const char *keys[KBH_CASE_KEYS + 2];
	size_t nk = 0;
	keys[nk++] = "seed";
	for (size_t i = 0; p->keys && p->keys[i] && nk < KBH_CASE_KEYS + 1; i++)
		keys[nk++] = p->keys[i];
	keys[nk] = NULL;
	int rc = kbh_case_keys_only(c, keys, err, err_size);
	if (!rc)
		rc = kbh_case_u64(c, "seed", 0, UINT64_MAX, &x->seed, err,
				  err_size);
	if (rc)
		return -EINVAL;
	x->params = calloc(1, p->params_size ? p->params_size : 1);
	if (!x->params) {
		snprintf(err, err_size, "out of memory");
		return -ENOMEM;
	}
	rc = p->setup(c, x->params, &x->lay, err, err_size);
	if (rc)
		return -EINVAL;
	const struct kbh_cpu_layout *l = &x->lay;
	int ok = l->n_in >= 1 && l->n_in <= KBH_CPU_MAX_INPUTS &&
		 l->out_bytes > 0 && l->exp_bytes > 0;
	for (int k = 0; ok && k < l->n_in; k++)
		ok = l->in_bytes[k] > 0;
	if (!ok) {
		snprintf(err, err_size, "problem setup gave a bad layout");
		return -EINVAL;
	}
	return 0;
}

static size_t kbh__clamp(size_t v, size_t lo, size_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static size_t kbh__in_bytes(const struct kbh_cpu_layout *l)
{
	size_t page = kbh__page(), n = 0;
	for (int k = 0; k < l->n_in; k++)
		n += kbh__round_up(l->in_bytes[k], page);
	return n;
}

/* Allocates and fills everything for timed (or test) calls. want_sets and
 * want_slots are upper bounds; large cases get fewer. */
static int kbh__ctx_open(struct kbh__ctx *x, int want_sets, int want_slots,
			 int use_vary, char *err, size_t err_size)
{
	const struct kbh_cpu_layout *l = &x->lay;
	size_t in = kbh__in_bytes(l);
	size_t exp = kbh__round_up(l->exp_bytes, kbh__page());
	x->staged = use_vary && x->p->vary;
	/* With fresh variants per call two base sets are plenty; without,
	 * rotate through up to four. Keep the pristine sets under ~192 MiB
	 * and the slots under ~128 MiB. */
	size_t max_sets = x->staged ? 2 : (size_t)want_sets;
	if (max_sets > (size_t)want_sets)
		max_sets = (size_t)want_sets;
	x->nsets = (int)kbh__clamp((size_t)(192.0 * KBH__MIB) / (in + exp), 1,
				   max_sets);
	x->nslots = (int)kbh__clamp((size_t)(128.0 * KBH__MIB) / in, 1,
				    (size_t)want_slots);

	size_t nstore = (size_t)x->nsets + (x->staged ? 1 : 0);
	if (kbh__region_map(&x->pristine, in * nstore) ||
	    kbh__region_map(&x->secret, exp * nstore)) {
		snprintf(err, err_size, "mmap of %.1f MiB failed",
			 (double)((in + exp) * nstore) / KBH__MIB);
		return -ENOMEM;
	}
	for (int s = 0; s < x->nsets; s++) {
		for (int k = 0; k < l->n_in; k++)
			x->base_in[s][k] =
				kbh__region_take(&x->pristine, l->in_bytes[k]);
		x->base_exp[s] = kbh__region_take(&x->secret, l->exp_bytes);
	}
	if (x->staged) {
		for (int k = 0; k < l->n_in; k++)
			x->stage_in[k] =
				kbh__region_take(&x->pristine, l->in_bytes[k]);
		x->stage_exp = kbh__region_take(&x->secret, l->exp_bytes);
	}
	for (int s = 0; s < x->nslots; s++) {
		int rc = kbh__arr_alloc(&x->slot_out[s], l->out_bytes);
		for (int k = 0; !rc && k < l->n_in; k++)
			rc = kbh__arr_alloc(&x->slot_in[s][k], l->in_bytes[k]);
		if (rc) {
			snprintf(err, err_size, "mmap of a work buffer failed");
			return -ENOMEM;
		}
	}
	for (int s = 0; s < x->nsets; s++) {
		uint64_t seed =
			s == 0 ? x->seed
			       : kbh_seed_derive(x->seed, KBH__STREAM_SET,
						 (uint64_t)s);
		x->p->generate(x->params, seed, x->base_in[s]);
		x->p->reference(x->params, (const void *const *)x->base_in[s],
				x->base_exp[s]);
	}
	return 0;
}

/* Steps 1 of the theory: returns the slot index, and the pristine inputs
 * and expected result this call must be verified against. */
static int kbh__stage(struct kbh__ctx *x, void *const **src_in,
		      const void **src_exp)
{
	uint64_t call = x->next_call++;
	int set = (int)(call % (uint64_t)x->nsets);
	int slot = (int)(call % (uint64_t)x->nslots);
	const struct kbh_cpu_layout *l = &x->lay;
	if (x->staged) {
		x->p->vary(x->params,
			   kbh_seed_derive(x->seed, KBH__STREAM_CALL, call),
			   (const void *const *)x->base_in[set],
			   x->base_exp[set], x->stage_in, x->stage_exp);
		*src_in = x->stage_in;
		*src_exp = x->stage_exp;
	} else {
		*src_in = x->base_in[set];
		*src_exp = x->base_exp[set];
	}
	for (int k = 0; k < l->n_in; k++)
		kbh_copy(x->slot_in[slot][k].p, (*src_in)[k], l->in_bytes[k]);
	kbh_poison(x->slot_out[slot].p, l->out_bytes);
	return slot;
}

/* Steps 2-5. Returns 0 (pass), 1 (fail, msg set) or negative (our error,
 * msg set). *ns gets the timed duration. */
static int kbh__one_call(struct kbh__ctx *x, int flush, uint64_t *ns, char *msg,
			 size_t msg_size)
{
	void *const *src_in;
	const void *src_exp;
	int slot = kbh__stage(x, &src_in, &src_exp);
	const struct kbh_cpu_layout *l = &x->lay;
	void *in[KBH_CPU_MAX_INPUTS];
	for (int k = 0; k < l->n_in; k++)
		in[k] = x->slot_in[slot][k].p;
	void *out = x->slot_out[slot].p;

	if (kbh__region_protect(&x->secret, PROT_NONE)) {
		snprintf(msg, msg_size, "mprotect: %s", strerror(errno));
		return -EIO;
	}
	if (flush) {
		kbh__flush_pass();
		for (int k = 0; k < l->n_in; k++)
			kbh__evict(in[k], l->in_bytes[k]);
		kbh__evict(out, l->out_bytes);
	}
	__asm__ volatile("" ::: "memory");
	uint64_t t0 = kbh_now_ns();
	x->p->call(x->params, in, out);
	uint64_t t1 = kbh_now_ns();
	__asm__ volatile("" ::: "memory");
	*ns = t1 - t0;
	if (kbh__region_protect(&x->secret, PROT_READ | PROT_WRITE)) {
		snprintf(msg, msg_size, "mprotect: %s", strerror(errno));
		return -EIO;
	}

	for (int k = 0; k < l->n_in; k++) {
		size_t d = kbh_first_diff(in[k], src_in[k], l->in_bytes[k]);
		if (d != l->in_bytes[k]) {
			const char *name =
				x->p->in_names[k] ? x->p->in_names[k] : "?";
			snprintf(msg, msg_size,
				 "custom_kernel modified its input '%s' "
				 "(first changed byte at offset %zu of %zu); "
				 "inputs are read-only",
				 name, d, l->in_bytes[k]);
			return 1;
		}
	}
	return x->p->check(x->params, src_exp, out, msg, msg_size) ? 1 : 0;
}

/* ---- modes -------------------------------------------------------------- */

struct kbh__run {
	enum kbh_mode mode;
	const struct kbh_cpu_problem *p;
	struct kbh_cpu_limits lim;
	struct kbh_report *rep;
	struct kbh_cases cases;
	struct kbh_peak peak;
	int failed;
};

/* Report helpers: any report error ends the run with 111. */
#define KBH__REP(call)                                                         \
	do {                                                                   \
		if ((call) != 0) {                                             \
			fprintf(stderr, "harness: report write failed\n");     \
			return -EPIPE;                                         \
		}                                                              \
	} while (0)

static int kbh__run_test(struct kbh__run *r)
{
	KBH__REP(kbh_report_test_count(r->rep, r->cases.n));
	for (size_t i = 0; i < r->cases.n; i++) {
		char msg[512] = "";
		struct kbh__ctx x;
		KBH__REP(kbh_report_test(r->rep, i, "spec", "%s",
					 r->cases.v[i].spec));
		int rc = kbh__ctx_setup(&x, r->p, &r->cases.v[i], msg,
					sizeof msg);
		if (!rc)
			rc = kbh__ctx_open(&x, 1, 1, 0, msg, sizeof msg);
		uint64_t ns;
		if (!rc)
			rc = kbh__one_call(&x, 0, &ns, msg, sizeof msg);
		kbh__ctx_close(&x);
		if (rc < 0) {
			fprintf(stderr, "harness: test %zu: %s\n", i, msg);
			return -EIO;
		}
		if (rc == 0) {
			KBH__REP(kbh_report_test(r->rep, i, "status", "pass"));
		} else {
			r->failed = 1;
			KBH__REP(kbh_report_test(r->rep, i, "status", "fail"));
			KBH__REP(
				kbh_report_test(r->rep, i, "error", "%s", msg));
		}
	}
	return 0;
}

static int kbh__bench_fail(struct kbh__run *r, size_t i, const char *what,
			   const char *msg)
{
	r->failed = 1;
	KBH__REP(kbh_report_bench(r->rep, i, "status", "fail"));
	KBH__REP(kbh_report_bench(r->rep, i, "error", "%s%s", what, msg));
	return 0;
}

static int kbh__run_bench_case(struct kbh__run *r, size_t i, struct kbh__ctx *x)
{
	const struct kbh_stop_rule *rule = &r->lim.stop[r->mode];
	char msg[512] = "";
	uint64_t ns;
	int rc;

	/* quick correctness check: one call, before spending time on it */
	rc = kbh__one_call(x, 0, &ns, msg, sizeof msg);
	if (rc < 0)
		return -EIO;
	if (rc)
		return kbh__bench_fail(r, i, "", msg);

	/* warm-up: caches of code, OpenMP thread pool, clocks. Bounded by a
	 * quarter of the time cap so a slow call still gets timed runs. */
	uint64_t w0 = kbh_now_ns(), warm = 0;
	for (;;) {
		uint64_t el = kbh_now_ns() - w0;
		if ((warm >= r->lim.warmup_runs && el >= r->lim.warmup_ns) ||
		    (warm >= 1 && el >= rule->max_ns / 4))
			break;
		rc = kbh__one_call(x, 1, &ns, msg, sizeof msg);
		if (rc < 0)
			return -EIO;
		if (rc)
			return kbh__bench_fail(r, i, "warm-up: ", msg);
		warm++;
	}

	struct kbh_stats st;
	kbh_stats_init(&st);
	uint64_t t_start = kbh_now_ns();
	enum kbh_stop stop;
	do {
		rc = kbh__one_call(x, 1, &ns, msg, sizeof msg);
		if (rc < 0)
			return -EIO;
		if (rc) {
			char what[64];
			snprintf(what, sizeof what, "timed call %" PRIu64 ": ",
				 st.n + 1);
			return kbh__bench_fail(r, i, what, msg);
		}
		kbh_stats_add(&st, (double)ns);
		stop = kbh_stop_check(rule, &st, kbh_now_ns() - t_start);
	} while (stop == KBH_STOP_CONTINUE);

	struct kbh_cost cost = {0, 0};
	if (r->p->cost)
		r->p->cost(x->params, &cost);
	KBH__REP(kbh_report_stats(r->rep, i, &st));
	KBH__REP(
		kbh_report_bench(r->rep, i, "stop", "%s", kbh_stop_name(stop)));
	KBH__REP(kbh_report_bench(r->rep, i, "warmup", "%" PRIu64, warm));
	KBH__REP(kbh_report_cost(r->rep, i, &cost, &r->peak, st.mean));
	if (kbh_cost_suspect(&cost, &r->peak, st.best)) {
		KBH__REP(kbh_report_bench(r->rep, i, "status", "suspect"));
		KBH__REP(kbh_report_bench(
			r->rep, i, "error",
			"best time %.0f ns is below the physical floor %.0f ns "
			"for the declared work; not ranked",
			st.best, kbh_cost_floor_ns(&cost, &r->peak)));
	}
	return 0;
}

static int kbh__run_bench(struct kbh__run *r)
{
	if (kbh__flush_init()) {
		fprintf(stderr, "harness: cannot allocate the flush buffer\n");
		return -ENOMEM;
	}
	double rd = kbh__measure_read();
	kbh_cpu_peak(&r->peak, rd);
	fprintf(stderr,
		"harness: mode=%s llc=%zu flush=%zu read=%.1fGB/s "
		"peak=%.1fGB/s,%.0fGFLOP/s timer=%s\n",
		kbh_mode_name(r->mode), kbh__flushlen / 2, kbh__flushlen,
		rd / 1e9, r->peak.bytes_per_s / 1e9, r->peak.flops_per_s / 1e9,
		kbh_trusted_direct() ? "direct" : "libc");

	KBH__REP(kbh_report_bench_count(r->rep, r->cases.n));
	for (size_t i = 0; i < r->cases.n; i++) {
		char msg[512] = "";
		struct kbh__ctx x;
		KBH__REP(kbh_report_bench(r->rep, i, "spec", "%s",
					  r->cases.v[i].spec));
		uint64_t t0 = kbh_now_ns();
		int rc = kbh__ctx_setup(&x, r->p, &r->cases.v[i], msg,
					sizeof msg);
		if (!rc)
			rc = kbh__ctx_open(&x, KBH__MAX_SETS, KBH__MAX_SLOTS, 1,
					   msg, sizeof msg);
		uint64_t t1 = kbh_now_ns();
		if (rc) {
			kbh__ctx_close(&x);
			fprintf(stderr, "harness: benchmark %zu: %s\n", i, msg);
			return -EIO;
		}
		rc = kbh__run_bench_case(r, i, &x);
		uint64_t t2 = kbh_now_ns();
		fprintf(stderr,
			"harness: benchmark %zu: %d sets, %d slots, "
			"generate %.0f ms, run %.0f ms (%" PRIu64 " calls)\n",
			i, x.nsets, x.nslots, (double)(t1 - t0) / 1e6,
			(double)(t2 - t1) / 1e6, x.next_call);
		kbh__ctx_close(&x);
		if (rc == -EIO)
			fprintf(stderr,
				"harness: benchmark %zu: internal error\n", i);
		if (rc)
			return rc;
	}
	return 0;
}

#pragma GCC visibility pop

int main(int argc, char **argv)
{
	char err[512];
	if (kbh_trusted_init(err, sizeof err)) {
		fprintf(stderr, "harness: %s\n", err);
		return KBH_EXIT_DEVICE;
	}
	struct kbh__run r;
	kbh_fill(&r, 0, sizeof r);
	if (argc != 3 || kbh_mode_parse(argv[1], &r.mode)) {
		fprintf(stderr,
			"usage: %s test|benchmark|profile|leaderboard CASES\n",
			argc ? argv[0] : "eval.out");
		return KBH_EXIT_USAGE;
	}
	if (kbh_report_open_env(&r.rep, err, sizeof err)) {
		fprintf(stderr, "harness: %s\n", err);
		return KBH_EXIT_NO_FD;
	}
	/* A reader that went away must give EPIPE, not kill us silently. */
	signal(SIGPIPE, SIG_IGN);

	r.p = &kbh_cpu_problem_def;
	r.lim = r.p->limits;
	kbh_cpu_limits_resolve(&r.lim);

	if (kbh_cases_load(argv[2], &r.cases, err, sizeof err)) {
		fprintf(stderr, "harness: %s\n", err);
		kbh_report_close(r.rep);
		return KBH_EXIT_BAD_SPEC;
	}
	/* Every case must be valid before anything runs. */
	for (size_t i = 0; i < r.cases.n; i++) {
		struct kbh__ctx x;
		int rc =
			kbh__ctx_setup(&x, r.p, &r.cases.v[i], err, sizeof err);
		kbh__ctx_close(&x);
		if (rc) {
			fprintf(stderr, "harness: case %zu (%s): %s\n", i + 1,
				r.cases.v[i].spec, err);
			kbh_cases_free(&r.cases);
			kbh_report_close(r.rep);
			return rc == -ENOMEM ? KBH_EXIT_DEVICE
					     : KBH_EXIT_BAD_SPEC;
		}
	}
	kbh_watchdog_arm(r.lim.watchdog_s[r.mode]);

	int rc = r.mode == KBH_MODE_TEST ? kbh__run_test(&r)
					 : kbh__run_bench(&r);
	int code;
	if (rc == -EPIPE) {
		code = KBH_EXIT_NO_FD;
	} else if (rc) {
		code = KBH_EXIT_DEVICE;
	} else if (kbh_report_kv(r.rep, "check", "%s",
				 r.failed ? "fail" : "pass")) {
		code = KBH_EXIT_NO_FD;
	} else {
		code = r.failed ? KBH_EXIT_FAILED : KBH_EXIT_OK;
	}
	kbh_watchdog_arm(0);
	kbh_cases_free(&r.cases);
	kbh_report_close(r.rep);
	return code;
}
