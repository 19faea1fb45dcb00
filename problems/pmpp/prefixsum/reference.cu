/* prefixsum: the problem definition for the GPU driver (kbg.h).
 *
 * Data uniform in [-1, 1). The reference scans in double, and also scans
 * |x| to give each element the scale of its rounding error: the check
 * accepts |out[i] - S(i)| <= 1e-6 + 1e-5 * sum_{j<=i} |x_j|. Any fp32
 * summation order (tree, blocked, decoupled look-back) lands orders of
 * magnitude inside this on such data; an exclusive scan or a missing
 * carry does not.
 * Expected-result layout: float want[n], then float scale[n].
 * Cost: 8n bytes; no flops bound.
 */
#include "kbg.h"
#include "task.h"

#include <errno.h>
#include <stdio.h>

namespace
{

const int kThreads = 256;
const int kPerThread = 16;
const size_t kTile = (size_t)kThreads * kPerThread;

struct params {
	size_t n;
	size_t tiles;
};

const char *const keys[] = {"size", NULL};

int setup(const struct kbh_case *c, void *pv, struct kbg_layout *l, char *err,
	  size_t err_size)
{
	struct params *p = (struct params *)pv;
	uint64_t n;

	if (kbh_case_u64(c, "size", 1, (uint64_t)1 << 30, &n, err, err_size))
		return -EINVAL;
	p->n = (size_t)n;
	p->tiles = (p->n + kTile - 1) / kTile;
	l->n_in = 1;
	l->in_bytes[0] = p->n * sizeof(float);
	l->n_out = 1;
	l->out_bytes[0] = p->n * sizeof(float);
	l->exp_bytes = 2 * p->n * sizeof(float);
	l->scratch_bytes = p->tiles * sizeof(double2);
	l->cost.bytes = 8.0 * (double)p->n;
	l->ops = KBG_OPS_NONE;
	l->fresh = 1;
	return 0;
}

int generate(const void *pv, uint64_t seed, void *const in[])
{
	const struct params *p = (const struct params *)pv;
	return kbg_gen_f32((float *)in[0], p->n, seed, -1.f, 1.f);
}

/* Block-wide exclusive scan of one double2 per thread (kThreads). */
__device__ double2 block_exclusive(double2 v, double2 *total)
{
	__shared__ double2 s[kThreads];
	s[threadIdx.x] = v;
	__syncthreads();
	for (int off = 1; off < kThreads; off <<= 1) {
		double2 a = threadIdx.x >= (unsigned)off ? s[threadIdx.x - off]
							 : make_double2(0, 0);
		__syncthreads();
		s[threadIdx.x].x += a.x;
		s[threadIdx.x].y += a.y;
		__syncthreads();
	}
	double2 incl = s[threadIdx.x];
	*total = s[kThreads - 1];
	__syncthreads();
	return make_double2(incl.x - v.x, incl.y - v.y);
}

/* Per tile: (sum x, sum |x|). */
__global__ void k_tiles(const float *x, size_t n, double2 *part)
{
	size_t base = blockIdx.x * kTile + (size_t)threadIdx.x * kPerThread;
	double2 v = make_double2(0, 0), total;
	for (int k = 0; k < kPerThread; k++)
		if (base + k < n) {
			v.x += x[base + k];
			v.y += fabs((double)x[base + k]);
		}
	block_exclusive(v, &total);
	if (threadIdx.x == 0)
		part[blockIdx.x] = total;
}

/* Exclusive scan of the tile sums, in place, one block. */
__global__ void k_scan_tiles(double2 *part, size_t tiles)
{
	size_t per = (tiles + kThreads - 1) / kThreads;
	size_t lo = threadIdx.x * per, hi = lo + per < tiles ? lo + per : tiles;
	double2 v = make_double2(0, 0), total;
	for (size_t i = lo; i < hi; i++) {
		v.x += part[i].x;
		v.y += part[i].y;
	}
	double2 run = block_exclusive(v, &total);
	for (size_t i = lo; i < hi; i++) {
		double2 t = part[i];
		part[i] = run;
		run.x += t.x;
		run.y += t.y;
	}
}

__global__ void k_final(const float *x, size_t n, const double2 *part,
			float *want, float *scale)
{
	size_t base = blockIdx.x * kTile + (size_t)threadIdx.x * kPerThread;
	double2 v = make_double2(0, 0), total;
	for (int k = 0; k < kPerThread; k++)
		if (base + k < n) {
			v.x += x[base + k];
			v.y += fabs((double)x[base + k]);
		}
	double2 run = block_exclusive(v, &total);
	run.x += part[blockIdx.x].x;
	run.y += part[blockIdx.x].y;
	for (int k = 0; k < kPerThread; k++)
		if (base + k < n) {
			run.x += x[base + k];
			run.y += fabs((double)x[base + k]);
			want[base + k] = (float)run.x;
			scale[base + k] = (float)run.y;
		}
}

int reference(const void *pv, const void *const in[], void *exp, void *scratch)
{
	const struct params *p = (const struct params *)pv;
	const float *x = (const float *)in[0];
	double2 *part = (double2 *)scratch;
	float *want = (float *)exp;

	k_tiles<<<(unsigned)p->tiles, kThreads>>>(x, p->n, part);
	k_scan_tiles<<<1, kThreads>>>(part, p->tiles);
	k_final<<<(unsigned)p->tiles, kThreads>>>(x, p->n, part, want,
						  want + p->n);
	return -(int)cudaGetLastError();
}

int check(const void *pv, const void *const *, const void *const out[],
	  const void *exp, void *, char *msg, size_t msg_size)
{
	const struct params *p = (const struct params *)pv;
	const float *want = (const float *)exp;
	struct kbh_mismatch m;
	int rc = kbg_close_f32((const float *)out[0], want, want + p->n, p->n,
			       1e-5, 1e-6, &m);
	if (rc)
		return rc;
	if (m.count) {
		kbg_mismatch_msg(&m, "out", msg, msg_size);
		return 1;
	}
	return 0;
}

void call(const void *pv, void *const in[], void *const out[])
{
	const struct params *p = (const struct params *)pv;
	KBH_ENTRY(custom_kernel)((const float *)in[0], (float *)out[0], p->n);
}

} // namespace

KBG_PROBLEM_DEF = {
	"prefixsum", sizeof(struct params),
	keys,        setup,
	generate,    reference,
	check,       call,
};
