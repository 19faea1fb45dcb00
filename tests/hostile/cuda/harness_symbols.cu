// harness_symbols (vectoradd, leaderboard mode).
//
// Attempts: to replace the harness's own functions by defining their
// names: the fp16 checker kbg_close_f16 (no mismatch, ever), the input
// comparison kbg_equal_bytes (always equal), the physical-floor test
// kbh_cost_suspect and the side-stream test kbg_outlives (never
// suspect), the stopping rule kbh_stop_check (stop at once) and
// kbg_is_infra_error. custom_kernel itself does nothing: if any of these
// took effect, a submission that computes nothing would pass with a
// near-zero time.
//
// Expected: no effect. The checks run in the harness's parent, which
// never maps the submission (only its child loads it, RTLD_LOCAL): the
// unwritten output fails the check, verdict failed; not ranked.
#include <cuda_fp16.h>
#include <stddef.h>
#include <string.h>

#include "kbg.h"
#include "task.h"

extern "C" {

int kbg_close_f16(const void *, const float *, size_t, double, double,
		  struct kbh_mismatch *m)
{
	memset(m, 0, sizeof(*m));
	return 0;
}

int kbg_equal_bytes(const void *, const void *, size_t n, size_t *first)
{
	*first = n;
	return 0;
}

int kbh_cost_suspect(const struct kbh_cost *, const struct kbh_peak *, double)
{
	return 0;
}

int kbg_outlives(double, double, double)
{
	return 0;
}

enum kbh_stop kbh_stop_check(const struct kbh_stop_rule *,
			     const struct kbh_stats *, uint64_t)
{
	return KBH_STOP_CONVERGED;
}

int kbg_is_infra_error(int)
{
	return 0;
}

void custom_kernel(const __half *a, const __half *b, __half *out, size_t n)
{
	(void)a, (void)b, (void)out, (void)n;
}

} // extern "C"
