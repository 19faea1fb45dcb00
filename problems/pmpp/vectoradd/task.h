/* vectoradd: out[i] = a[i] + b[i] for i < n, fp16 (IEEE binary16).
 *
 * The submission defines, with C linkage:
 *
 *     extern "C" void custom_kernel(const __half *a, const __half *b,
 *                                   __half *out, size_t n);
 *
 * a, b and out are device pointers (cudaMalloc'd, 256-byte aligned,
 * distinct, not overlapping). Launch on the legacy default stream (stream
 * 0) or wait for any other stream before returning. a and b are
 * read-only. Including this header makes the compiler check the
 * signature.
 */
#ifndef VECTORADD_TASK_H
#define VECTORADD_TASK_H

#if defined(__HIP__) || defined(__HIP_PLATFORM_AMD__)
#include <hip/hip_fp16.h> /* the HIP problem (problems/pmpp_hip) */
#else
#include <cuda_fp16.h>
#endif
#include <stddef.h>

extern "C" void custom_kernel(const __half *a, const __half *b, __half *out,
			      size_t n);

#endif
