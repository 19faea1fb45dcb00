/* cpu_map.c: how alike are this machine's CPUs, and which of them slow
 * each other down? On a VM the vCPUs need not be alike: one may share a
 * physical core (a hidden hyperthread sibling) with another vCPU, or with
 * a neighbour's. A CPU problem's run lands on whichever CPUs the
 * scheduler picks, so such differences move whole runs.
 *
 *   cc -O2 -march=native -pthread bench/cpu/cpu_map.c -o cpu_map
 *   ./cpu_map [ROUNDS]
 *
 * Part 1: for each CPU the process may use, the time of a fixed piece of
 * work (FMA over L1-resident arrays, so core-bound, not memory-bound),
 * pinned to that CPU, in ROUNDS interleaved rounds (default 5): median
 * and spread per CPU, of wall time and of the thread's CPU time (on a KVM
 * guest with steal accounting, the CPU time leaves out the time the host
 * took the vCPU away).
 * Part 2: the same work on the first CPU while a second thread, pinned to
 * CPU j, either spins with pause (as the harness's watcher does) or
 * computes; the slowdown against the work alone. A hidden sibling shows as
 * a large slowdown for one j.
 * Output: one line per measurement, "key value ..." (for grep). */
#define _GNU_SOURCE 1
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define N 1024
#define ITERS 300000

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int pin(int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	return pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static float xs[N], ys[N];
static volatile float sink;
static uint64_t last_cpu_ns; /* the last work()'s thread CPU time */

/* Core-bound work: ITERS passes of y = y * a + x over 8 KiB. Returns its
 * wall time; its thread CPU time goes to last_cpu_ns. */
static uint64_t work(void)
{
	uint64_t c0 = thread_cpu_ns();
	uint64_t t0 = now_ns();
	for (int it = 0; it < ITERS; it++) {
		float a = 0.999f + (float)(it & 1) * 1e-4f;
		for (int i = 0; i < N; i++)
			ys[i] = ys[i] * a + xs[i];
		__asm__ volatile("" ::: "memory");
	}
	uint64_t t = now_ns() - t0;
	last_cpu_ns = thread_cpu_ns() - c0;
	sink = ys[N / 2];
	return t;
}

static _Atomic int stop, mode; /* mode 0: pause spin, 1: compute */
static float zs[N];

static void *other(void *arg)
{
	pin((int)(intptr_t)arg);
	float acc = 1.0f;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (atomic_load_explicit(&mode, memory_order_relaxed) == 0) {
#if defined(__x86_64__)
			__builtin_ia32_pause();
#endif
		} else {
			for (int i = 0; i < N; i++)
				zs[i] = zs[i] * 0.999f + acc;
			acc += 1e-3f;
		}
	}
	sink = zs[1] + acc;
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_u64);
	return v[n / 2];
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 5;
	if (rounds < 1 || rounds > 100)
		rounds = 5;
	cpu_set_t all;
	if (sched_getaffinity(0, sizeof all, &all))
		return 1;
	int cpus[CPU_SETSIZE], nc = 0;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &all))
			cpus[nc++] = c;
	for (int i = 0; i < N; i++)
		xs[i] = (float)i * 1e-6f, ys[i] = 1.0f, zs[i] = 1.0f;

	/* part 1 */
	static uint64_t t[CPU_SETSIZE][100], ct[CPU_SETSIZE][100];
	for (int r = 0; r < rounds; r++)
		for (int k = 0; k < nc; k++) {
			pin(cpus[k]);
			work(); /* settle on the CPU */
			t[k][r] = work();
			ct[k][r] = last_cpu_ns;
		}
	uint64_t best = UINT64_MAX;
	uint64_t med[CPU_SETSIZE], cmed[CPU_SETSIZE];
	for (int k = 0; k < nc; k++) {
		uint64_t v[100];
		memcpy(v, t[k], sizeof(uint64_t) * (size_t)rounds);
		med[k] = median(v, rounds);
		memcpy(v, ct[k], sizeof(uint64_t) * (size_t)rounds);
		cmed[k] = median(v, rounds);
		if (med[k] < best)
			best = med[k];
	}
	for (int k = 0; k < nc; k++) {
		uint64_t lo = UINT64_MAX, hi = 0, clo = UINT64_MAX, chi = 0;
		for (int r = 0; r < rounds; r++) {
			lo = t[k][r] < lo ? t[k][r] : lo;
			hi = t[k][r] > hi ? t[k][r] : hi;
			clo = ct[k][r] < clo ? ct[k][r] : clo;
			chi = ct[k][r] > chi ? ct[k][r] : chi;
		}
		printf("alone cpu %d median_us %.1f vs_best %.3f min_us %.1f max_us %.1f"
		       " cpu_median_us %.1f cpu_min_us %.1f cpu_max_us %.1f\n",
		       cpus[k], med[k] / 1e3, (double)med[k] / (double)best,
		       lo / 1e3, hi / 1e3, cmed[k] / 1e3, clo / 1e3, chi / 1e3);
	}

	/* part 2 */
	int home = cpus[0];
	for (int m = 0; m < 2; m++) {
		atomic_store(&mode, m);
		for (int k = 1; k < nc; k++) {
			uint64_t with[100], alone[100];
			pin(home);
			for (int r = 0; r < rounds; r++) {
				work();
				alone[r] = work();
				atomic_store(&stop, 0);
				pthread_t th;
				if (pthread_create(&th, NULL, other,
						   (void *)(intptr_t)cpus[k]))
					return 1;
				struct timespec ts = {0, 2000000};
				nanosleep(&ts, NULL);
				with[r] = work();
				atomic_store(&stop, 1);
				pthread_join(th, NULL);
			}
			uint64_t a = median(alone, rounds),
				 w = median(with, rounds);
			printf("pair cpu %d with %d %s slowdown %.3f\n", home,
			       cpus[k], m ? "compute" : "pause",
			       (double)w / (double)a);
		}
	}
	return 0;
}
