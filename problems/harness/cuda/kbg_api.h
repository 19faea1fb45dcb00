/* kbg_api.h: the GPU driver's one device-API layer, CUDA or HIP.
 *
 * The driver (kbg_main.cu, kbg_child.cpp, kbg_parent.cpp, kbg_case.cpp,
 * kbg_dev.cu) and the problems' reference.cu files are written once,
 * against the CUDA runtime's names. Compiled by nvcc they are CUDA;
 * compiled by hipcc for an AMD GPU (__HIP__) the names map to the HIP
 * runtime through ../hip/kbg_hip.h, which also says where AMD hardware
 * differs and what the driver does about it. Everything above the device
 * API -- cases, staging, timing rules, the process split, checks, the
 * report -- is the same code on both.
 *
 * Besides the runtime's own names, this layer gives the few things the
 * two spell differently:
 *
 *   KBG_API               "CUDA" or "HIP", for messages and system.*;
 *   KBG_VERSION_MAJOR/MINOR(v)  a runtime or driver version number's
 *                         parts (CUDA 12040 = 12.4; HIP 50221153 = 5.2);
 *   KBG_INFRA_ERRORS(X)   X(code) for every error code that only a broken
 *                         device, driver or node produces (never the
 *                         submission's fault);
 *   KBG_SHFL_DOWN(v, o)   a full-warp shuffle down (lanes 0..31 of each
 *                         group of 32; AMD wavefronts of 64 are two such
 *                         groups);
 *   kbg_dev_timer_ns()    device: a global nanosecond timer (spin-wait
 *                         timeouts only);
 *   kbg_dev_pause()       device: a short sleep in a spin-wait;
 *   kbg_dev_load_l2(p)    device: a 16-byte load that allocates in the
 *                         last-level cache (the flush);
 *   kbg_dev_arch(prop, buf, size)  the device's architecture name
 *                         ("sm_90", "gfx942:sramecc+:xnack-").
 *
 * Header only, no state.
 */
#ifndef KBG_API_H
#define KBG_API_H

#if defined(__HIP__) || defined(__HIP_PLATFORM_AMD__)
#define KBG_HIP 1
#include "kbg_hip.h"
#else
#include <cuda_fp16.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <stdio.h>

#define KBG_API "CUDA"
#define KBG_VERSION_MAJOR(v) ((v) / 1000)
#define KBG_VERSION_MINOR(v) ((v) % 1000 / 10)

#define KBG_INFRA_ERRORS(X)                                                    \
	X(cudaErrorNoDevice)                                                   \
	X(cudaErrorInsufficientDriver)                                         \
	X(cudaErrorInitializationError)                                        \
	X(cudaErrorSystemDriverMismatch)                                       \
	X(cudaErrorCompatNotSupportedOnDevice)                                 \
	X(cudaErrorDevicesUnavailable)                                         \
	X(cudaErrorECCUncorrectable)                                           \
	X(cudaErrorNvlinkUncorrectable)                                        \
	X(cudaErrorSystemNotReady)                                             \
	X(cudaErrorStubLibrary)                                                \
	X(cudaErrorDeviceUninitialized)                                        \
	X(cudaErrorInvalidDevice)                                              \
	X(cudaErrorUnsupportedPtxVersion)                                      \
	X(cudaErrorNoKernelImageForDevice)

#define KBG_SHFL_DOWN(v, o) __shfl_down_sync(0xffffffffu, (v), (o))

#ifdef __CUDACC__
__device__ __forceinline__ unsigned long long kbg_dev_timer_ns()
{
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

__device__ __forceinline__ void kbg_dev_pause()
{
	__nanosleep(200);
}

/* ld.global.cg: cached in L2, not in L1. */
__device__ __forceinline__ uint4 kbg_dev_load_l2(const uint4 *p)
{
	return __ldcg(p);
}
#endif

static inline void kbg_dev_arch(const cudaDeviceProp *p, char *buf, size_t size)
{
	snprintf(buf, size, "sm_%d%d", p->major, p->minor);
}
#endif

#endif
