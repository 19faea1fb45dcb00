/* conv2d: the problem definition for the GPU driver (kbg.h).
 *
 * Inputs and weights uniform in [-1, 1). The reference accumulates in
 * double. Check: |out - ref| <= 1e-4 (|ref| + sqrt(C K^2) / 3), where
 * sqrt(C K^2)/3 is the typical output magnitude: fp32 accumulation in any
 * order, Winograd or FFT in fp32, and error-compensated tf32 pass; plain
 * tf32 or fp16 tensor-core arithmetic (errors near 1e-3 of that magnitude)
 * does not.
 * Cost: inputs and output once (bytes); flops 2 B C^2 K^2 O^2 reported as
 * TFLOP/s but not used for the floor, since Winograd and FFT algorithms
 * legitimately do fewer operations than the direct convolution.
 * Data sets are made once per case (4, drawn at random for each call):
 * the double-precision reference is too slow to rerun per call.
 */
#include "kbg.h"
#include "task.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>

namespace
{

struct params {
	int b, c, s, k, o;
	size_t n_in, n_w, n_out;
};

const char *const keys[] = {"batch", "channels", "size", "ksize", NULL};

int setup(const struct kbh_case *cs, void *pv, struct kbg_layout *l, char *err,
	  size_t err_size)
{
	struct params *p = (struct params *)pv;
	uint64_t b, c, s, k;

	if (kbh_case_u64(cs, "batch", 1, 64, &b, err, err_size) ||
	    kbh_case_u64(cs, "channels", 1, 512, &c, err, err_size) ||
	    kbh_case_u64(cs, "size", 1, 8192, &s, err, err_size) ||
	    kbh_case_u64(cs, "ksize", 1, 31, &k, err, err_size))
		return -EINVAL;
	if (k > s) {
		snprintf(err, err_size, "ksize %llu exceeds size %llu",
			 (unsigned long long)k, (unsigned long long)s);
		return -EINVAL;
	}
	p->b = (int)b, p->c = (int)c, p->s = (int)s, p->k = (int)k;
	p->o = p->s - p->k + 1;
	p->n_in = (size_t)b * c * s * s;
	p->n_w = (size_t)c * c * k * k;
	p->n_out = (size_t)b * c * p->o * p->o;
	if (p->n_in > ((size_t)1 << 30)) {
		snprintf(err, err_size, "input above 2^30 elements");
		return -EINVAL;
	}
	l->n_in = 2;
	l->in_bytes[0] = p->n_in * sizeof(float);
	l->in_bytes[1] = p->n_w * sizeof(float);
	l->n_out = 1;
	l->out_bytes[0] = p->n_out * sizeof(float);
	l->exp_bytes = p->n_out * sizeof(float);
	l->cost.bytes =
		4.0 * ((double)p->n_in + (double)p->n_w + (double)p->n_out);
	l->cost.flops = 2.0 * (double)p->n_out * p->c * p->k * p->k;
	l->ops = KBG_OPS_FP32;
	l->min_work = 0;
	l->fresh = 0;
	l->sets = 4;
	return 0;
}

int generate(const void *pv, uint64_t seed, void *const in[])
{
	const struct params *p = (const struct params *)pv;
	int rc = kbg_gen_f32((float *)in[0], p->n_in,
			     kbh_seed_derive(seed, 0, 0), -1.f, 1.f);
	return rc ? rc
		  : kbg_gen_f32((float *)in[1], p->n_w,
				kbh_seed_derive(seed, 0, 1), -1.f, 1.f);
}

__global__ void k_ref(const float *in, const float *w, float *out,
		      struct params p)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	     i < p.n_out; i += (size_t)gridDim.x * blockDim.x) {
		int x = (int)(i % p.o);
		int y = (int)(i / p.o % p.o);
		int co = (int)(i / ((size_t)p.o * p.o) % p.c);
		int b = (int)(i / ((size_t)p.o * p.o * p.c));
		double acc = 0;
		for (int ci = 0; ci < p.c; ci++) {
			const float *src =
				in + (((size_t)b * p.c + ci) * p.s + y) * p.s +
				x;
			const float *wk =
				w + ((size_t)co * p.c + ci) * p.k * p.k;
			for (int ky = 0; ky < p.k; ky++)
				for (int kx = 0; kx < p.k; kx++)
					acc += (double)src[(size_t)ky * p.s +
							   kx] *
					       (double)wk[ky * p.k + kx];
		}
		out[i] = (float)acc;
	}
}

int reference(const void *pv, const void *const in[], void *exp, void *)
{
	const struct params *p = (const struct params *)pv;
	k_ref<<<kbg_grid(p->n_out), 256>>>(
		(const float *)in[0], (const float *)in[1], (float *)exp, *p);
	return -(int)cudaGetLastError();
}

int check(const void *pv, const void *const *, const void *const out[],
	  const void *exp, void *, char *msg, size_t msg_size)
{
	const struct params *p = (const struct params *)pv;
	struct kbh_mismatch m;
	double mag = sqrt((double)p->c * p->k * p->k) / 3.0;
	int rc = kbg_close_f32((const float *)out[0], (const float *)exp, NULL,
			       p->n_out, 1e-4, 1e-4 * mag, &m);
	if (rc)
		return rc;
	if (m.count) {
		kbg_mismatch_msg(&m, "output", msg, msg_size);
		return 1;
	}
	return 0;
}

void call(const void *pv, void *const in[], void *const out[])
{
	const struct params *p = (const struct params *)pv;
	KBH_ENTRY(custom_kernel)
	((const float *)in[0], (const float *)in[1], (float *)out[0], p->b,
	 p->c, p->s, p->k);
}

} // namespace

KBG_PROBLEM_DEF = {
	"conv2d", sizeof(struct params),
	keys,     setup,
	generate, reference,
	check,    call,
};
