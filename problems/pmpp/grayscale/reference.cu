/* grayscale: the problem definition for the GPU driver (kbg.h).
 *
 * Channels uniform in [0, 1). The reference computes in double and rounds
 * once; the check accepts |gray - Y| <= 1e-5 + 1e-5 |Y| (fp32 arithmetic
 * in any order is within a few ulp, ~2e-7; fp16 arithmetic is not).
 * Cost: 16 bytes per pixel (12 read, 4 written); no flops bound.
 */
#include "kbg.h"
#include "task.h"

#include <errno.h>
#include <stdio.h>

namespace
{

struct params {
	int h, w;
	size_t pixels;
};

const char *const keys[] = {"height", "width", NULL};

int setup(const struct kbh_case *c, void *pv, struct kbg_layout *l, char *err,
	  size_t err_size)
{
	struct params *p = (struct params *)pv;
	uint64_t h, w;

	if (kbh_case_u64(c, "height", 1, 65536, &h, err, err_size) ||
	    kbh_case_u64(c, "width", 1, 65536, &w, err, err_size))
		return -EINVAL;
	p->h = (int)h;
	p->w = (int)w;
	p->pixels = (size_t)h * (size_t)w;
	if (p->pixels > ((size_t)1 << 30)) {
		snprintf(err, err_size, "height x width above 2^30");
		return -EINVAL;
	}
	l->n_in = 1;
	l->in_bytes[0] = 3 * p->pixels * sizeof(float);
	l->n_out = 1;
	l->out_bytes[0] = p->pixels * sizeof(float);
	l->exp_bytes = p->pixels * sizeof(float);
	l->cost.bytes = 16.0 * (double)p->pixels;
	l->ops = KBG_OPS_NONE;
	l->fresh = 1;
	return 0;
}

int generate(const void *pv, uint64_t seed, void *const in[])
{
	const struct params *p = (const struct params *)pv;
	return kbg_gen_f32((float *)in[0], 3 * p->pixels, seed, 0.f, 1.f);
}

__global__ void k_ref(const float *rgb, float *y, size_t n)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		y[i] = (float)(0.2989 * rgb[3 * i] + 0.5870 * rgb[3 * i + 1] +
			       0.1140 * rgb[3 * i + 2]);
}

int reference(const void *pv, const void *const in[], void *exp, void *)
{
	const struct params *p = (const struct params *)pv;
	k_ref<<<kbg_grid(p->pixels), 256>>>((const float *)in[0], (float *)exp,
					    p->pixels);
	return -(int)cudaGetLastError();
}

int check(const void *pv, const void *const *, const void *const out[],
	  const void *exp, void *, char *msg, size_t msg_size)
{
	const struct params *p = (const struct params *)pv;
	struct kbh_mismatch m;
	int rc = kbg_close_f32((const float *)out[0], (const float *)exp, NULL,
			       p->pixels, 1e-5, 1e-5, &m);
	if (rc)
		return rc;
	if (m.count) {
		kbg_mismatch_msg(&m, "gray", msg, msg_size);
		return 1;
	}
	return 0;
}

void call(const void *pv, void *const in[], void *const out[])
{
	const struct params *p = (const struct params *)pv;
	KBH_ENTRY(custom_kernel)
	((const float *)in[0], (float *)out[0], p->h, p->w);
}

} // namespace

KBG_PROBLEM_DEF = {
	"grayscale", sizeof(struct params),
	keys,        setup,
	generate,    reference,
	check,       call,
};
