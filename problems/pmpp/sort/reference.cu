/* sort: the problem definition for the GPU driver (kbg.h).
 *
 * Data: (u - 1/2) * 2^e with u a 24-bit uniform in [0, 1) and e uniform
 * in [-20, 20]: signs, many exponents, and duplicates at large n; never
 * NaN, infinity or -0.0, so the sorted order is unique bitwise.
 *
 * The check needs no reference sort: out is sorted (out[i] <= out[i+1],
 * which NaN fails) and out is a permutation of in, tested with two
 * independent order-free 64-bit hashes of the multiset of bit patterns
 * (sum of kbh_hash_u64(key, bits) mod 2^64). Sorted + same multiset means
 * out equals the sorted input bitwise (up to a 2^-128 hash accident).
 * The reference only hashes the input.
 * Cost: 8n bytes (read once, write once): the floor; no flops bound.
 */
#include "kbg.h"
#include "task.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

namespace
{

const uint64_t kKey1 = 0x243f6a8885a308d3ull, kKey2 = 0x13198a2e03707344ull;

struct params {
	size_t n;
};

/* Scratch: the output's hashes and the sortedness record. */
struct sort_res {
	unsigned long long h1, h2, bad, first;
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
	l->n_in = 1;
	l->in_bytes[0] = p->n * sizeof(float);
	l->n_out = 1;
	l->out_bytes[0] = p->n * sizeof(float);
	l->exp_bytes = 2 * sizeof(unsigned long long);
	l->scratch_bytes = sizeof(struct sort_res);
	l->cost.bytes = 8.0 * (double)p->n;
	l->ops = KBG_OPS_NONE;
	l->fresh = 1;
	return 0;
}

__global__ void k_gen(float *x, size_t n, uint64_t seed)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		uint64_t h = kbh_hash_u64(seed, i);
		float u = (float)(h >> 40) * (1.0f / 16777216.0f);
		int e = (int)((h & 0xffff) % 41) - 20;
		x[i] = ldexpf(u - 0.5f, e);
	}
}

int generate(const void *pv, uint64_t seed, void *const in[])
{
	const struct params *p = (const struct params *)pv;
	k_gen<<<kbg_grid(p->n), 256>>>((float *)in[0], p->n, seed);
	return -(int)cudaGetLastError();
}

/* Hashes x into r->h1/h2; with check_sorted, also counts i with
 * !(x[i] <= x[i+1]) and the first such i. */
__global__ void k_scan(const float *x, size_t n, int check_sorted,
		       struct sort_res *r)
{
	unsigned long long h1 = 0, h2 = 0, bad = 0, first = ~0ull;
	size_t stride = (size_t)gridDim.x * blockDim.x;
	size_t iters = (n + stride - 1) / stride;
	for (size_t k = 0, i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	     k < iters; k++, i += stride) {
		if (i >= n)
			continue;
		uint32_t bits = __float_as_uint(x[i]);
		h1 += kbh_hash_u64(kKey1, bits);
		h2 += kbh_hash_u64(kKey2, bits);
		if (check_sorted && i + 1 < n && !(x[i] <= x[i + 1])) {
			bad++;
			if (i < first)
				first = i;
		}
	}
	for (int o = 16; o > 0; o >>= 1) {
		h1 += KBG_SHFL_DOWN(h1, o);
		h2 += KBG_SHFL_DOWN(h2, o);
		bad += KBG_SHFL_DOWN(bad, o);
		unsigned long long f = KBG_SHFL_DOWN(first, o);
		first = f < first ? f : first;
	}
	if ((threadIdx.x & 31) == 0) {
		atomicAdd(&r->h1, h1);
		atomicAdd(&r->h2, h2);
		if (bad) {
			atomicAdd(&r->bad, bad);
			atomicMin(&r->first, first);
		}
	}
}

int scan(const float *x, size_t n, int check_sorted, struct sort_res *r)
{
	struct sort_res init = {0, 0, 0, ~0ull};
	cudaError_t e = cudaMemcpyAsync(r, &init, sizeof init,
					cudaMemcpyHostToDevice, 0);
	if (e != cudaSuccess)
		return -(int)e;
	k_scan<<<kbg_grid(n), 256>>>(x, n, check_sorted, r);
	return -(int)cudaGetLastError();
}

int reference(const void *pv, const void *const in[], void *exp, void *scratch)
{
	const struct params *p = (const struct params *)pv;
	struct sort_res *r = (struct sort_res *)scratch;
	int rc = scan((const float *)in[0], p->n, 0, r);
	if (rc)
		return rc;
	cudaError_t e = cudaMemcpyAsync(exp, r, 2 * sizeof(unsigned long long),
					cudaMemcpyDeviceToDevice, 0);
	return -(int)e;
}

int check(const void *pv, const void *const *, const void *const out[],
	  const void *exp, void *scratch, char *msg, size_t msg_size)
{
	const struct params *p = (const struct params *)pv;
	const float *o = (const float *)out[0];
	struct sort_res got;
	unsigned long long want[2];
	cudaError_t e;
	int rc = scan(o, p->n, 1, (struct sort_res *)scratch);

	if (rc)
		return rc;
	if ((e = cudaMemcpy(&got, scratch, sizeof got,
			    cudaMemcpyDeviceToHost)) ||
	    (e = cudaMemcpy(want, exp, sizeof want, cudaMemcpyDeviceToHost)))
		return -(int)e;
	if (got.bad) {
		float v[2] = {0, 0};
		if ((e = cudaMemcpy(v, o + got.first, 2 * sizeof(float),
				    cudaMemcpyDeviceToHost)))
			return -(int)e;
		snprintf(msg, msg_size,
			 "not sorted: %llu descents; first at index %llu: "
			 "%.9g > %.9g",
			 got.bad, got.first, (double)v[0], (double)v[1]);
		return 1;
	}
	if (got.h1 != want[0] || got.h2 != want[1]) {
		snprintf(msg, msg_size,
			 "sorted, but not a permutation of the input (the "
			 "multiset hashes differ): values lost, duplicated or "
			 "altered");
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
	"sort", sizeof(struct params), keys, setup, generate, reference, check,
	call,
};
