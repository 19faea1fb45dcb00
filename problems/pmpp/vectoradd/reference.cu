/* vectoradd: the problem definition for the GPU driver (kbg.h).
 *
 * Inputs uniform in [-1, 1) rounded to fp16. The expected result is
 * fp16(a + b) computed in fp32 (exact for two fp16 operands, rounded
 * once), kept as float. Tolerance 1e-3 + 1e-3 |expected|: an fp16 add is
 * correctly rounded, so any correct kernel is within one ulp.
 * Cost: 6n bytes (read a and b, write out); no flops bound.
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

	if (kbh_case_u64(c, "size", 1, (uint64_t)1 << 31, &n, err, err_size))
		return -EINVAL;
	p->n = (size_t)n;
	l->n_in = 2;
	l->in_bytes[0] = l->in_bytes[1] = p->n * sizeof(__half);
	l->n_out = 1;
	l->out_bytes[0] = p->n * sizeof(__half);
	l->exp_bytes = p->n * sizeof(float);
	l->cost.bytes = 6.0 * (double)p->n;
	l->ops = KBG_OPS_NONE;
	l->fresh = 1;
	return 0;
}

int generate(const void *pv, uint64_t seed, void *const in[])
{
	const struct params *p = (const struct params *)pv;
	int rc = kbg_gen_f16(in[0], p->n, kbh_seed_derive(seed, 0, 0), -1.f,
			     1.f);
	return rc ? rc
		  : kbg_gen_f16(in[1], p->n, kbh_seed_derive(seed, 0, 1), -1.f,
				1.f);
}

__global__ void k_ref(const __half *a, const __half *b, float *exp, size_t n)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		exp[i] = __half2float(__float2half_rn(__half2float(a[i]) +
						      __half2float(b[i])));
}

int reference(const void *pv, const void *const in[], void *exp, void *)
{
	const struct params *p = (const struct params *)pv;
	k_ref<<<kbg_grid(p->n), 256>>>((const __half *)in[0],
				       (const __half *)in[1], (float *)exp,
				       p->n);
	return -(int)cudaGetLastError();
}

int check(const void *pv, const void *const *, const void *const out[],
	  const void *exp, void *, char *msg, size_t msg_size)
{
	const struct params *p = (const struct params *)pv;
	struct kbh_mismatch m;
	int rc =
		kbg_close_f16(out[0], (const float *)exp, p->n, 1e-3, 1e-3, &m);
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
	KBH_ENTRY(custom_kernel)
	((const __half *)in[0], (const __half *)in[1], (__half *)out[0], p->n);
}

} // namespace

KBG_PROBLEM_DEF = {
	"vectoradd", sizeof(struct params),
	keys,        setup,
	generate,    reference,
	check,       call,
};
