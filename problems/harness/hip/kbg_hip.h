/* kbg_hip.h: the CUDA runtime names the GPU driver uses, mapped to HIP
 * for AMD GPUs (included by ../cuda/kbg_api.h under hipcc; see there).
 *
 * Only the names the driver and our problems' reference.cu use are
 * mapped: a new CUDA call in the driver fails to compile under hipcc
 * until it is added here, which is the point (tests/hip compiles every
 * problem). Submissions are HIP code and never see this file.
 *
 * Where AMD differs, and what the driver does:
 *
 *  - the legacy default stream: HIP's null stream (0) is blocking and
 *    synchronises with every blocking stream, as CUDA's legacy stream
 *    does, so the event pair around custom_kernel covers work on created
 *    blocking streams;
 *  - persisting L2 lines: HIP has no access-policy windows, so there is
 *    nothing to reset before the flush (cudaCtxResetPersistingL2Cache is
 *    a no-op here);
 *  - the last-level cache: MI300's Infinity Cache (MALL, 256 MB) sits
 *    behind the per-XCD L2s and is not an attribute; kbg_model.c's
 *    kbg_llc_bytes() knows it by architecture, and the flush streams
 *    4x the larger of the two with plain loads (which allocate in L2 and
 *    MALL);
 *  - mapped host memory: the hold's release word is polled by the device,
 *    so it is allocated coherent (hipHostMallocCoherent; ROCm's default
 *    for mapped memory depends on HIP_HOST_COHERENT);
 *  - the device timer: s_memrealtime, a constant 100 MHz on gfx9 (MI200,
 *    MI300); only the hold's timeouts use it;
 *  - warps: wavefronts of 64 on CDNA; the driver's reductions shuffle
 *    within groups of 32, so a wavefront makes two global updates;
 *  - versions: hipDriverGetVersion and hipRuntimeGetVersion give
 *    major * 10000000 + minor * 100000 + patch.
 */
#ifndef KBG_HIP_H
#define KBG_HIP_H

#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>
#include <stdio.h>
#include <string.h>

#define KBG_API "HIP"
#define KBG_VERSION_MAJOR(v) ((v) / 10000000)
#define KBG_VERSION_MINOR(v) ((v) / 100000 % 100)

/* No device, a driver that does not match, lost or uninitialised
 * hardware, an uncorrectable ECC error, code for another gfx target. */
#define KBG_INFRA_ERRORS(X)                                                    \
	X(hipErrorNoDevice)                                                    \
	X(hipErrorInsufficientDriver)                                          \
	X(hipErrorNotInitialized)                                              \
	X(hipErrorInvalidDevice)                                               \
	X(hipErrorECCNotCorrectable)                                           \
	X(hipErrorNoBinaryForGpu)

#define KBG_SHFL_DOWN(v, o) __shfl_down((v), (o))

/* ---- types and constants ---- */
#define cudaError_t hipError_t
#define cudaSuccess hipSuccess
#define cudaErrorInvalidValue hipErrorInvalidValue
#define cudaErrorNotReady hipErrorNotReady
#define cudaEvent_t hipEvent_t
#define cudaDeviceProp hipDeviceProp_t
#define cudaIpcMemHandle_t hipIpcMemHandle_t
#define cudaIpcMemLazyEnablePeerAccess hipIpcMemLazyEnablePeerAccess
#define cudaMemPool_t hipMemPool_t
#define cudaMemPoolAttrReleaseThreshold hipMemPoolAttrReleaseThreshold
#define cudaMemcpyDeviceToHost hipMemcpyDeviceToHost
#define cudaMemcpyHostToDevice hipMemcpyHostToDevice
#define cudaMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define cudaStreamLegacy ((hipStream_t)0)
#define cudaStream_t hipStream_t
#define cudaStreamNonBlocking hipStreamNonBlocking
#define cudaStreamCreateWithFlags hipStreamCreateWithFlags
#define cudaStreamSynchronize hipStreamSynchronize
#define cudaHostAllocMapped (hipHostMallocMapped | hipHostMallocCoherent)
#define cudaDevAttrMultiProcessorCount hipDeviceAttributeMultiprocessorCount
#define cudaDevAttrMaxThreadsPerMultiProcessor                                 \
	hipDeviceAttributeMaxThreadsPerMultiProcessor
