/* kbg_dev.cu: device-side helpers of the GPU driver -- input generators,
 * comparisons, the L2 flush, the timing hold -- and their host wrappers
 * (see kbg.h and kbg_dev.h).
 *
 * Every kernel here is `static` (internal linkage), so no host-stub symbol
 * of the driver can collide with a kernel the submission names the same.
 * Comparisons aggregate per thread and per warp before touching global
 * atomics: a submission that writes nothing must fail in milliseconds,
 * not spend seconds on a billion contended atomics.
 */
#include "kbg.h"
#include "kbg_api.h"
#include "kbg_dev.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#pragma GCC visibility push(hidden)

namespace
{

/* Result of one comparison on the device. */
struct dev_res {
	unsigned long long count;
	unsigned long long first;
};

dev_res *g_res; /* device, one per process */
unsigned g_sms = 0;

__device__ __forceinline__ size_t gtid()
{
	return (size_t)blockIdx.x * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ size_t gstride()
{
	return (size_t)gridDim.x * blockDim.x;
}

/* One global update per warp: the warp's count summed, the first index
 * reduced to its minimum. */
__device__ void flush_res(dev_res *r, unsigned long long cnt,
			  unsigned long long first)
{
	for (int o = 16; o > 0; o >>= 1) {
		cnt += KBG_SHFL_DOWN(cnt, o);
		unsigned long long f = KBG_SHFL_DOWN(first, o);
		first = f < first ? f : first;
	}
	if ((threadIdx.x & 31) == 0 && cnt) {
		atomicAdd(&r->count, cnt);
		atomicMin(&r->first, first);
	}
}

__global__ void k_gen_f32(float *p, size_t n, uint64_t seed, float lo,
			  float span)
{
	for (size_t i = gtid(); i < n; i += gstride())
		p[i] = lo + span * kbh_hash_unitf(seed, i);
}

__global__ void k_gen_f16(__half *p, size_t n, uint64_t seed, float lo,
			  float span)
{
	for (size_t i = gtid(); i < n; i += gstride())
		p[i] = __float2half_rn(lo + span * kbh_hash_unitf(seed, i));
}

__global__ void k_gen_bytes(unsigned char *p, size_t n, uint64_t seed)
{
	size_t words = n / 8;
	for (size_t i = gtid(); i < words; i += gstride())
		reinterpret_cast<uint64_t *>(p)[i] = kbh_hash_u64(seed, i);
	if (gtid() == 0) {
		uint64_t t = kbh_hash_u64(seed, words);
		for (size_t i = words * 8; i < n; i++, t >>= 8)
			p[i] = (unsigned char)t;
	}
}

__global__ void k_close_f32(const float *got, const float *want,
			    const float *scale, size_t n, double rtol,
			    double atol, dev_res *r)
{
	unsigned long long cnt = 0, first = ~0ull;
	/* Every lane runs the same number of iterations so the warp
	 * reduction below sees all 32 lanes. */
	size_t iters = (n + gstride() - 1) / gstride();
	for (size_t k = 0, i = gtid(); k < iters; k++, i += gstride()) {
		if (i >= n)
			continue;
		double g = got[i], w = want[i];
		double s = scale ? (double)scale[i] : fabs(w);
		double tol = atol + rtol * s;
		if (!isfinite(g) || !(fabs(g - w) <= tol)) {
			cnt++;
			if (i < first)
				first = i;
		}
	}
	flush_res(r, cnt, first);
}

__global__ void k_close_f16(const __half *got, const float *want, size_t n,
			    double rtol, double atol, dev_res *r)
{
	unsigned long long cnt = 0, first = ~0ull;
	size_t iters = (n + gstride() - 1) / gstride();
	for (size_t k = 0, i = gtid(); k < iters; k++, i += gstride()) {
		if (i >= n)
			continue;
		double g = __half2float(got[i]), w = want[i];
		double tol = atol + rtol * fabs(w);
		if (!isfinite(g) || !(fabs(g - w) <= tol)) {
			cnt++;
			if (i < first)
				first = i;
		}
	}
	flush_res(r, cnt, first);
}

__global__ void k_equal_u32(const uint32_t *a, const uint32_t *b, size_t n,
			    dev_res *r)
{
	unsigned long long cnt = 0, first = ~0ull;
	size_t iters = (n + gstride() - 1) / gstride();
	for (size_t k = 0, i = gtid(); k < iters; k++, i += gstride()) {
		if (i < n && a[i] != b[i]) {
			cnt++;
			if (i < first)
				first = i;
		}
	}
	flush_res(r, cnt, first);
}

/* Byte equality, 16 bytes per step where both pointers allow it. Reports
 * the first differing 16-byte chunk's start; the host narrows it down. */
__global__ void k_equal_bytes(const unsigned char *a, const unsigned char *b,
			      size_t n, dev_res *r)
{
	unsigned long long cnt = 0, first = ~0ull;
	size_t chunks = (n + 15) / 16;
	size_t iters = (chunks + gstride() - 1) / gstride();
	for (size_t k = 0, c = gtid(); k < iters; k++, c += gstride()) {
		if (c >= chunks)
			continue;
		size_t off = c * 16;
		bool diff = false;
		if (off + 16 <= n) {
			uint4 x = reinterpret_cast<const uint4 *>(a)[c];
			uint4 y = reinterpret_cast<const uint4 *>(b)[c];
			diff = x.x != y.x || x.y != y.y || x.z != y.z ||
			       x.w != y.w;
		} else {
			for (size_t i = off; i < n; i++)
				diff |= a[i] != b[i];
		}
		if (diff) {
			cnt++;
			if (off < first)
				first = off;
		}
	}
	flush_res(r, cnt, first);
}

/* Streams the flush buffer through the last-level cache with loads that
 * allocate there (kbg_dev_load_l2: cache-global loads on NVIDIA, which
 * skip L1). Reading, not writing, keeps the cache free of dirty lines, so
 * the submission's first misses pay no write-backs of ours; the
 * write-backs of the previous call's outputs happen here, untimed. The
 * never-taken store keeps the loads alive. */
__global__ void k_flush(const uint4 *p, size_t n16, unsigned magic,
			unsigned *sink)
{
	unsigned acc = 0;
	for (size_t i = gtid(); i < n16; i += gstride()) {
		uint4 v = kbg_dev_load_l2(p + i);
		acc ^= v.x ^ v.y ^ v.z ^ v.w;
	}
	if (acc == magic)
		*sink = acc;
}

__global__ void k_empty()
{
}

__global__ void k_spin(unsigned long long ns)
{
	unsigned long long t0 = kbg_dev_timer_ns();
	while (kbg_dev_timer_ns() - t0 < ns)
		;
}

#include "kbg_sent.cuh"

__global__ void k_sentinel(kbg_sent_ctl *c, unsigned seq, int watch,
			   unsigned long long gap_ns,
			   unsigned long long not_before,
			   unsigned long long sw_ns)
{
	kbg_sentinel(c, seq, watch, gap_ns, not_before, sw_ns);
}

/* The hold (see kbg_dev.h): every SM filled with blocks of the hold kernel
 * (all thread slots taken, so no other kernel's block can become resident
 * until it ends); one thread per block waits. Block 0 polls the release
 * word in mapped host memory, then passes the release on through g_go;
 * the others poll g_go. Every block gives up after timeout_ns of its own
 * (block 0 then records the timeout and releases the others). */
__device__ unsigned g_go;

__global__ void k_hold(const volatile unsigned *release, unsigned gen,
		       unsigned long long timeout_ns,
		       volatile unsigned *timed_out)
{
	if (threadIdx.x == 0) {
		volatile unsigned *go = &g_go;
		unsigned long long t0 = kbg_dev_timer_ns();
		if (blockIdx.x == 0) {
			while ((int)(*release - gen) < 0) {
				if (kbg_dev_timer_ns() - t0 > timeout_ns) {
					*timed_out = gen;
					__threadfence_system();
					break;
				}
				kbg_dev_pause();
			}
			*go = gen;
			__threadfence();
		} else {
			/* a little longer than block 0, which normally
			 * releases everyone */
			while ((int)(*go - gen) < 0 &&
			       kbg_dev_timer_ns() - t0 < timeout_ns + 100000ull)
				kbg_dev_pause();
		}
	}
	__syncthreads();
}

kbg_sent_ctl *g_sent_host, *g_sent_dev;
cudaStream_t g_sent_stream;
size_t g_sent_smem; /* the watch's dynamic shared memory (kbg_sent_init) */

/* Mapped host words: [0] release (host writes), [1] last timed-out gen
 * (device writes). */
volatile unsigned *g_hold_host;
unsigned *g_hold_dev;
unsigned g_hold_grid, g_hold_block;

int ret(cudaError_t e)
{
	return e == cudaSuccess ? 0 : -(int)e;
}

int launched()
{
	return ret(cudaGetLastError());
}

/* Runs one comparison kernel's epilogue: reads the result back, resets the
 * device record for the next comparison. */
int fetch_res(unsigned long long *count, unsigned long long *first)
{
	dev_res h;
	cudaError_t e;

	if ((e = cudaGetLastError()) != cudaSuccess)
		return -(int)e;
	if ((e = cudaMemcpy(&h, g_res, sizeof h, cudaMemcpyDeviceToHost)) !=
	    cudaSuccess)
		return -(int)e;
	*count = h.count;
	*first = h.first;
	return 0;
}

int reset_res()
{
	dev_res h = {0, ~0ull};
	return ret(cudaMemcpy(g_res, &h, sizeof h, cudaMemcpyHostToDevice));
}

} // namespace

extern "C" {

unsigned kbg_grid(size_t n)
{
	size_t blocks = (n + 255) / 256;
	size_t cap = (size_t)(g_sms ? g_sms : 132) * 8;
	if (blocks > cap)
		blocks = cap;
	return blocks ? (unsigned)blocks : 1u;
}

int kbg_dev_init(void)
{
	int dev = 0, sms = 0;
	cudaError_t e;

	if ((e = cudaGetDevice(&dev)) != cudaSuccess)
		return -(int)e;
	if ((e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount,
					dev)) != cudaSuccess)
		return -(int)e;
	g_sms = (unsigned)sms;
	if ((e = cudaMalloc(&g_res, sizeof *g_res)) != cudaSuccess)
		return -(int)e;
	return reset_res();
}

void kbg_dev_fini(void)
{
	if (g_res)
		(void)cudaFree(g_res);
	g_res = NULL;
	if (g_hold_host)
		(void)cudaFreeHost((void *)g_hold_host);
	g_hold_host = NULL;
}

int kbg_dev_hold_init(void)
{
	int dev = 0, sms = 0, per_sm = 0, occ = 0, bps;
	void *h = NULL, *d = NULL;
	cudaError_t e;

	if ((e = cudaGetDevice(&dev)) != cudaSuccess ||
	    (e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount,
					dev)) != cudaSuccess ||
	    (e = cudaDeviceGetAttribute(&per_sm,
					cudaDevAttrMaxThreadsPerMultiProcessor,
					dev)) != cudaSuccess)
		return -(int)e;
	if (sms < 1 || per_sm < 32)
		return -(int)cudaErrorInvalidValue;
	/* blocks of at most 1024 threads that together take every thread
	 * slot of an SM: 2 x 1024 (H100, A100), 2 x 768 (L4), 1 x 1024
	 * (T4) */
	bps = (per_sm + 1023) / 1024;
	g_hold_block = (unsigned)(per_sm / bps / 32 * 32);
	if ((e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
		     &occ, k_hold, (int)g_hold_block, 0)) != cudaSuccess)
		return -(int)e;
	g_hold_grid = (unsigned)((occ > 0 ? occ : 1) * sms);
	if ((e = cudaHostAlloc(&h, 2 * sizeof(unsigned),
			       cudaHostAllocMapped)) != cudaSuccess)
		return -(int)e;
	if ((e = cudaHostGetDevicePointer(&d, h, 0)) != cudaSuccess) {
		(void)cudaFreeHost(h);
		return -(int)e;
	}
	g_hold_host = (volatile unsigned *)h;
	g_hold_host[0] = 0;
	g_hold_host[1] = 0;
	g_hold_dev = (unsigned *)d;
	return 0;
}

