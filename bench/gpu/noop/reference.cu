/* noop: see task.h. Fixed data sets (fresh = 0), so a sample costs only
 * the harness's staging (copy, poison), the L2 flush, the events, the
 * synchronisation and the (trivial) check. */
#include "kbg.h"
#include "task.h"

#include <errno.h>

namespace
{

struct params {
	int unused;
};

const char *const keys[] = {NULL};

int setup(const struct kbh_case *, void *, struct kbg_layout *l, char *, size_t)
{
	l->n_in = 1;
	l->in_bytes[0] = 256;
	l->n_out = 1;
	l->out_bytes[0] = 256;
	l->exp_bytes = 4;
	l->ops = KBG_OPS_NONE;
	l->fresh = 0;
	l->sets = 1;
	return 0;
}

int generate(const void *, uint64_t seed, void *const in[])
{
	return kbg_gen_bytes(in[0], 256, seed);
}

int reference(const void *, const void *const *, void *, void *)
{
	return 0;
}

int check(const void *, const void *const *, const void *const *, const void *,
	  void *, char *, size_t)
{
	return 0;
}

void call(const void *, void *const in[], void *const out[])
{
	KBH_ENTRY(custom_kernel)(in[0], out[0]);
}

} // namespace

KBG_PROBLEM_DEF = {
	"noop", sizeof(struct params), keys, setup, generate, reference, check,
	call,
};
