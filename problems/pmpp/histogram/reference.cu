/* histogram: the problem definition for the GPU driver (kbg.h).
 *
 * Data: uniform random bytes. The reference counts with per-block shared
 * histograms; the check is bitwise (all 256 counts exact).
 * Cost: n + 1024 bytes; no flops bound.
 */
#include "kbg.h"
#include "task.h"

#include <errno.h>
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

	/* 2^32 - 1 keeps every count representable in uint32. */
	if (kbh_case_u64(c, "size", 1, 0xffffffffull, &n, err, err_size))
		return -EINVAL;
	p->n = (size_t)n;
	l->n_in = 1;
	l->in_bytes[0] = p->n;
	l->n_out = 1;
	l->out_bytes[0] = 256 * sizeof(uint32_t);
	l->exp_bytes = 256 * sizeof(uint32_t);
	l->cost.bytes = (double)p->n + 1024.0;
	l->ops = KBG_OPS_NONE;
	l->fresh = 1;
	return 0;
}

int generate(const void *pv, uint64_t seed, void *const in[])
{
	const struct params *p = (const struct params *)pv;
	return kbg_gen_bytes(in[0], p->n, seed);
}

__global__ void k_ref(const uint8_t *d, size_t n, uint32_t *bins)
{
	__shared__ uint32_t h[256];
	h[threadIdx.x] = 0;
	__syncthreads();
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		atomicAdd(&h[d[i]], 1u);
	__syncthreads();
	if (h[threadIdx.x])
		atomicAdd(&bins[threadIdx.x], h[threadIdx.x]);
}

int reference(const void *pv, const void *const in[], void *exp, void *)
{
	const struct params *p = (const struct params *)pv;
	cudaError_t e = cudaMemsetAsync(exp, 0, 256 * sizeof(uint32_t), 0);
	if (e != cudaSuccess)
		return -(int)e;
	k_ref<<<kbg_grid(p->n), 256>>>((const uint8_t *)in[0], p->n,
				       (uint32_t *)exp);
	return -(int)cudaGetLastError();
}

int check(const void *, const void *const *, const void *const out[],
	  const void *exp, void *, char *msg, size_t msg_size)
{
	struct kbh_mismatch m;
	int rc = kbg_equal_u32((const uint32_t *)out[0], (const uint32_t *)exp,
			       256, &m);
	if (rc)
		return rc;
	if (m.count) {
		snprintf(msg, msg_size,
			 "%zu of 256 bins wrong; first bin %zu: got %.0f, "
			 "expected %.0f",
			 m.count, m.index, m.got, m.want);
		return 1;
	}
	return 0;
}

void call(const void *pv, void *const in[], void *const out[])
{
	const struct params *p = (const struct params *)pv;
	KBH_ENTRY(custom_kernel)
	((const uint8_t *)in[0], (uint32_t *)out[0], p->n);
}

} // namespace

KBG_PROBLEM_DEF = {
	"histogram", sizeof(struct params),
	keys,        setup,
	generate,    reference,
	check,       call,
};