int kbg_dev_hold(unsigned gen, uint64_t timeout_ns)
{
	if (!g_hold_host)
		return -(int)cudaErrorNotReady;
	k_hold<<<g_hold_grid, g_hold_block>>>(g_hold_dev, gen,
					      (unsigned long long)timeout_ns,
					      g_hold_dev + 1);
	return launched();
}

void kbg_dev_release(unsigned gen)
{
	if (g_hold_host)
		__atomic_store_n((unsigned *)&g_hold_host[0], gen,
				 __ATOMIC_SEQ_CST);
}

int kbg_dev_spin(uint64_t ns)
{
	k_spin<<<1, 32>>>((unsigned long long)ns);
	return launched();
}

int kbg_sent_init(void)
{
	void *h = NULL, *d = NULL;
	cudaError_t e;

	if (g_sent_host)
		return 0;
	if ((e = cudaHostAlloc(&h, sizeof(kbg_sent_ctl),
			       cudaHostAllocMapped)) != cudaSuccess)
		return -(int)e;
	memset(h, 0, sizeof(kbg_sent_ctl));
	if ((e = cudaHostGetDevicePointer(&d, h, 0)) != cudaSuccess ||
	    (e = cudaStreamCreateWithFlags(
		     &g_sent_stream, cudaStreamNonBlocking)) != cudaSuccess) {
		(void)cudaFreeHost(h);
		return -(int)e;
	}
	g_sent_host = (kbg_sent_ctl *)h;
	g_sent_dev = (kbg_sent_ctl *)d;
	/* The watch asks for all the shared memory a block may have, so
	 * that no block of the parent's own kernels shares its SM (and
	 * delays its loop); where that cannot be set it shares. */
	int smem = 0;
	if (cudaDeviceGetAttribute(&smem,
				   cudaDevAttrMaxSharedMemoryPerBlockOptin,
				   0) == cudaSuccess &&
	    smem > 0 &&
	    cudaFuncSetAttribute((const void *)k_sentinel,
				 cudaFuncAttributeMaxDynamicSharedMemorySize,
				 smem) == cudaSuccess)
		g_sent_smem = (size_t)smem;
	(void)cudaGetLastError();
	return 0;
}

