/* prefixsum: inclusive prefix sum, fp32.
 *
 *     extern "C" void custom_kernel(const float *in, float *out, size_t n);
 *
 * out[i] = in[0] + in[1] + ... + in[i] for all i < n. Device pointers;
 * launch on the legacy default stream (0); in is read-only.
 */
#ifndef PREFIXSUM_TASK_H
#define PREFIXSUM_TASK_H

#include <stddef.h>

extern "C" void custom_kernel(const float *in, float *out, size_t n);

#endif
