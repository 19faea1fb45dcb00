/* sort: sort n floats ascending.
 *
 *     extern "C" void custom_kernel(const float *in, float *out, size_t n);
 *
 * out must hold the elements of in in ascending order (bitwise: every
 * value exactly as it appears in in). Device pointers; launch on the
 * legacy default stream (0); in is read-only (sort into out, or into
 * scratch you allocate and keep between calls).
 */
#ifndef SORT_TASK_H
#define SORT_TASK_H

#include <stddef.h>

extern "C" void custom_kernel(const float *in, float *out, size_t n);

#endif
