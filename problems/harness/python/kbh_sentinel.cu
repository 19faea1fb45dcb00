/* kbh_sentinel.cu: the source of kbh_sentinel.ptx, the sentinel kernel the
 * Python harness's parent loads through the CUDA driver API
 * (kbh_sentinel.py). The kernel is the CUDA driver's own
 * (../cuda/kbg_sent.cuh); this file only gives it a C name. Regenerate
 * the PTX with scripts/gen-sentinel-ptx.sh (the test py_sentinel_ptx
 * fails when it is stale).
 */
#include "../cuda/kbg_api.h"
#include "../cuda/kbg_dev.h"
#include "../cuda/kbg_sent.cuh"

extern "C" __global__ void kbh_sentinel(kbg_sent_ctl *c, unsigned seq,
					int watch, unsigned long long gap_ns,
					unsigned long long not_before,
					unsigned long long sw_ns)
{
	kbg_sentinel(c, seq, watch, gap_ns, not_before, sw_ns);
}