int kbg_sent_launch(uint32_t seq, int watch, uint64_t not_before,
		    uint64_t sw_ns)
{
	if (!g_sent_host)
		return -(int)cudaErrorNotReady;
	k_sentinel<<<1, 64, watch ? g_sent_smem : 0, g_sent_stream>>>(
		g_sent_dev, seq, watch, KBG_SENT_GAP_NS,
		(unsigned long long)not_before, (unsigned long long)sw_ns);
	return launched();
}

void kbg_sent_go(uint32_t seq)
{
	__atomic_store_n((unsigned *)&g_sent_host->go, seq, __ATOMIC_SEQ_CST);
}

void kbg_sent_release(uint32_t seq)
{
	__atomic_store_n((unsigned *)&g_sent_host->release, seq,
			 __ATOMIC_SEQ_CST);
}

static int sent_read(uint32_t seq, int ended, struct kbg_sent_rec *out)
{
	volatile kbg_sent_rec *r = &g_sent_host->rec[seq & 1];
	unsigned v =
		ended ? __atomic_load_n((unsigned *)&r->ended, __ATOMIC_ACQUIRE)
		      : __atomic_load_n((unsigned *)&r->started,
					__ATOMIC_ACQUIRE);
	if (v != seq)
		return 0;
	memcpy(out, (const void *)r, sizeof *out);
	return 1;
}

