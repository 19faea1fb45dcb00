/* harness_cpu.c: main() of a CPU problem's eval.out.
 *
 * Theory of operation
 * -------------------
 * Two processes (guard.h). The first thing main() does, before it parses
 * anything, is split: the parent keeps the report fd, the cases, every
 * input's pristine copy and every expected result, and never calls user
 * code; a forked child -- no fds above 2, its own seccomp filter, unable
 * to read or signal the parent -- is the only process that ever runs
 * custom_kernel, on work slots in a shared arena. So nothing the
 * submission does (write to any fd, exit(0), atexit handlers, its own
 * clock_gettime, scribbling over harness code or data) can write, end or
 * alter the report; the worst it can do is crash or lie about its own
 * time, and both are caught (below).
 *
 * Then: parse the mode (else exit 2), open the report on POPCORN_FD (else
 * 111), load every case and run the problem's setup on each before
 * anything executes (else 113), arm the watchdog (114).
 *
 * Memory. Each case gets:
 *   - pristine (parent only): the base input sets (generated up front
 *     from seeds derived from the case seed, so generation is never
 *     timed) and a staging set;
 *   - secret (parent only): the expected results. The child has no
 *     mapping of either: they are created after the fork;
 *   - work slots (shared arena): the only memory the submission is given.
 *     Every array is 64-byte aligned and ends right before a page the
 *     child cannot access, so a read or write past the end faults. Calls
 *     rotate through the slots, so consecutive calls see different
 *     addresses.
 *   Large private mappings ask for transparent huge pages (fewer TLB misses
 *   while staging).
 *
 * One call (untimed unless said otherwise), the child stopped (SIGSTOP)
 * throughout 1-3 and 5-6:
 *   1. stage (parent): pick base set (call % nsets); if the problem has a
 *      vary hook, derive a fresh variant of it into the staging set (new
 *      data, every call, with its expected result derived cheaply); copy
 *      the inputs into the slot (call % nslots); fill the output with
 *      0xFF (NaN).
 *   2. flush (timed modes only, parent): read over a buffer of 2x the
 *      last-level cache (evicts the shared cache and this core's), then
 *      clflush(opt) every line of the slot's arrays. clflush acts on the
 *      physical line in every cache of the machine, so the child's inputs
 *      are cold whichever core it runs on, whatever it does. (The parent
 *      does not use OpenMP here: its idle threads would spin on the cores
 *      the child is about to use.)
 *   3. calibrate (parent): two requests to the twin, a second child
 *      forked like the first but never given the submission, which stamps
 *      as soon as it runs, stays busy 20 us and answers
 *      (kbh__calibrate_once). The first warms what the flush evicted of
 *      the handoff's path, the second is measured: its overhead, window
 *      less busy time, is below the fastest the submission's process (as
 *      cold as the flush left it) answers the same request.
 *   4. TIMED (child): "go", SIGCONT; the child stamps t0, loads the TLB
 *      for the slot's pages (kbh__walk: the one-process harness started
 *      every call with them cached), calls custom_kernel (via the
 *      problem's call hook), stamps t1, posts "done"; the parent sleeps
 *      meanwhile and reads its own clock around the handoff (t_go before
 *      "go", t_seen when it wakes up to "done"; the guard's spinning
 *      watcher is off here, since a CPU spinning beside the child's slows
 *      it down where CPUs share a core, guard.c). The score's source is
 *      the parent (kbh_guard_verify): m = (t_seen - t_go) - h, h the
 *      smallest overhead of the last 8 calibrations (kbh_guard_handoff),
 *      and the sample is the child's t1 - t0 only as far as it lies
 *      above m - max(1 % of m, 2 us). A claim outside the window is
 *      forged (sample m, status suspect). So a lie, a patched clock or a
 *      patched harness in the child moves a sample at most issue 29's
 *      allowance below the parent's measurement, and the measurement
 *      cannot be shortened from the child either: the twin's requests
 *      run while the child is stopped. What it costs honest submissions:
 *      the part of their handoff above the twin's, which is the price of
 *      their process being cold after the flush (and of its threads);
 *      problems/harness/README.md, "Unforgeable results", has the figures.
 *      The clocks are clock_gettime(CLOCK_MONOTONIC) through a pointer
 *      resolved from libc at start (harness.c).
 *   5. SIGSTOP (sent by the parent as soon as it sees "done"); the child
 *      is stopped before anything is read.
 *   6. verify (parent): every input byte must equal the staged copy (a
 *      submission that mutates its input fails), then the problem's check
 *      compares the output with the expected result. Every call is checked,
 *      in every mode, timed or not.
 *   If the child dies or exits during a call (a crash, exit() inside
 *   custom_kernel), the case reports status fail with an error saying how
 *   it ended, check: fail, and the harness exits 115 (crashed).
 *
 * Modes:
 *   test: each case once (base set, no vary, no flush), status per case.
 *   benchmark / profile / leaderboard: per case a quick correctness check
 *      (one call), warm-up calls, then timed calls until the stopping rule
 *      (relative standard error < rel_err with >= min_runs samples, or
 *      max_runs, or the time cap) says stop. Reports runs, mean, std, err,
 *      best, worst (ns), then stop, warmup, cost keys (gbps/gflops,
 *      floor_ns) and, when the best sample beats the physical floor or a
 *      claim was forged, status: suspect with an error.
 *      The modes differ only in their limits.
 *   A failed check anywhere: status fail + error for that case, check: fail
 *   and exit 112.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include "harness_cpu.h"

#include "guard.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(_OPENMP) && (defined(__clang__) || __GNUC__ >= 10)
#include <omp.h>
#define KBH__OMP_PAUSE 1
#endif

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
		return kbh_cpu_llc_clamp(best);
#ifdef _SC_LEVEL3_CACHE_SIZE
	long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
	if (l3 > 0)
		return kbh_cpu_llc_clamp((size_t)l3);
#endif
	return kbh_cpu_llc_clamp(0);
}

size_t kbh_cpu_llc_clamp(size_t reported)
{
	if (!reported)
		return (size_t)64 << 20;
	if (reported < ((size_t)1 << 20))
		return (size_t)1 << 20;
	return reported > KBH_CPU_LLC_CAP ? KBH_CPU_LLC_CAP : reported;
}

unsigned kbh_cpu_watchdog_s(const struct kbh_cpu_limits *l, enum kbh_mode m,
			    size_t ncases, double sample_ns)
{
	const struct kbh_stop_rule *s = &l->stop[m];
	double per_case = (double)l->warmup_ns + (double)s->max_ns +
			  (double)(l->warmup_runs + s->min_runs) * sample_ns;
	double need = 2.0 * (double)ncases * per_case / 1e9 + 30.0;
	if (need > 86400.0)
		need = 86400.0;
	return need > (double)l->watchdog_s[m] ? (unsigned)need + 1
					       : l->watchdog_s[m];
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
 *   bytes: the larger of four times a measured single-threaded
 *          streaming read per logical CPU (kbh__measure_read) and what
 *          every core can load from L1 (128 bytes per cycle at the
 *          highest clock). Far above what DRAM delivers, but the
 *          measurement runs on whatever machine (and load) it gets, and
 *          a false "suspect" is worse than a loose floor: cached or
 *          skipped work is orders of magnitude below it anyway. */
