// Experiment: can a parent's always-on sentinel kernel account for another
// process's GPU work? Parent and child are separate processes (separate
// contexts). Prints per mode: child's own event time vs the sentinel's
// device window (B - R) and the gaps the sentinel saw.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <signal.h>
#include <atomic>
#include <time.h>
#include <algorithm>
#include <vector>

#define CK(x)                                                                  \
	do {                                                                   \
		cudaError_t e_ = (x);                                          \
		if (e_ != cudaSuccess) {                                       \
			fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__,      \
				cudaGetErrorString(e_));                       \
			exit(1);                                               \
		}                                                              \
	} while (0)

static uint64_t now_ns()
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000ull + t.tv_nsec;
}

__device__ __forceinline__ uint64_t gtimer()
{
	uint64_t t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

struct rec {
	uint64_t start_g, rel_g, gap_sum, gap_max, min_tick, first_gap_at;
	uint32_t ngaps, start_seq, exit_seq, pad;
};
struct sent {
	volatile uint32_t release;
	uint32_t pad[15];
	rec r[2];
};

__global__ void sentinel(sent *s, uint32_t seq, uint64_t thresh)
{
	__shared__ volatile int stop;
	rec *r = &s->r[seq & 1];
	if (threadIdx.x == 0) {
		stop = 0;
		r->start_g = gtimer();
		__threadfence_system();
		((volatile rec *)r)->start_seq = seq;
		__threadfence_system();
	}
	__syncthreads();
	if (threadIdx.x == 0) {
		while (s->release != seq)
			;
		r->rel_g = gtimer();
		stop = 1;
	} else if (threadIdx.x == 32) {
		uint64_t last = gtimer(), sum = 0, mx = 0, mt = ~0ull,
			 first = 0;
		uint32_t n = 0;
		while (!stop) {
			uint64_t t = gtimer();
			uint64_t d = t - last;
			if (d && d < mt)
				mt = d;
			if (d > thresh) {
				if (!n)
					first = last - r->start_g;
				n++;
				sum += d;
				if (d > mx)
					mx = d;
			}
			last = t;
		}
		r->gap_sum = sum;
		r->gap_max = mx;
		r->min_tick = mt;
		r->ngaps = n;
		r->first_gap_at = first;
	}
	__syncthreads();
	if (threadIdx.x == 0) {
		__threadfence_system();
		((volatile rec *)r)->exit_seq = seq;
		__threadfence_system();
	}
}

__global__ void spin(uint64_t ns, float *x)
{
	uint64_t t0 = gtimer();
	while (gtimer() - t0 < ns)
		;
	if (threadIdx.x == 0 && blockIdx.x == 0)
		x[0] += 1;
}

struct shm {
	std::atomic<uint32_t> go, launched, done;
	uint32_t mode;
	uint64_t ns;
	double dev_ns;
	uint64_t t_launch;
};

static void child(struct shm *m)
{
	CK(cudaSetDevice(0));
	CK(cudaFree(0));
	float *x;
	CK(cudaMalloc(&x, 4));
	cudaEvent_t a, b;
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	m->done.store(0xffffffffu);
	uint32_t last = 0;
	for (;;) {
		uint32_t g;
		while ((g = m->go.load()) == last)
			;
		last = g;
		if (g == 0xffffffffu)
			_exit(0);
		if (m->mode ==
		    1) { // head start: launch the work before "go", on done of the last call
		}
		CK(cudaEventRecord(a, 0));
		spin<<<132, 128>>>(m->ns, x);
		CK(cudaEventRecord(b, 0));
		m->launched.store(g);
		if (m->mode != 2)
			CK(cudaEventSynchronize(b)); // mode 2: done early
		float ms = 0;
		if (m->mode != 2)
			CK(cudaEventElapsedTime(&ms, a, b));
		m->dev_ns = ms * 1e6;
		if (m->mode ==
		    1) { // queue next call's work now (ahead of go), then done
			spin<<<132, 128>>>(m->ns, x);
		}
		m->done.store(g);
		if (m->mode == 2)
			CK(cudaEventSynchronize(b));
	}
}

static double med(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	return v.empty() ? 0 : v[v.size() / 2];
}
static double mn(std::vector<double> v)
{
	return v.empty() ? 0 : *std::min_element(v.begin(), v.end());
}
static double mx(std::vector<double> v)
{
	return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
}

int main(int argc, char **argv)
{
	int calls = argc > 1 ? atoi(argv[1]) : 50;
	struct shm *m = (struct shm *)mmap(0, 4096, PROT_READ | PROT_WRITE,
					   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	new (m) shm();
	m->go.store(0);
	m->launched.store(0);
	m->done.store(0);
	pid_t pid = fork();
	if (pid == 0)
		child(m);
	CK(cudaSetDevice(0));
	CK(cudaFree(0));
	sent *s;
	CK(cudaHostAlloc(&s, sizeof(sent), cudaHostAllocMapped));
	memset(s, 0, sizeof *s);
	sent *sd;
	CK(cudaHostGetDevicePointer(&sd, s, 0));
	cudaStream_t st;
	CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
	float *y;
	CK(cudaMalloc(&y, 64 << 20));
	while (m->done.load() != 0xffffffffu)
		;
	// globaltimer tick test and a first sentinel
	uint64_t thresh = 1500;
	uint32_t seq = 1;
	struct {
		const char *name;
		uint32_t mode;
		uint64_t ns;
	} modes[] = {
		{"honest 5us", 0, 5000},         {"honest 50us", 0, 50000},
		{"honest 500us", 0, 500000},     {"honest 5ms", 0, 5000000},
		{"honest 30ms", 0, 30000000},    {"early-done 50us", 2, 50000},
		{"early-done 500us", 2, 500000}, {"early-done 5ms", 2, 5000000},
		{"ahead 50us", 1, 50000},        {"ahead 500us", 1, 500000},
		{"ahead 5ms", 1, 5000000},
	};
	uint32_t go = 0;
	for (auto &md : modes) {
		m->mode = md.mode;
		m->ns = md.ns;
		std::vector<double> dev, win, host, gaps_in_hold, gapsum, ticks,
			firstgap, hold_gap_calls;
		int n = md.ns >= 5000000 ? calls / 3 : calls;
		sentinel<<<1, 64, 0, st>>>(sd, seq, thresh);
		while (((volatile rec *)&s->r[seq & 1])->start_seq != seq)
			;
		for (int k = 0; k < n; k++) {
			// "staging": the parent works on its own for a while with the sentinel up
			CK(cudaMemsetAsync(y, k, 64 << 20, 0));
			CK(cudaStreamSynchronize(0));
			uint64_t t_go = now_ns();
			m->go.store(++go);
			while (m->launched.load() != go)
				;
			s->release = seq;
			rec *r = &s->r[seq & 1];
			while (((volatile rec *)r)->exit_seq != seq)
				;
			uint64_t R = r->rel_g;
			double gs = r->gap_sum;
			uint32_t ng = r->ngaps;
			double tick = r->min_tick;
			double fg = r->first_gap_at;
			seq++;
			sentinel<<<1, 64, 0, st>>>(sd, seq, thresh);
			rec *r2 = &s->r[seq & 1];
			while (((volatile rec *)r2)->start_seq != seq)
				;
			uint64_t B = r2->start_g;
			while (m->done.load() != go)
				;
			uint64_t t_seen = now_ns();
			if (k < 2)
				continue;
			dev.push_back(m->dev_ns);
			win.push_back((double)(B - R));
			host.push_back((double)(t_seen - t_go));
			gaps_in_hold.push_back(ng);
			gapsum.push_back(gs);
			ticks.push_back(tick);
			if (ng)
				firstgap.push_back(fg);
		}
		s->release = seq; // end this mode's sentinel
		while (((volatile rec *)&s->r[seq & 1])->exit_seq != seq)
			;
		double lastgaps = s->r[seq & 1].gap_sum;
		seq++;
		CK(cudaDeviceSynchronize());
		std::vector<double> d;
		for (size_t i = 0; i < dev.size(); i++)
			d.push_back(win[i] - dev[i]);
		printf("%-18s n=%3zu child_dev med %9.1f | sentinel B-R med %9.1f min %9.1f max %9.1f | (B-R)-dev med %7.1f min %7.1f max %7.1f | host win med %9.1f | gaps/hold med %.0f max %.0f gap_sum med %.0f max %.0f first_gap_at med %.0f | tick min %.0f | tail gaps %.0f\n",
		       md.name, dev.size(), med(dev), med(win), mn(win),
		       mx(win), med(d), mn(d), mx(d), med(host),
		       med(gaps_in_hold), mx(gaps_in_hold), med(gapsum),
		       mx(gapsum), med(firstgap), mn(ticks), lastgaps);
		fflush(stdout);
	}
	m->go.store(0xffffffffu);
	waitpid(pid, 0, 0);
	return 0;
}
