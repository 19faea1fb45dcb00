/* histogram: 256-bin histogram of bytes.
 *
 *     extern "C" void custom_kernel(const uint8_t *data, uint32_t *bins,
 *                                   size_t n);
 *
 * bins[v] = number of i < n with data[i] == v, for all 256 v. bins holds
 * 0xFFFFFFFF in every bin on entry (zero it before counting). Device
 * pointers; launch on the legacy default stream (0); data is read-only.
 */
#ifndef HISTOGRAM_TASK_H
#define HISTOGRAM_TASK_H

#include <stddef.h>
#include <stdint.h>

extern "C" void custom_kernel(const uint8_t *data, uint32_t *bins, size_t n);

#endif