void kbh_cpu_peak(struct kbh_peak *p, double measured_read_bytes_per_s)
{
	unsigned ncpu = kbh__ncpu();
	double hz = kbh__max_hz();
	if (!(hz > 0))
		hz = 6e9;
	p->flops_per_s = (double)ncpu * hz * 64.0;
	double rd = measured_read_bytes_per_s > 1e9 ? measured_read_bytes_per_s
						    : 1e9;
	/* The measurement only ever raises the ceiling: a read measured on a
	 * loaded machine comes out low, and a floor derived from it alone
	 * flagged honest runs as suspect there. The other bound is what a
	 * core can load at all, 128 bytes per cycle (two 64-byte loads, L1
	 * hits), which no load on the machine can lower. */
	double l1 = (double)ncpu * hz * 128.0;
	p->bytes_per_s = rd * 4.0 * ncpu > l1 ? rd * 4.0 * ncpu : l1;
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

/* ---- flushing ----------------------------------------------------------- */

/* The sweep is spread over one thread per CPU, so that every core's
 * private caches are swept too and 2x a large LLC (300 MiB on some
 * servers) takes milliseconds, not tens of them. Not OpenMP: idle OpenMP
 * threads spin for a while after a parallel region, and the parent's would
 * spin on the cores the child is about to use. These helpers sleep on a
 * futex between sweeps, so when "go" is posted every core is free -- and,
 * having just worked, awake (on a VM, not halted and descheduled). */

static unsigned char *kbh__flushbuf;
static size_t kbh__flushlen;
static volatile uint64_t kbh__flush_sink;

struct kbh__sweep {
	_Alignas(64) _Atomic uint32_t gen;  /* bumped to start a sweep */
	_Alignas(64) _Atomic uint32_t done; /* helpers finished this sweep */
	unsigned nthreads;                  /* helpers + the main thread */
};

static struct kbh__sweep kbh__sw;

static long kbh__futex_call(_Atomic uint32_t *a, int op, uint32_t v)
{
	return syscall(SYS_futex, (uint32_t *)(void *)a, op, v, NULL, NULL, 0);
}

/* Reads share k of nthreads of the flush buffer, a line at a time. */
static void kbh__sweep_share(unsigned k, unsigned nthreads)
{
	const size_t lines = kbh__flushlen / 64;
	const size_t lo = lines * k / nthreads, hi = lines * (k + 1) / nthreads;
	const unsigned char *b = kbh__flushbuf;
	uint64_t s0 = 0, s1 = 0;
	size_t i = lo;
	/* two chains keep several misses in flight */
	for (; i + 2 <= hi; i += 2) {
		s0 += *(const volatile uint64_t *)(const void *)(b + i * 64);
		s1 += *(const volatile uint64_t *)(const void *)(b + i * 64 +
								 64);
	}
	for (; i < hi; i++)
		s0 += *(const volatile uint64_t *)(const void *)(b + i * 64);
	kbh__flush_sink = s0 + s1;
}

static void *kbh__sweep_helper(void *arg)
{
	unsigned k = (unsigned)(uintptr_t)arg;
	uint32_t seen = 0;
	for (;;) {
		uint32_t g = atomic_load(&kbh__sw.gen);
		if (g == seen) {
			kbh__futex_call(&kbh__sw.gen, FUTEX_WAIT_PRIVATE, g);
			continue;
		}
		seen = g;
		kbh__sweep_share(k, kbh__sw.nthreads);
		if (atomic_fetch_add(&kbh__sw.done, 1) + 2 == kbh__sw.nthreads)
			kbh__futex_call(&kbh__sw.done, FUTEX_WAKE_PRIVATE, 1);
	}
	return NULL;
}

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
	for (size_t i = 0; i < len / 8; i++)
		w[i] = i * 0x9e3779b97f4a7c15ull;
	kbh__flushbuf = p;
	kbh__flushlen = len;
	unsigned n = kbh__ncpu();
	if (n > 256)
		n = 256;
	kbh__sw.nthreads = 1;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, (size_t)64 << 10);
	for (unsigned k = 1; k < n; k++) {
		pthread_t t;
		if (pthread_create(&t, &at, kbh__sweep_helper,
				   (void *)(uintptr_t)k))
			break; /* fewer helpers: a slower sweep, no harm */
		pthread_detach(t);
		kbh__sw.nthreads++;
	}
	pthread_attr_destroy(&at);
	return 0;
}

