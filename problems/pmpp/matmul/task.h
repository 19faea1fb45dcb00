/* matmul: C = A B with fp16 inputs and fp16 output (accumulate in fp32).
 *
 *     extern "C" void custom_kernel(const __half *a, const __half *b,
 *                                   __half *c, int m, int n, int k);
 *
 * Row-major: a is m x k, b is k x n, c is m x n. Device pointers; launch
 * on the legacy default stream (0); a and b are read-only.
 */
#ifndef MATMUL_TASK_H
#define MATMUL_TASK_H

#if defined(__HIP__) || defined(__HIP_PLATFORM_AMD__)
#include <hip/hip_fp16.h> /* the HIP problem (problems/pmpp_hip) */
#else
#include <cuda_fp16.h>
#endif

extern "C" void custom_kernel(const __half *a, const __half *b, __half *c,
			      int m, int n, int k);

#endif
