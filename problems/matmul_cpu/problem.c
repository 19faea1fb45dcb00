/* matmul_cpu: the problem's half of the harness (see harness_cpu.h).
 *
 * Contract: void custom_kernel(const float *a, const float *b, float *c,
 * int n) sets c = a.b for row-major n x n matrices.
 *
 * Inputs: a and b uniform in [-1, 1) from the case seed; c is filled with
 * NaN before every call, so an element left unwritten (or accumulated into
 * with +=) fails.
 *
 * Reference: the product in double (a float product of two floats is exact
 * in double, and n <= 2048 terms add ~n double roundings, far below float
 * resolution), plus the row norms |a_i| and column norms |b_j| (2-norms).
 *
 * Tolerance: |c_ij - ref_ij| <= gamma_n |a_i| |b_j| + u |ref_ij|, with
 * u = 2^-24 and gamma_n = n u / (1 - n u). Why: for a dot product of length
 * n computed in float in ANY order, with or without FMA, the classical
 * bound is |error| <= gamma_n sum_k |a_ik b_kj| (Higham, Accuracy and
 * Stability, 3.1), and by Cauchy-Schwarz sum_k |a_ik b_kj| <= |a_i| |b_j|;
 * u |ref| covers the final rounding. So every correct fp32 algorithm
 * (blocked, vectorised, split-k, multithreaded) passes by construction,
 * while a missing, doubled or misplaced term (about |a_ik b_kj| ~ 0.25,
 * against a tolerance of ~n^2 u / 3, i.e. 5e-3 at n = 512) or reduced
 * precision (bf16 inputs: ~2^-8 per term) fails.
 *
 * Fresh data per call (vary): rows of a permuted and sign-flipped, columns
 * of b permuted and sign-flipped, each matrix scaled by 2^e, e in {-1, 0,
 * 1}. All exact in float; then c' = D1 P c Q D2 s1 s2 exactly, and the
 * norms permute and scale along, so the expected result of every call
 * costs O(n^2) instead of a new O(n^3) reference.
 */
#include <stdio.h>

#include "harness_cpu.h"

void custom_kernel(const float *a, const float *b, float *c, int n);

#define MM_MAX_N 2048

struct mm_params {
	int n;
};

/* Expected result: ref[n*n], then rn[n] (row norms of a), then cn[n]
 * (column norms of b), all double. */
static double *mm_ref(const struct mm_params *p, void *exp)
{
	(void)p;
	return exp;
}

static double *mm_rn(const struct mm_params *p, void *exp)
{
	return (double *)exp + (size_t)p->n * (size_t)p->n;
}

static double *mm_cn(const struct mm_params *p, void *exp)
{
	return (double *)exp + (size_t)p->n * (size_t)p->n + (size_t)p->n;
}

static const char *const mm_keys[] = {"size", NULL};

static int mm_setup(const struct kbh_case *c, void *params,
		    struct kbh_cpu_layout *lay, char *err, size_t err_size)
{
	struct mm_params *p = params;
	uint64_t n;
	if (kbh_case_u64(c, "size", 1, MM_MAX_N, &n, err, err_size))
		return -1;
	p->n = (int)n;
	size_t nn = (size_t)n * (size_t)n;
	lay->n_in = 2;
	lay->in_bytes[0] = nn * sizeof(float);
	lay->in_bytes[1] = nn * sizeof(float);
	lay->out_bytes = nn * sizeof(float);
	lay->exp_bytes = (nn + 2 * (size_t)n) * sizeof(double);
	return 0;
}

static void mm_generate(const void *params, uint64_t seed, void *const in[])
{
	const struct mm_params *p = params;
	size_t nn = (size_t)p->n * (size_t)p->n;
	struct kbh_rng r;
	kbh_rng_seed(&r, seed);
	for (int m = 0; m < 2; m++) {
		float *x = in[m];
		for (size_t i = 0; i < nn; i++)
			x[i] = kbh_rng_uniformf(&r, -1.0f, 1.0f);
	}
}

static void mm_reference(const void *params, const void *const in[], void *exp)
{
	const struct mm_params *p = params;
	const int n = p->n;
	const float *a = in[0], *b = in[1];
	double *ref = mm_ref(p, exp), *rn = mm_rn(p, exp), *cn = mm_cn(p, exp);
#pragma omp parallel for schedule(static)
	for (int i = 0; i < n; i++) {
		double *ci = ref + (size_t)i * n;
		for (int j = 0; j < n; j++)
			ci[j] = 0.0;
		for (int k = 0; k < n; k++) {
			double aik = a[(size_t)i * n + k];
			const float *bk = b + (size_t)k * n;
			for (int j = 0; j < n; j++)
				ci[j] += aik * (double)bk[j];
		}
	}
	for (int i = 0; i < n; i++) {
		double s = 0;
		for (int k = 0; k < n; k++) {
			double v = a[(size_t)i * n + k];
			s += v * v;
		}
		rn[i] = kbh_sqrt(s);
	}
	for (int j = 0; j < n; j++)
		cn[j] = 0.0;
	for (int k = 0; k < n; k++)
		for (int j = 0; j < n; j++) {
			double v = b[(size_t)k * n + j];
			cn[j] += v * v;
		}
	for (int j = 0; j < n; j++)
		cn[j] = kbh_sqrt(cn[j]);
}