/* A read of every line of the flush buffer: evicts (and writes back) what
 * the caches held, leaving them full of clean lines of no interest. Reads
 * rather than writes so the submission does not pay for our dirty lines. */
static void kbh__flush_pass(void)
{
	unsigned n = kbh__sw.nthreads;
	atomic_store(&kbh__sw.done, 0);
	atomic_fetch_add(&kbh__sw.gen, 1);
	if (n > 1)
		kbh__futex_call(&kbh__sw.gen, FUTEX_WAKE_PRIVATE, INT_MAX);
	kbh__sweep_share(0, n);
	for (;;) {
		uint32_t d = atomic_load(&kbh__sw.done);
		if (d + 1 >= n)
			break;
		kbh__futex_call(&kbh__sw.done, FUTEX_WAIT_PRIVATE, d);
	}
}

/* Evicts [p, p+n) from every cache level of every core. */
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

/* ---- the child's operations --------------------------------------------- */

/* Everything below in this section runs in the child (kbh_guard_fn). */

#define KBH__OP_CALL (KBH_GUARD_OP_USER + 0) /* run custom_kernel, timed */
#define KBH__OP_CAL (KBH_GUARD_OP_USER + 1)  /* calibration: no work */

#define KBH__PARAMS_MAX 2048

struct kbh__call_arg {
	uint64_t in[KBH_CPU_MAX_INPUTS];
	uint64_t in_bytes[KBH_CPU_MAX_INPUTS];
	uint64_t out;
	uint64_t out_bytes;
	uint64_t busy_ns; /* KBH__OP_CAL: how long to stay busy */
	uint32_t n_in;
	uint32_t params_size;
	_Alignas(16) unsigned char params[KBH__PARAMS_MAX];
};

/* Loads the TLB with the translations of every page of the call's arrays:
 * a clflushopt of one line per page (the parent has evicted those lines
 * already, so no data moves). Why: the one-process harness evicted the
 * slot right before the call in the same address space, so the call began
 * with every translation it needed cached; here the eviction happens in
 * the parent's page tables, and a call starting with a cold TLB ran up to
 * 50% slower on 4 MiB of input (measured on a VM, where page walks are two-
 * dimensional). The walk runs inside the timed span, right after t0, and
 * costs far less than the misses it saves (a few ns per page: the walks
 * overlap). Inside the window either way; inside the claim so that an
 * honest claim stays what the call took. */
static void kbh__walk(const struct kbh__call_arg *a)
{
#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__)
	for (uint32_t k = 0; k <= a->n_in; k++) {
		const char *p = (const char *)(uintptr_t)(k < a->n_in ? a->in[k]
								      : a->out);
		uint64_t n = k < a->n_in ? a->in_bytes[k] : a->out_bytes;
		if (!p)
			continue;
		for (uint64_t i = 0; i < n; i += 4096) {
#if defined(__aarch64__)
			__asm__ volatile("dc civac, %0" ::"r"(p + i)
					 : "memory");
#elif defined(__CLFLUSHOPT__)
			__builtin_ia32_clflushopt(p + i);
#else
			__builtin_ia32_clflush(p + i);
#endif
		}
	}
#if defined(__aarch64__)
	__asm__ volatile("dsb ish" ::: "memory");
#else
	__builtin_ia32_mfence();
#endif
#else
	(void)a;
#endif
}

static int kbh__child_op(void *ctx, uint32_t op, const void *arg,
			 size_t arg_size, uint64_t *t0, uint64_t *t1)
{
	const struct kbh_cpu_problem *p = ctx;
	static _Alignas(64) unsigned char params[KBH__PARAMS_MAX];
	const struct kbh__call_arg *a = arg;
	if (arg_size != sizeof *a || a->n_in > KBH_CPU_MAX_INPUTS ||
	    a->params_size > KBH__PARAMS_MAX)
		return -EINVAL;
	if (op == KBH__OP_CAL) {
		/* The shortest path through a request: stamp as soon as it
		 * runs, stay busy, stamp, done. Run by the twin, its overhead
		 * is what the parent takes off a timed call's window
		 * (kbh__handoff). */
		uint64_t s = kbh_now_ns(), e;
		*t0 = s;
		do {
			e = kbh_now_ns();
		} while (e - s < a->busy_ns);
		*t1 = e;
		return 0;
	}
	if (op != KBH__OP_CALL)
		return -EINVAL;
	kbh_copy(params, a->params, a->params_size);
	void *in[KBH_CPU_MAX_INPUTS];
	for (uint32_t k = 0; k < a->n_in; k++)
		in[k] = (void *)(uintptr_t)a->in[k];
	void *out = (void *)(uintptr_t)a->out;
	__asm__ volatile("" ::: "memory");
	*t0 = kbh_now_ns();
	kbh__walk(a);
	p->call(params, in, out);
	*t1 = kbh_now_ns();
	__asm__ volatile("" ::: "memory");
	return 0;
}

