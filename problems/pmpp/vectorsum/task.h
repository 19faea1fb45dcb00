/* vectorsum: *out = sum of data[0..n), fp32.
 *
 *     extern "C" void custom_kernel(const float *data, float *out, size_t n);
 *
 * data and out are device pointers; out points to one float, which holds
 * NaN on entry (initialise it before accumulating into it). Launch on the
 * legacy default stream (stream 0). data is read-only.
 */
#ifndef VECTORSUM_TASK_H
#define VECTORSUM_TASK_H

#include <stddef.h>

extern "C" void custom_kernel(const float *data, float *out, size_t n);

#endif