int kbg_sent_started(uint32_t seq, struct kbg_sent_rec *out)
{
	return sent_read(seq, 0, out);
}

int kbg_sent_ended(uint32_t seq, struct kbg_sent_rec *out)
{
	return sent_read(seq, 1, out);
}

int kbg_dev_hold_timed_out(unsigned gen)
{
	return g_hold_host && __atomic_load_n((unsigned *)&g_hold_host[1],
					      __ATOMIC_SEQ_CST) == gen;
}

int kbg_gen_f32(float *p, size_t n, uint64_t seed, float lo, float hi)
{
	k_gen_f32<<<kbg_grid(n), 256>>>(p, n, seed, lo, hi - lo);
	return launched();
}

int kbg_gen_f16(void *p, size_t n, uint64_t seed, float lo, float hi)
{
	k_gen_f16<<<kbg_grid(n), 256>>>((__half *)p, n, seed, lo, hi - lo);
	return launched();
}

int kbg_gen_bytes(void *p, size_t n, uint64_t seed)
{
	k_gen_bytes<<<kbg_grid(n / 8 + 1), 256>>>((unsigned char *)p, n, seed);
	return launched();
}

int kbg_close_f32(const float *got, const float *want, const float *scale,
		  size_t n, double rtol, double atol, struct kbh_mismatch *m)
{
	unsigned long long cnt, first;
	int rc;

	memset(m, 0, sizeof *m);
	if ((rc = reset_res()) != 0)
		return rc;
	k_close_f32<<<kbg_grid(n), 256>>>(got, want, scale, n, rtol, atol,
					  g_res);
	if ((rc = fetch_res(&cnt, &first)) != 0)
		return rc;
	m->count = (size_t)cnt;
	if (cnt) {
		float g, w, s = 0;
		m->index = (size_t)first;
		if ((rc = ret(cudaMemcpy(&g, got + first, 4,
					 cudaMemcpyDeviceToHost))) ||
		    (rc = ret(cudaMemcpy(&w, want + first, 4,
					 cudaMemcpyDeviceToHost))))
			return rc;
		if (scale && (rc = ret(cudaMemcpy(&s, scale + first, 4,
						  cudaMemcpyDeviceToHost))))
			return rc;
		m->got = g;
		m->want = w;
		m->tol = atol + rtol * (scale ? (double)s : fabs((double)w));
	}
	return 0;
}

