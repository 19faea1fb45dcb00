/* vectorsum: the problem definition for the GPU driver (kbg.h).
 *
 * Data uniform in [-1, 1): zero mean on purpose. The exact sum is then only
 * about 0.58 sqrt(n), and every partial sum stays small, so honest fp32
 * summation in any order is accurate, while a kernel that skips or samples
 * part of the input is off by that part's own sum (~0.58 sqrt(skipped)):
 * with data in [0, 1) and a tolerance wide enough for fp32 atomics on a
 * growing positive sum, summing half the data and adding the known mean for
 * the rest passed (tests/hostile/cuda/estimate_sum.cu).
 *
 * The reference sums x and x^2 in double. Tolerance, as in vectorsum_cpu:
 * |out - sum| <= 8 u sqrt(n sum x^2) + 2 u |sum| (u = 2^-24). Left-to-right
 * fp32 summation, the least accurate order, has a rounding error of about
 * 0.41 u n rms on zero-mean data; 8 u n rms is ~20 of its standard
 * deviations (tree, blocked, per-thread and atomic orders are all more
 * accurate), and 2 u |sum| covers the final rounding. At n = 2^28 the
 * tolerance is about 74; skipping 2^14 elements costs an error of that size
 * on average, skipping half of them about 6.7e3.
 * Cost: 4n + 4 bytes; no flops bound.
 */
#include "kbg.h"
#include "task.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>

namespace
{

struct params {
	size_t n;
};

const char *const keys[] = {"size", NULL};

int setup(const struct kbh_case *c, void *pv, struct kbg_layout *l, char *err,
	  size_t err_size)
{
	struct params *p = (struct params *)pv;
	uint64_t n;

	if (kbh_case_u64(c, "size", 1, (uint64_t)1 << 31, &n, err, err_size))
		return -EINVAL;
	p->n = (size_t)n;
	l->n_in = 1;
	l->in_bytes[0] = p->n * sizeof(float);
	l->n_out = 1;
	l->out_bytes[0] = sizeof(float);
	l->exp_bytes = 2 * sizeof(double);
	l->cost.bytes = 4.0 * (double)p->n + 4.0;
	l->ops = KBG_OPS_NONE;
	l->fresh = 1;
	return 0;
}

int generate(const void *pv, uint64_t seed, void *const in[])
{
	const struct params *p = (const struct params *)pv;
	return kbg_gen_f32((float *)in[0], p->n, seed, -1.f, 1.f);
}

/* exp[0] = sum x, exp[1] = sum x^2, in double: per-thread sums, a block
 * reduction, one atomicAdd per block. */
__global__ void k_ref(const float *x, size_t n, double *exp)
{
	__shared__ double s0[256], s1[256];
	double a = 0, b = 0;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		a += x[i];
		b += (double)x[i] * x[i];
	}
	s0[threadIdx.x] = a;
	s1[threadIdx.x] = b;
	__syncthreads();
	for (unsigned o = blockDim.x / 2; o > 0; o >>= 1) {
		if (threadIdx.x < o) {
			s0[threadIdx.x] += s0[threadIdx.x + o];
			s1[threadIdx.x] += s1[threadIdx.x + o];
		}
		__syncthreads();
	}
	if (threadIdx.x == 0) {
		atomicAdd(&exp[0], s0[0]);
		atomicAdd(&exp[1], s1[0]);
	}
}

int reference(const void *pv, const void *const in[], void *exp, void *)
{
	const struct params *p = (const struct params *)pv;
	cudaError_t e = cudaMemsetAsync(exp, 0, 2 * sizeof(double), 0);
	if (e != cudaSuccess)
		return -(int)e;
	k_ref<<<kbg_grid(p->n), 256>>>((const float *)in[0], p->n,
				       (double *)exp);
	return -(int)cudaGetLastError();
}

int check(const void *pv, const void *const *, const void *const out[],
	  const void *exp, void *, char *msg, size_t msg_size)
{
	const struct params *p = (const struct params *)pv;
	float got;
	double want[2];
	cudaError_t e;

	if ((e = cudaMemcpy(&got, out[0], sizeof got,
			    cudaMemcpyDeviceToHost)) ||
	    (e = cudaMemcpy(want, exp, sizeof want, cudaMemcpyDeviceToHost)))
		return -(int)e;
	const double u = 0x1p-24;
	double tol =
		8 * u * sqrt((double)p->n * want[1]) + 2 * u * fabs(want[0]);
	if (!isfinite(got) || !(fabs((double)got - want[0]) <= tol)) {
		snprintf(msg, msg_size,
			 "sum of %zu elements: got %.9g, expected %.9g "
			 "(tolerance %.3g)",
			 p->n, (double)got, want[0], tol);
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
	"vectorsum", sizeof(struct params),
	keys,        setup,
	generate,    reference,
	check,       call,
};