/* ---- the parent's measurement ------------------------------------------- */

/* Test-only ablations of the timing rule, for tests/problems/cpu_timing.sh
 * to show what each part buys (eval.out built with -DKBH_TIMING_ABLATE=N;
 * never in a task's build):
 *   1  the claim is the sample whenever it fits the window (no handoff);
 *   2  calibration requests go to the submission's own process instead of
 *      the twin;
 *   3  the handoff is the slack of the rule before issue 29's
 *      (kbh_guard_slack: 2 x p95 + 10 us) over the calibration made before
 *      the submission is loaded, fixed for the run: no interleaved
 *      calibration, no minimum. */
#ifndef KBH_TIMING_ABLATE
#define KBH_TIMING_ABLATE 0
#endif
/* Test-only too: with KBH_TIMING_LOG=1 every timed call's window, handoff
 * and sample go to stderr ("harness: sample CALL WINDOW HANDOFF SAMPLE",
 * ns), for cpu_timing.sh to set beside what the submission really took. */
#ifndef KBH_TIMING_LOG
#define KBH_TIMING_LOG 0
#endif

/* The handoff is the smallest overhead of the last KBH__HIST calibration
 * requests (kbh_guard_handoff); KBH__CAL_START of them are made before the
 * submission is loaded. Each stays busy KBH__CAL_BUSY_NS: about a short
 * call, and no longer, since a parent that slept longer wakes no sooner. */
#define KBH__HIST 8
#define KBH__CAL_START 16
#define KBH__CAL_BUSY_NS 20000ull

struct kbh__timing {
	struct kbh_guard *twin; /* the calibration child (main) */
	struct kbh_guard *cal;  /* where calibration requests go */
	uint64_t hist[KBH__HIST];
	size_t n, next;
	uint64_t fixed;             /* ablation 3's handoff */
	struct kbh_guard_cal start; /* the calibration before loading */
	uint64_t start_min;
};

/* One calibration: two requests, the first to warm the path the flush
 * has just evicted (the kernel's wake-up and signal code, the guard's
 * loop), the second measured. The second thus runs warmer than the timed
 * call after it, whose process the flush left cold: its overhead was well
 * below the fastest that process answered the same request
 * (bench/cpu/timing_rule.sh, "probe"), and a smaller handoff only raises
 * samples. Returns 0 or -EIO (the calibration child failed: our error;
 * under ablation 2 the submission's). */
static int kbh__calibrate_once(struct kbh__timing *tm)
{
	struct kbh__call_arg a;
	struct kbh_guard_window w;
	kbh_fill(&a, 0, sizeof a);
	a.busy_ns = KBH__CAL_BUSY_NS;
	for (int k = 0; k < 2; k++) {
		int rc = kbh_guard_request(tm->cal, KBH__OP_CAL, &a, sizeof a,
					   &w);
		if (rc || w.status) {
			fprintf(stderr,
				"harness: calibration request failed (%d, "
				"status %d)\n",
				rc, w.status);
			return -EIO;
		}
	}
	tm->hist[tm->next] = kbh_guard_gap(&w);
	tm->next = (tm->next + 1) % KBH__HIST;
	if (tm->n < KBH__HIST)
		tm->n++;
	return 0;
}

/* The handoff to take off the next timed call's window. */
static uint64_t kbh__handoff(const struct kbh__timing *tm)
{
	if (KBH_TIMING_ABLATE == 1)
		return UINT64_MAX;
	if (KBH_TIMING_ABLATE == 3)
		return tm->fixed;
	return kbh_guard_handoff(tm->hist, tm->n);
}

/* ---- one case ----------------------------------------------------------- */

#define KBH__MAX_SETS 4
#define KBH__MAX_SLOTS 3

/* Reserved address space of the shared arena (pages exist only where the
 * slots of the current case are). The largest case we allow, vectorsum's
 * 2^27 floats, needs 512 MiB in one slot. */
#define KBH__ARENA_MAX ((size_t)8 << 30)

/* What one call ended as. */
enum {
	KBH__PASS = 0,
	KBH__FAIL = 1,    /* a check failed, msg says which */
	KBH__CRASHED = 2, /* the child died, msg says how */
};

struct kbh__ctx {
	const struct kbh_cpu_problem *p;
	struct kbh_guard *g;
	void *params;
	struct kbh_cpu_layout lay;
	uint64_t seed;
	int nsets, nslots, staged;
	struct kbh__region pristine, secret;
	void *base_in[KBH__MAX_SETS][KBH_CPU_MAX_INPUTS];
	void *base_exp[KBH__MAX_SETS];
	void *stage_in[KBH_CPU_MAX_INPUTS];
	void *stage_exp;
	void *slot_in[KBH__MAX_SLOTS][KBH_CPU_MAX_INPUTS];
	void *slot_out[KBH__MAX_SLOTS];
	uint64_t next_call;
	uint64_t nonce;    /* per-run randomness mixed into the variants */
	int *user_started; /* set at the first call of user code */
	/* timing (timed calls only) */
	struct kbh__timing *tm;
	uint64_t raised, forged;   /* samples not taken from the claim */
	uint64_t claim_sum;        /* of the claims not forged */
	uint64_t gap_sum, max_gap; /* window - claim */
};