int kbg_close_f16(const void *got, const float *want, size_t n, double rtol,
		  double atol, struct kbh_mismatch *m)
{
	unsigned long long cnt, first;
	int rc;

	memset(m, 0, sizeof *m);
	if ((rc = reset_res()) != 0)
		return rc;
	k_close_f16<<<kbg_grid(n), 256>>>((const __half *)got, want, n, rtol,
					  atol, g_res);
	if ((rc = fetch_res(&cnt, &first)) != 0)
		return rc;
	m->count = (size_t)cnt;
	if (cnt) {
		__half g;
		float w;
		m->index = (size_t)first;
		if ((rc = ret(cudaMemcpy(&g, (const __half *)got + first,
					 sizeof g, cudaMemcpyDeviceToHost))) ||
		    (rc = ret(cudaMemcpy(&w, want + first, 4,
					 cudaMemcpyDeviceToHost))))
			return rc;
		m->got = __half2float(g);
		m->want = w;
		m->tol = atol + rtol * fabs((double)w);
	}
	return 0;
}

int kbg_equal_u32(const uint32_t *got, const uint32_t *want, size_t n,
		  struct kbh_mismatch *m)
{
	unsigned long long cnt, first;
	int rc;

	memset(m, 0, sizeof *m);
	if ((rc = reset_res()) != 0)
		return rc;
	k_equal_u32<<<kbg_grid(n), 256>>>(got, want, n, g_res);
	if ((rc = fetch_res(&cnt, &first)) != 0)
		return rc;
	m->count = (size_t)cnt;
	if (cnt) {
		uint32_t g, w;
		m->index = (size_t)first;
		if ((rc = ret(cudaMemcpy(&g, got + first, 4,
					 cudaMemcpyDeviceToHost))) ||
		    (rc = ret(cudaMemcpy(&w, want + first, 4,
					 cudaMemcpyDeviceToHost))))
			return rc;
		m->got = g;
		m->want = w;
	}
	return 0;
}

int kbg_equal_bytes(const void *a, const void *b, size_t n, size_t *first)
{
	unsigned long long cnt, f;
	int rc;

	*first = n;
	if (n == 0)
		return 0;
	if ((rc = reset_res()) != 0)
		return rc;
	k_equal_bytes<<<kbg_grid((n + 15) / 16), 256>>>(
		(const unsigned char *)a, (const unsigned char *)b, n, g_res);
	if ((rc = fetch_res(&cnt, &f)) != 0)
		return rc;
	if (cnt) {
		unsigned char x[16], y[16];
		size_t len = n - f < 16 ? n - f : 16;
		if ((rc = ret(cudaMemcpy(x, (const unsigned char *)a + f, len,
					 cudaMemcpyDeviceToHost))) ||
		    (rc = ret(cudaMemcpy(y, (const unsigned char *)b + f, len,
					 cudaMemcpyDeviceToHost))))
			return rc;
		*first = (size_t)f + kbh_first_diff(x, y, len);
	}
	return 0;
}

int kbg_dev_flush(const void *buf, size_t bytes, unsigned *sink)
{
	size_t n16 = bytes / 16;
	k_flush<<<kbg_grid(n16), 256>>>((const uint4 *)buf, n16, 0x9e3779b9u,
					sink);
	return launched();
}

int kbg_dev_empty(void)
{
	k_empty<<<1, 32>>>();
	return launched();
}

void kbg_mismatch_msg(const struct kbh_mismatch *m, const char *what, char *msg,
		      size_t msg_size)
{
	snprintf(msg, msg_size,
		 "%s: %zu mismatches; first at index %zu: got %.9g, "
		 "expected %.9g (tolerance %.3g)",
		 what, m->count, m->index, m->got, m->want, m->tol);
}

} // extern "C"

#pragma GCC visibility pop
