/* vectorsum: the problem definition for the GPU driver (kbg.h).
 *
 * Data uniform in [0, 1) (all positive, so a kernel that skips part of the
 * input is off by that part's whole sum). The reference sums in double and
 * also sums |x|; the check accepts |out - sum| <= 1e-4 * sum|x| + 1e-5,
 * about ten standard deviations of the rounding error of an fp32 tree or
 * per-block atomic reduction at 2^28 elements (one fp32 accumulator for
 * everything drifts far more, and fails, as it should).
 * Cost: 4n + 4 bytes; no flops bound.
 */
#include "kbg.h"
#include "task.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>

namespace {

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
	return kbg_gen_f32((float *)in[0], p->n, seed, 0.f, 1.f);
}

/* exp[0] = sum x, exp[1] = sum |x|, in double: per-thread sums, a block
 * reduction, one atomicAdd per block. */
__global__ void k_ref(const float *x, size_t n, double *exp)
{
	__shared__ double s0[256], s1[256];
	double a = 0, b = 0;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		a += x[i];
		b += fabs((double)x[i]);
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

	if ((e = cudaMemcpy(&got, out[0], sizeof got, cudaMemcpyDeviceToHost)) ||
	    (e = cudaMemcpy(want, exp, sizeof want, cudaMemcpyDeviceToHost)))
		return -(int)e;
	double tol = 1e-4 * want[1] + 1e-5;
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
	custom_kernel((const float *)in[0], (float *)out[0], p->n);
}

} // namespace

extern "C" const struct kbg_problem kbg_problem_def = {
	"vectorsum", sizeof(struct params), keys, setup, generate, reference,
	check,       call,
};