static void kbh__ctx_close(struct kbh__ctx *x)
{
	if (x->g)
		kbh_guard_reset(x->g);
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
	if (p->params_size > KBH__PARAMS_MAX) {
		snprintf(err, err_size, "problem params larger than %d bytes",
			 KBH__PARAMS_MAX);
		return -EINVAL;
	}
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
static int kbh__ctx_open(struct kbh__ctx *x, struct kbh_guard *g, int want_sets,
			 int want_slots, int use_vary, char *err,
			 size_t err_size)
{
	const struct kbh_cpu_layout *l = &x->lay;
	size_t in = kbh__in_bytes(l);
	size_t exp = kbh__round_up(l->exp_bytes, kbh__page());
	x->g = g;
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
		x->slot_out[s] = kbh_guard_alloc(g, l->out_bytes);
		int ok = x->slot_out[s] != NULL;
		for (int k = 0; ok && k < l->n_in; k++)
			ok = (x->slot_in[s][k] = kbh_guard_alloc(
				      g, l->in_bytes[k])) != NULL;
		if (!ok) {
			snprintf(err, err_size,
				 "the work buffers do not fit the %.0f MiB "
				 "arena",
				 (double)kbh_guard_arena_size(g) / KBH__MIB);
			return -ENOMEM;
		}
	}
	int rc = kbh_guard_publish(g, err, err_size);
	if (rc)
		/* Once user code has run, a child that will not map its
		 * buffers is the submission's doing, like a crash. */
		return rc == -ECHILD || (x->user_started && *x->user_started)
			       ? -ECHILD
			       : -EIO;
	for (int s = 0; s < x->nsets; s++) {
		uint64_t seed = s == 0 ? x->seed
				       : kbh_seed_derive(x->seed,
							 KBH__STREAM_SET,
							 (uint64_t)s);
		x->p->generate(x->params, seed, x->base_in[s]);
		x->p->reference(x->params, (const void *const *)x->base_in[s],
				x->base_exp[s]);
	}
#ifdef KBH__OMP_PAUSE
	/* generate and reference may use OpenMP: release the parent's pool
	 * now, or its idle threads spin (8 ms after a region, measured on a
	 * Zen 3) on the cores the first timed calls need. */
	omp_pause_resource_all(omp_pause_soft);
#endif
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
			   kbh_seed_derive(x->seed ^ x->nonce, KBH__STREAM_CALL,
					   call),
			   (const void *const *)x->base_in[set],
			   x->base_exp[set], x->stage_in, x->stage_exp);
		*src_in = x->stage_in;
		*src_exp = x->stage_exp;
	} else {
		*src_in = x->base_in[set];
		*src_exp = x->base_exp[set];
	}
	for (int k = 0; k < l->n_in; k++)
		kbh_copy(x->slot_in[slot][k], (*src_in)[k], l->in_bytes[k]);
	kbh_poison(x->slot_out[slot], l->out_bytes);
	return slot;
}

/* Steps 2-6. Returns KBH__PASS, KBH__FAIL or KBH__CRASHED (msg set), or
 * negative (our error, msg set). When timed, *ns gets the sample
 * (kbh_guard_verify) and the context's timing counters are updated. */
static int kbh__one_call(struct kbh__ctx *x, int timed, uint64_t *ns, char *msg,
			 size_t msg_size)
{
	void *const *src_in;
	const void *src_exp;
	int slot = kbh__stage(x, &src_in, &src_exp);
	const struct kbh_cpu_layout *l = &x->lay;
	struct kbh__call_arg a;
	kbh_fill(&a, 0, sizeof a);
	a.n_in = (uint32_t)l->n_in;
	for (int k = 0; k < l->n_in; k++) {
		a.in[k] = (uint64_t)(uintptr_t)x->slot_in[slot][k];
		a.in_bytes[k] = l->in_bytes[k];
	}
	a.out = (uint64_t)(uintptr_t)x->slot_out[slot];
	a.out_bytes = l->out_bytes;
	a.params_size = (uint32_t)x->p->params_size;
	kbh_copy(a.params, x->params, x->p->params_size);

	if (timed) {
		kbh__flush_pass();
		for (int k = 0; k < l->n_in; k++)
			kbh__evict(x->slot_in[slot][k], l->in_bytes[k]);
		kbh__evict(x->slot_out[slot], l->out_bytes);
		if (KBH_TIMING_ABLATE != 3 && kbh__calibrate_once(x->tm)) {
			snprintf(msg, msg_size, "calibration failed");
			return -EIO;
		}
	}
	struct kbh_guard_window w;
	if (x->user_started)
		*x->user_started = 1;
	int rc = kbh_guard_request(x->g, KBH__OP_CALL, &a, sizeof a, &w);
	if (rc == -ECHILD) {
		snprintf(msg, msg_size,
			 "custom_kernel crashed: the submission's process %s "
			 "during call %" PRIu64 " (a crash, or exit() called "
			 "from the submission)",
			 kbh_guard_death(x->g), x->next_call);
		return KBH__CRASHED;
	}
	if (rc) {
		snprintf(msg, msg_size, "guard request: %s", strerror(-rc));
		return -EIO;
	}
	if (timed) {
		uint64_t gap = kbh_guard_gap(&w), h = kbh__handoff(x->tm);
		enum kbh_guard_verdict v = kbh_guard_verify(&w, h, ns);
		if (KBH_TIMING_LOG)
			fprintf(stderr,
				"harness: sample %" PRIu64 " %" PRIu64
				" %" PRIu64 " %" PRIu64 "\n",
				x->next_call - 1, w.t_seen - w.t_go, h, *ns);
		x->forged += v == KBH_GUARD_FORGED;
		x->raised += v == KBH_GUARD_CLAMPED;
		if (v != KBH_GUARD_FORGED)
			x->claim_sum += w.t1 - w.t0;
		x->gap_sum += gap;
		if (gap > x->max_gap)
			x->max_gap = gap;
	}

	for (int k = 0; k < l->n_in; k++) {
		size_t d = kbh_first_diff(x->slot_in[slot][k], src_in[k],
					  l->in_bytes[k]);
		if (d != l->in_bytes[k]) {
			const char *name = x->p->in_names[k] ? x->p->in_names[k]
							     : "?";
			snprintf(msg, msg_size,
				 "custom_kernel modified its input '%s' "
				 "(first changed byte at offset %zu of %zu); "
				 "inputs are read-only",
				 name, d, l->in_bytes[k]);
			return KBH__FAIL;
		}
	}
	return x->p->check(x->params, src_exp, x->slot_out[slot], msg, msg_size)
		       ? KBH__FAIL
		       : KBH__PASS;
}

