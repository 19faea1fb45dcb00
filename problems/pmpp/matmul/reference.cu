/* matmul: the problem definition for the GPU driver (kbg.h).
 *
 * Output dtype: fp16 (the usual half-precision GEMM: fp16 operands, fp32
 * accumulation, fp16 result). Inputs uniform in [-1, 1) rounded to fp16.
 * The reference multiplies in fp32 (shared-memory tiles) and keeps the
 * unrounded fp32 result. Check:
 *     |c - ref| <= 1e-3 |ref| + 1e-3 sqrt(k) / 3
 * sqrt(k)/3 being the typical |c|: rounding to fp16 (<= 2^-11 relative)
 * and any fp32 accumulation order pass; accumulating in fp16 (errors of
 * several 1e-3 of |c| at k >= 1024) does not.
 * Cost: 2 (mk + kn + mn) bytes, 2mnk flops on the fp16 tensor cores; the
 * floor counts half the flops (min_work 0.5), leaving room for
 * Strassen-like schemes.
 * Data sets are made once per case (4, drawn at random per call).
 */
#include "kbg.h"
#include "task.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>

namespace
{

const int kT = 16;

struct params {
	int m, n, k;
};

const char *const keys[] = {"m", "n", "k", NULL};

int setup(const struct kbh_case *c, void *pv, struct kbg_layout *l, char *err,
	  size_t err_size)
{
	struct params *p = (struct params *)pv;
	uint64_t m, n, k;

	if (kbh_case_u64(c, "m", 1, 65536, &m, err, err_size) ||
	    kbh_case_u64(c, "n", 1, 65536, &n, err, err_size) ||
	    kbh_case_u64(c, "k", 1, 65536, &k, err, err_size))
		return -EINVAL;
	if (m * k > (1ull << 30) || k * n > (1ull << 30) ||
	    m * n > (1ull << 30)) {
		snprintf(err, err_size, "a matrix above 2^30 elements");
		return -EINVAL;
	}
	p->m = (int)m, p->n = (int)n, p->k = (int)k;
	l->n_in = 2;
	l->in_bytes[0] = (size_t)m * k * sizeof(__half);
	l->in_bytes[1] = (size_t)k * n * sizeof(__half);
	l->n_out = 1;
	l->out_bytes[0] = (size_t)m * n * sizeof(__half);
	l->exp_bytes = (size_t)m * n * sizeof(float);
	l->cost.bytes = 2.0 * ((double)m * k + (double)k * n + (double)m * n);
	l->cost.flops = 2.0 * (double)m * (double)n * (double)k;
	l->ops = KBG_OPS_FP16_TC;
	l->min_work = 0.5;
	l->fresh = 0;
	l->sets = 4;
	return 0;
}

int generate(const void *pv, uint64_t seed, void *const in[])
{
	const struct params *p = (const struct params *)pv;
	int rc = kbg_gen_f16(in[0], (size_t)p->m * p->k,
			     kbh_seed_derive(seed, 0, 0), -1.f, 1.f);
	return rc ? rc
		  : kbg_gen_f16(in[1], (size_t)p->k * p->n,
				kbh_seed_derive(seed, 0, 1), -1.f, 1.f);
}

__global__ void k_ref(const __half *a, const __half *b, float *c, int m, int n,
		      int k)
{
	__shared__ float sa[kT][kT], sb[kT][kT + 1];
	int row = blockIdx.y * kT + threadIdx.y;
	int col = blockIdx.x * kT + threadIdx.x;
	float acc = 0;
	for (int t = 0; t < k; t += kT) {
		int ka = t + threadIdx.x, kb = t + threadIdx.y;
		sa[threadIdx.y][threadIdx.x] =
			row < m && ka < k
				? __half2float(a[(size_t)row * k + ka])
				: 0.f;
		sb[threadIdx.y][threadIdx.x] =
			kb < k && col < n
				? __half2float(b[(size_t)kb * n + col])
				: 0.f;
		__syncthreads();
		for (int i = 0; i < kT; i++)
			acc = fmaf(sa[threadIdx.y][i], sb[i][threadIdx.x], acc);
		__syncthreads();
	}
	if (row < m && col < n)
		c[(size_t)row * n + col] = acc;
}

int reference(const void *pv, const void *const in[], void *exp, void *)
{
	const struct params *p = (const struct params *)pv;
	dim3 block(kT, kT), grid((p->n + kT - 1) / kT, (p->m + kT - 1) / kT);
	k_ref<<<grid, block>>>((const __half *)in[0], (const __half *)in[1],
			       (float *)exp, p->m, p->n, p->k);
	return -(int)cudaGetLastError();
}

int check(const void *pv, const void *const *, const void *const out[],
	  const void *exp, void *, char *msg, size_t msg_size)
{
	const struct params *p = (const struct params *)pv;
	struct kbh_mismatch m;
	int rc = kbg_close_f16(out[0], (const float *)exp, (size_t)p->m * p->n,
			       1e-3, 1e-3 * sqrt((double)p->k) / 3.0, &m);
	if (rc)
		return rc;
	if (m.count) {
		kbg_mismatch_msg(&m, "c", msg, msg_size);
		return 1;
	}
	return 0;
}

void call(const void *pv, void *const in[], void *const out[])
{
	const struct params *p = (const struct params *)pv;
	KBH_ENTRY(custom_kernel)
	((const __half *)in[0], (const __half *)in[1], (__half *)out[0], p->m,
	 p->n, p->k);
}

} // namespace

KBG_PROBLEM_DEF = {
	"matmul", sizeof(struct params),
	keys,     setup,
	generate, reference,
	check,    call,
};