#define cudaDevAttrClockRate hipDeviceAttributeClockRate
#define cudaDevAttrMemoryClockRate hipDeviceAttributeMemoryClockRate
#define cudaDevAttrGlobalMemoryBusWidth hipDeviceAttributeMemoryBusWidth
#define cudaDevAttrL2CacheSize hipDeviceAttributeL2CacheSize

/* ---- calls ---- */
#define cudaGetLastError hipGetLastError
#define cudaGetErrorString hipGetErrorString
#define cudaGetErrorName hipGetErrorName
#define cudaSetDevice hipSetDevice
#define cudaGetDevice hipGetDevice
#define cudaGetDeviceProperties hipGetDeviceProperties
#define cudaDeviceGetAttribute hipDeviceGetAttribute
#define cudaDevAttrMaxSharedMemoryPerBlockOptin                                \
	hipDeviceAttributeSharedMemPerBlockOptin
#define cudaFuncSetAttribute hipFuncSetAttribute
#define cudaFuncAttributeMaxDynamicSharedMemorySize                            \
	hipFuncAttributeMaxDynamicSharedMemorySize
#define cudaDeviceGetPCIBusId hipDeviceGetPCIBusId
#define cudaDeviceSynchronize hipDeviceSynchronize
#define cudaDriverGetVersion hipDriverGetVersion
#define cudaRuntimeGetVersion hipRuntimeGetVersion
#define cudaDeviceGetDefaultMemPool hipDeviceGetDefaultMemPool
#define cudaMemPoolSetAttribute hipMemPoolSetAttribute
#define cudaMalloc hipMalloc
#define cudaFree hipFree
#define cudaMallocHost(p, n) hipHostMalloc((p), (n), hipHostMallocDefault)
#define cudaHostAlloc hipHostMalloc
#define cudaFreeHost hipHostFree
#define cudaHostGetDevicePointer hipHostGetDevicePointer
#define cudaMemcpy hipMemcpy
#define cudaMemcpyAsync hipMemcpyAsync
#define cudaMemset hipMemset
#define cudaMemsetAsync hipMemsetAsync
#define cudaEventCreate hipEventCreate
#define cudaEventRecord hipEventRecord
#define cudaEventSynchronize hipEventSynchronize
#define cudaEventElapsedTime hipEventElapsedTime
#define cudaIpcGetMemHandle hipIpcGetMemHandle
#define cudaIpcOpenMemHandle hipIpcOpenMemHandle
#define cudaIpcCloseMemHandle hipIpcCloseMemHandle
#define cudaOccupancyMaxActiveBlocksPerMultiprocessor                          \
	hipOccupancyMaxActiveBlocksPerMultiprocessor
#define cudaProfilerStart kbg__profiler_start
#define cudaProfilerStop kbg__profiler_stop
#define cudaCtxResetPersistingL2Cache() hipSuccess

/* hipProfilerStart/Stop are deprecated in favour of roctracer, but they
 * are what `rocprof --trace-start off` listens to. */
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
static inline hipError_t kbg__profiler_start(void)
{
	return hipProfilerStart();
}

static inline hipError_t kbg__profiler_stop(void)
{
	return hipProfilerStop();
}
#pragma clang diagnostic pop

/* ---- device ---- */
#ifdef __HIPCC__
/* s_memrealtime: 100 MHz on gfx9 (10 ns a tick). */
__device__ __forceinline__ unsigned long long kbg_dev_timer_ns()
{
#ifdef __HIP_DEVICE_COMPILE__
	return (unsigned long long)__builtin_amdgcn_s_memrealtime() * 10ull;
#else
	return 0;
#endif
}

__device__ __forceinline__ void kbg_dev_pause()
{
	__builtin_amdgcn_s_sleep(4);
}

/* A plain load: allocates in L2 and in MALL (Infinity Cache). */
__device__ __forceinline__ uint4 kbg_dev_load_l2(const uint4 *p)
{
	return *p;
}
#endif

/* gcnArchName ("gfx942:sramecc+:xnack-"); "gfx<major><minor>" when the
 * runtime leaves it empty. */
static inline void kbg_dev_arch(const hipDeviceProp_t *p, char *buf,
				size_t size)
{
	if (p->gcnArchName[0])
		snprintf(buf, size, "%s", p->gcnArchName);
	else
		snprintf(buf, size, "gfx%d%d", p->major, p->minor);
}

#endif