/* ---- modes -------------------------------------------------------------- */

struct kbh__run {
	enum kbh_mode mode;
	const struct kbh_cpu_problem *p;
	struct kbh_cpu_limits lim;
	struct kbh_report *rep;
	struct kbh_cases cases;
	struct kbh_peak peak;
	struct kbh_guard *g;
	struct kbh__timing tm;
	int failed;
	int crashed;
	int user_started; /* a call of custom_kernel has been made */
	uint64_t nonce;   /* kbh_seed_random, drawn at start */
};

/* Report helpers: any report error ends the run with 111. */
#define KBH__REP(call)                                                         \
	do {                                                                   \
		if ((call) != 0) {                                             \
			fprintf(stderr, "harness: report write failed\n");     \
			return -EPIPE;                                         \
		}                                                              \
	} while (0)

/* Loads the submission in the child (guard.h): its code runs from here
 * on. Returns 0; 1 when it did not load (every case is then reported
 * failed with why, and the run ends: failed, or crashed when the child
 * died loading it); negative for our own errors. */
static int kbh__load(struct kbh__run *r)
{
	const char *path = getenv(KBH_SUBMISSION_ENV);
	const int test = r->mode == KBH_MODE_TEST;
	char msg[KBH_GUARD_MSG_MAX + 128];

	if (!path || !path[0]) {
		fprintf(stderr, "harness: %s is not set\n", KBH_SUBMISSION_ENV);
		return -EINVAL;
	}
	r->user_started = 1;
	int rc = kbh_guard_load(r->g, path, KBH_SUBMISSION_SYMBOL, msg,
				sizeof msg);
	if (!rc)
		return 0;
	r->failed = 1;
	r->crashed = rc == -ECHILD;
	fprintf(stderr, "harness: %s\n", msg);
	KBH__REP(test ? kbh_report_test_count(r->rep, r->cases.n)
		      : kbh_report_bench_count(r->rep, r->cases.n));
	for (size_t i = 0; i < r->cases.n; i++) {
		const char *spec = r->cases.v[i].spec;
		KBH__REP(
			test ? kbh_report_test(r->rep, i, "spec", "%s", spec)
			     : kbh_report_bench(r->rep, i, "spec", "%s", spec));
		KBH__REP(test ? kbh_report_test(r->rep, i, "status", "fail")
			      : kbh_report_bench(r->rep, i, "status", "fail"));
		KBH__REP(
			test ? kbh_report_test(r->rep, i, "error", "%s", msg)
			     : kbh_report_bench(r->rep, i, "error", "%s", msg));
	}
	return 1;
}

static int kbh__run_test(struct kbh__run *r)
{
	int lrc = kbh__load(r);
	if (lrc)
		return lrc < 0 ? lrc : 0;
	KBH__REP(kbh_report_test_count(r->rep, r->cases.n));
	for (size_t i = 0; i < r->cases.n; i++) {
		char msg[512] = "";
		struct kbh__ctx x;
		KBH__REP(kbh_report_test(r->rep, i, "spec", "%s",
					 r->cases.v[i].spec));
		int rc = kbh__ctx_setup(&x, r->p, &r->cases.v[i], msg,
					sizeof msg);
		x.user_started = &r->user_started;
		x.nonce = r->nonce;
		if (!rc)
			rc = kbh__ctx_open(&x, r->g, 1, 1, 0, msg, sizeof msg);
		uint64_t ns;
		if (!rc)
			rc = kbh__one_call(&x, 0, &ns, msg, sizeof msg);
		else if (rc == -ECHILD) {
			char m2[sizeof msg];
			snprintf(m2, sizeof m2,
				 "custom_kernel crashed between calls: %s",
				 msg);
			snprintf(msg, sizeof msg, "%s", m2);
			rc = KBH__CRASHED;
		}
		kbh__ctx_close(&x);
		if (rc < 0) {
			fprintf(stderr, "harness: test %zu: %s\n", i, msg);
			return -EIO;
		}
		if (rc == KBH__PASS) {
			KBH__REP(kbh_report_test(r->rep, i, "status", "pass"));
			continue;
		}
		r->failed = 1;
		KBH__REP(kbh_report_test(r->rep, i, "status", "fail"));
		KBH__REP(kbh_report_test(r->rep, i, "error", "%s", msg));
		if (rc == KBH__CRASHED) {
			/* No process left to run the other cases in. */
			fprintf(stderr, "harness: test %zu: %s\n", i, msg);
			r->crashed = 1;
			return 0;
		}
	}
	return 0;
}

