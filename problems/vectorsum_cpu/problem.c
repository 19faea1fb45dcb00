/* vectorsum_cpu: the problem's half of the harness (see harness_cpu.h).
 *
 * Contract: float custom_kernel(const float *data, size_t n) returns the sum
 * of data[0..n).
 *
 * Inputs: n floats uniform in [-1, 1) from the case seed. Zero-mean data on
 * purpose: the exact sum is then only ~0.58*sqrt(n), so answers that skip
 * or sample part of the data are far off, while honest float summation
 * stays accurate (see the tolerance below).
 *
 * Reference: Neumaier-compensated double summation, exact to about one
 * double rounding; also the sum of squares for the tolerance.
 *
 * Tolerance: |got - s| <= 8 u n rms + 2 u |s| (u = 2^-24, rms = sqrt of the
 * mean square). Why: plain left-to-right float summation, the least
 * accurate order anyone should use, commits one rounding of relative size
 * <= u per addition on a partial sum S_k; with independent rounding errors
 * the total has standard deviation about u sqrt(sum S_k^2 / 3), and for
 * zero-mean data S_k^2 ~ k rms^2, giving ~0.41 u n rms. 8 u n rms is ~20
 * of those standard deviations, so no correct float summation (blocked,
 * pairwise, multi-accumulator, per-thread partials, all more accurate) is
 * ever rejected, and 2 u |s| covers the final rounding to float. A
 * submission dropping even a few elements, or sampling half the data
 * (error ~ 0.58 sqrt(n/2)), exceeds it by orders of magnitude for every n
 * we use.
 *
 * Fresh data per call (vary): a cyclic rotation of a base set and a scale
 * by +-2^e, e in {-1, 0, 1}: exact in float, and the expected sum follows
 * exactly.
 */
#include <math.h>
#include <stdio.h>

#include "harness_cpu.h"

float custom_kernel(const float *data, size_t n);

#define VS_MAX_N ((uint64_t)1 << 27)

struct vs_params {
	size_t n;
};

struct vs_exp {
	double sum;
	double sumsq;
};

static const char *const vs_keys[] = {"size", NULL};

static int vs_setup(const struct kbh_case *c, void *params,
		    struct kbh_cpu_layout *lay, char *err, size_t err_size)
{
	struct vs_params *p = params;
	uint64_t n;
	if (kbh_case_u64(c, "size", 1, VS_MAX_N, &n, err, err_size))
		return -1;
	p->n = (size_t)n;
	lay->n_in = 1;
	lay->in_bytes[0] = p->n * sizeof(float);
	lay->out_bytes = sizeof(float);
	lay->exp_bytes = sizeof(struct vs_exp);
	return 0;
}

static void vs_generate(const void *params, uint64_t seed, void *const in[])
{
	const struct vs_params *p = params;
	float *x = in[0];
	struct kbh_rng r;
	kbh_rng_seed(&r, seed);
	for (size_t i = 0; i < p->n; i++)
		x[i] = kbh_rng_uniformf(&r, -1.0f, 1.0f);
}

static void vs_reference(const void *params, const void *const in[], void *exp)
{
	const struct vs_params *p = params;
	const float *x = in[0];
	double s = 0, comp = 0, sq = 0;
	for (size_t i = 0; i < p->n; i++) {
		double v = x[i], t = s + v;
		/* Neumaier: recover the low part lost by the addition */
		comp += fabs(s) >= fabs(v) ? (s - t) + v : (v - t) + s;
		s = t;
		sq += v * v;
	}
	struct vs_exp *e = exp;
	e->sum = s + comp;
	e->sumsq = sq;
}

static void vs_vary(const void *params, uint64_t seed,
		    const void *const base_in[], const void *base_exp,
		    void *const in[], void *exp)
{
	const struct vs_params *p = params;
	const float *src = base_in[0];
	float *dst = in[0];
	struct kbh_rng r;
	kbh_rng_seed(&r, seed);
	size_t rot = (size_t)kbh_rng_below(&r, p->n);
	static const float scales[] = {0.5f, 1.0f, 2.0f};
	float sc = scales[kbh_rng_below(&r, 3)];
	if (kbh_rng_u64(&r) & 1)
		sc = -sc;
	size_t head = p->n - rot;
	for (size_t i = 0; i < head; i++)
		dst[i] = sc * src[rot + i];
	for (size_t i = 0; i < rot; i++)
		dst[head + i] = sc * src[i];
	const struct vs_exp *be = base_exp;
	struct vs_exp *e = exp;
	e->sum = (double)sc * be->sum;
	e->sumsq = (double)sc * (double)sc * be->sumsq;
}

static void vs_call(const void *params, void *const in[], void *out)
{
	const struct vs_params *p = params;
	*(float *)out = KBH_ENTRY(custom_kernel)((const float *)in[0], p->n);
}

static int vs_check(const void *params, const void *exp, const void *out,
		    char *msg, size_t msg_size)
{
	const struct vs_params *p = params;
	const struct vs_exp *e = exp;
	const double u = 0x1.0p-24;
	double got = *(const float *)out;
	double rms = kbh_sqrt(e->sumsq / (double)p->n);
	double tol = 8.0 * u * (double)p->n * rms + 2.0 * u * fabs(e->sum);
	if (isfinite(got) && fabs(got - e->sum) <= tol)
		return 0;
	snprintf(msg, msg_size,
		 "sum of %zu floats: got %.9g, expected %.9g "
		 "(|difference| %.3g > tolerance %.3g)",
		 p->n, got, e->sum, fabs(got - e->sum), tol);
	return 1;
}

static void vs_cost(const void *params, struct kbh_cost *c)
{
	const struct vs_params *p = params;
	c->bytes = (double)p->n * sizeof(float);
	c->flops = (double)p->n;
}

const struct kbh_cpu_problem kbh_cpu_problem_def = {
	.name = "vectorsum_cpu",
	.params_size = sizeof(struct vs_params),
	.keys = vs_keys,
	.in_names = {"data"},
	.setup = vs_setup,
	.generate = vs_generate,
	.reference = vs_reference,
	.vary = vs_vary,
	.call = vs_call,
	.check = vs_check,
	.cost = vs_cost,
	/* .limits: the driver defaults (harness_cpu.c) fit this problem */
};