/* Random permutation of 0..n-1 (Fisher-Yates) with random signs. */
static void mm_perm(struct kbh_rng *r, int n, int *perm, float *sign)
{
	for (int i = 0; i < n; i++)
		perm[i] = i;
	for (int i = n - 1; i > 0; i--) {
		int j = (int)kbh_rng_below(r, (uint64_t)i + 1);
		int t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	for (int i = 0; i < n; i++)
		sign[i] = (kbh_rng_u64(r) & 1) ? -1.0f : 1.0f;
}

static void mm_vary(const void *params, uint64_t seed,
		    const void *const base_in[], const void *base_exp,
		    void *const in[], void *exp)
{
	const struct mm_params *p = params;
	const int n = p->n;
	static int pr[MM_MAX_N], pc[MM_MAX_N];
	static float sr[MM_MAX_N], sc[MM_MAX_N];
	static const float scales[] = {0.5f, 1.0f, 2.0f};
	struct kbh_rng r;
	kbh_rng_seed(&r, seed);
	mm_perm(&r, n, pr, sr);
	mm_perm(&r, n, pc, sc);
	float s1 = scales[kbh_rng_below(&r, 3)];
	float s2 = scales[kbh_rng_below(&r, 3)];

	const float *a = base_in[0], *b = base_in[1];
	float *a2 = in[0], *b2 = in[1];
	/* a'[i][:] = s1 sr_i a[pr_i][:];  b'[:][j] = s2 sc_j b[:][pc_j] */
	for (int i = 0; i < n; i++) {
		const float *src = a + (size_t)pr[i] * n;
		float *dst = a2 + (size_t)i * n;
		float f = s1 * sr[i];
		for (int k = 0; k < n; k++)
			dst[k] = f * src[k];
	}
	for (int k = 0; k < n; k++) {
		const float *src = b + (size_t)k * n;
		float *dst = b2 + (size_t)k * n;
		for (int j = 0; j < n; j++)
			dst[j] = s2 * sc[j] * src[pc[j]];
	}
	/* c'[i][j] = s1 s2 sr_i sc_j c[pr_i][pc_j] */
	const double *ref = mm_ref(p, (void *)base_exp);
	const double *rn = mm_rn(p, (void *)base_exp);
	const double *cn = mm_cn(p, (void *)base_exp);
	double *ref2 = mm_ref(p, exp), *rn2 = mm_rn(p, exp),
	       *cn2 = mm_cn(p, exp);
	double s12 = (double)s1 * (double)s2;
	for (int i = 0; i < n; i++) {
		const double *src = ref + (size_t)pr[i] * n;
		double *dst = ref2 + (size_t)i * n;
		double f = s12 * sr[i];
		for (int j = 0; j < n; j++)
			dst[j] = f * sc[j] * src[pc[j]];
	}
	for (int i = 0; i < n; i++)
		rn2[i] = (double)s1 * rn[pr[i]];
	for (int j = 0; j < n; j++)
		cn2[j] = (double)s2 * cn[pc[j]];
}

static void mm_call(const void *params, void *const in[], void *out)
{
	const struct mm_params *p = params;
	KBH_ENTRY(custom_kernel)
	((const float *)in[0], (const float *)in[1], (float *)out, p->n);
}

static int mm_check(const void *params, const void *exp, const void *out,
		    char *msg, size_t msg_size)
{
	const struct mm_params *p = params;
	const int n = p->n;
	const float *c = out;
	const double *ref = mm_ref(p, (void *)exp);
	const double *rn = mm_rn(p, (void *)exp);
	const double *cn = mm_cn(p, (void *)exp);
	const double u = 0x1.0p-24;
	const double gamma = n * u / (1.0 - n * u);
	size_t bad = 0, first = 0;
	double first_tol = 0;
	for (int i = 0; i < n; i++) {
		for (int j = 0; j < n; j++) {
			size_t idx = (size_t)i * n + j;
			double want = ref[idx], got = c[idx];
			double tol = gamma * rn[i] * cn[j] +
				     u * (want < 0 ? -want : want);
			double d = got - want;
			if (!(d <= tol && -d <= tol)) { /* NaN fails too */
				if (!bad) {
					first = idx;
					first_tol = tol;
				}
				bad++;
			}
		}
	}
	if (!bad)
		return 0;
	snprintf(msg, msg_size,
		 "%zu of %zu elements of c wrong; first c[%zu][%zu] = %.9g, "
		 "expected %.9g (tolerance %.3g)",
		 bad, (size_t)n * n, first / (size_t)n, first % (size_t)n,
		 (double)c[first], ref[first], first_tol);
	return 1;
}

static void mm_cost(const void *params, struct kbh_cost *c)
{
	const struct mm_params *p = params;
	double n = p->n;
	c->bytes = 3.0 * n * n * sizeof(float);
	c->flops = 2.0 * n * n * n;
}

const struct kbh_cpu_problem kbh_cpu_problem_def = {
	.name = "matmul_cpu",
	.params_size = sizeof(struct mm_params),
	.keys = mm_keys,
	.in_names = {"a", "b"},
	.setup = mm_setup,
	.generate = mm_generate,
	.reference = mm_reference,
	.vary = mm_vary,
	.call = mm_call,
	.check = mm_check,
	.cost = mm_cost,
	/* .limits: the driver defaults (harness_cpu.c) fit this problem */
};