static int kbh__bench_fail(struct kbh__run *r, size_t i, int rc,
			   const char *what, const char *msg)
{
	r->failed = 1;
	if (rc == KBH__CRASHED) {
		r->crashed = 1;
		fprintf(stderr, "harness: benchmark %zu: %s%s\n", i, what, msg);
	}
	KBH__REP(kbh_report_bench(r->rep, i, "status", "fail"));
	KBH__REP(kbh_report_bench(r->rep, i, "error", "%s%s", what, msg));
	return 0;
}

/* Calibrates the handoff before the submission is loaded: KBH__CAL_START
 * calibrations (kbh__calibrate_once), each after a flush pass as a timed
 * call is. They seed the history every timed call's own calibration
 * extends, and give the log the machine's handoff (and ablation 3 its
 * fixed handoff). */
static int kbh__calibrate(struct kbh__run *r)
{
	struct kbh__timing *tm = &r->tm;
	uint64_t gaps[KBH__CAL_START];
	tm->cal = KBH_TIMING_ABLATE == 2 ? r->g : tm->twin;
	for (int i = 0; i < KBH__CAL_START; i++) {
		kbh__flush_pass();
		if (kbh__calibrate_once(tm))
			return -EIO;
		gaps[i] = tm->hist[(tm->next + KBH__HIST - 1) % KBH__HIST];
	}
	tm->start_min = kbh_guard_handoff(gaps, KBH__CAL_START);
	kbh_guard_slack(gaps, KBH__CAL_START, &tm->start);
	tm->fixed = tm->start.slack;
	if (KBH_TIMING_ABLATE == 2)
		tm->n = 0; /* only what the submission's process answers */
	return 0;
}

static int kbh__run_bench_case(struct kbh__run *r, size_t i, struct kbh__ctx *x)
{
	const struct kbh_stop_rule *rule = &r->lim.stop[r->mode];
	char msg[512] = "";
	uint64_t ns;
	int rc;

	x->tm = &r->tm;
	/* quick correctness check: one call, before spending time on it */
	rc = kbh__one_call(x, 0, &ns, msg, sizeof msg);
	if (rc < 0)
		return -EIO;
	if (rc)
		return kbh__bench_fail(r, i, rc, "", msg);

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
			return kbh__bench_fail(r, i, rc, "warm-up: ", msg);
		warm++;
	}
	/* only the timed calls count */
	x->raised = x->forged = x->claim_sum = x->gap_sum = x->max_gap = 0;

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
			return kbh__bench_fail(r, i, rc, what, msg);
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
	uint64_t told = st.n - x->forged;
	fprintf(stderr,
		"harness: benchmark %zu: timing: %" PRIu64 " of %" PRIu64
		" samples raised to the harness's measurement less the "
		"allowance, %" PRIu64 " forged; mean claim %.1f us, mean "
		"sample %.1f us; handoff %.1f us; window - claim mean %.1f us, "
		"largest %.1f us\n",
		i, x->raised, st.n, x->forged,
		told ? (double)x->claim_sum / (double)told / 1e3 : 0.0,
		st.mean / 1e3, (double)kbh__handoff(&r->tm) / 1e3,
		st.n ? (double)x->gap_sum / (double)st.n / 1e3 : 0.0,
		(double)x->max_gap / 1e3);
	if (x->forged) {
		KBH__REP(kbh_report_bench(r->rep, i, "status", "suspect"));
		KBH__REP(kbh_report_bench(
			r->rep, i, "error",
			"%" PRIu64 " of %" PRIu64 " timed calls reported times "
			"outside the harness's own measurement of them "
			"(forged timing); not ranked",
			x->forged, st.n));
	} else if (kbh_cost_suspect(&cost, &r->peak, st.best)) {
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
	if (kbh__calibrate(r))
		return -EIO;
	double rd = kbh__measure_read();
	kbh_cpu_peak(&r->peak, rd);
	/* The budget now that a flush's cost is known (it reads the buffer
	 * once per sample). */
	kbh_watchdog_arm(kbh_cpu_watchdog_s(
		&r->lim, r->mode, r->cases.n,
		rd > 0 ? (double)kbh__flushlen / rd * 1e9 : 0.0));
	fprintf(stderr,
		"harness: mode=%s llc=%zu flush=%zu read=%.1fGB/s "
		"peak=%.1fGB/s,%.0fGFLOP/s timer=%s\n",
		kbh_mode_name(r->mode), kbh__flushlen / 2, kbh__flushlen,
		rd / 1e9, r->peak.bytes_per_s / 1e9, r->peak.flops_per_s / 1e9,
		kbh_trusted_direct() ? "direct" : "libc");
	fprintf(stderr,
		"harness: guard: child %d%s, calibration child %d%s, handoff "
		"min=%.1fus p50=%.1fus p90=%.1fus max=%.1fus (%zu after a "
		"flush)%s\n",
		kbh_guard_pid(r->g),
		kbh_guard_confined(r->g) ? " confined" : " NOT confined",
		kbh_guard_pid(r->tm.twin),
		kbh_guard_confined(r->tm.twin) ? " confined" : " NOT confined",
		(double)r->tm.start_min / 1e3, (double)r->tm.start.p50 / 1e3,
		(double)r->tm.start.p90 / 1e3, (double)r->tm.start.max / 1e3,
		r->tm.start.n,
		KBH_TIMING_ABLATE ? " TIMING ABLATED (test build)" : "");

	int lrc = kbh__load(r);
	if (lrc)
		return lrc < 0 ? lrc : 0;
	KBH__REP(kbh_report_bench_count(r->rep, r->cases.n));
	for (size_t i = 0; i < r->cases.n; i++) {
		char msg[512] = "";
		struct kbh__ctx x;
		KBH__REP(kbh_report_bench(r->rep, i, "spec", "%s",
					  r->cases.v[i].spec));
		uint64_t t0 = kbh_now_ns();
		int rc = kbh__ctx_setup(&x, r->p, &r->cases.v[i], msg,
					sizeof msg);
		x.user_started = &r->user_started;
		x.nonce = r->nonce;
		if (!rc)
			rc = kbh__ctx_open(&x, r->g, KBH__MAX_SETS,
					   KBH__MAX_SLOTS, 1, msg, sizeof msg);
		uint64_t t1 = kbh_now_ns();
		if (rc == -ECHILD) {
			kbh__ctx_close(&x);
			return kbh__bench_fail(r, i, KBH__CRASHED,
					       "custom_kernel crashed between "
					       "calls: ",
					       msg);
		}
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
		if (rc || r->crashed)
			return rc;
	}
	return 0;
}

/* Ends the process without running atexit handlers or destructors (none
 * of ours need to run, and no code of the submission may run here). */
static _Noreturn void kbh__exit(struct kbh__run *r, int code)
{
	kbh_watchdog_arm(0);
	kbh_guard_stop(r->g);
	kbh_guard_stop(r->tm.twin);
	kbh_cases_free(&r->cases);
	kbh_report_close(r->rep);
	fflush(NULL);
	_exit(code);
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
	/* The split comes first: nothing secret exists yet, so the child
	 * inherits nothing of value (see guard.h). Only the child returns
	 * never; from here on this is the parent. */
	if (kbh_guard_start(&r.g, KBH__ARENA_MAX, kbh__child_op,
			    (void *)&kbh_cpu_problem_def, err, sizeof err)) {
		fprintf(stderr, "harness: %s\n", err);
		return KBH_EXIT_DEVICE;
	}
	/* The calibration child (the twin): forked the same way but after
	 * the submission's, so the submission's process has no mapping of its
	 * control block, and never given the submission. Its requests are
	 * made while the submission's process is stopped, so nothing the
	 * submission does can slow or speed them (kbh__calibrate_once). */
	if (kbh_guard_start(&r.tm.twin, (size_t)64 << 20, kbh__child_op,
			    (void *)&kbh_cpu_problem_def, err, sizeof err)) {
		fprintf(stderr, "harness: %s\n", err);
		kbh_guard_stop(r.g);
		return KBH_EXIT_DEVICE;
	}
	/* No spinning watcher beside a child that computes on the CPU (see
	 * guard.c): it slowed single-threaded submissions by up to 51 % on a
	 * VM and gained no slack there. */
	kbh_guard_unwatch(r.g);
	kbh_guard_unwatch(r.tm.twin);
	if (argc != 3 || kbh_mode_parse(argv[1], &r.mode)) {
		fprintf(stderr,
			"usage: %s test|benchmark|profile|leaderboard CASES\n",
			argc ? argv[0] : "eval.out");
		kbh__exit(&r, KBH_EXIT_USAGE);
	}
	if (kbh_report_open_env(&r.rep, err, sizeof err)) {
		fprintf(stderr, "harness: %s\n", err);
		kbh__exit(&r, KBH_EXIT_NO_FD);
	}
	/* A reader that went away must give EPIPE, not kill us silently. */
	signal(SIGPIPE, SIG_IGN);

	r.p = &kbh_cpu_problem_def;
	r.lim = r.p->limits;
	kbh_cpu_limits_resolve(&r.lim);

	if (kbh_cases_load(argv[2], &r.cases, err, sizeof err)) {
		fprintf(stderr, "harness: %s\n", err);
		kbh__exit(&r, KBH_EXIT_BAD_SPEC);
	}
	/* The seeds need not stay readable (KBH_CASES_UNLINK, harness.h);
	 * the child could only ever open the file by its path anyway. */
	int crc = kbh_cases_consume(argv[2]);
	if (crc < 0)
		fprintf(stderr, "harness: could not remove %s: %s\n", argv[2],
			strerror(-crc));
	/* Fresh variants per timed call from seeds nobody can know in
	 * advance; the case seed still fixes the base sets, and with them
	 * the first (reproducible) check. */
	if (kbh_seed_random(&r.nonce))
		fprintf(stderr, "harness: no random seed; variants follow "
				"the case seeds alone\n");
	/* Every case must be valid before anything runs. */
	for (size_t i = 0; i < r.cases.n; i++) {
		struct kbh__ctx x;
		int rc =
			kbh__ctx_setup(&x, r.p, &r.cases.v[i], err, sizeof err);
		kbh__ctx_close(&x);
		if (rc) {
			fprintf(stderr, "harness: case %zu (%s): %s\n", i + 1,
				r.cases.v[i].spec, err);
			kbh__exit(&r, rc == -ENOMEM ? KBH_EXIT_DEVICE
						    : KBH_EXIT_BAD_SPEC);
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
		code = r.crashed  ? KBH_EXIT_CRASHED
		       : r.failed ? KBH_EXIT_FAILED
				  : KBH_EXIT_OK;
	}
	kbh__exit(&r, code);
}
