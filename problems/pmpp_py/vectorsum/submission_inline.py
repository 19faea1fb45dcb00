#!POPCORN leaderboard vectorsum_py
#!POPCORN gpu H100
# CUDA through torch.utils.cpp_extension.load_inline: a grid-stride loop
# with float4 loads where the pointer allows, a warp-shuffle and shared-
# memory block reduction into per-block partials, then one block sums the
# partials (no atomics: the result does not depend on scheduling order).
# Built when this module is imported; the worker's compile step
# (`python submission.py`) builds it before anything is timed.
import torch
from torch.utils.cpp_extension import load_inline

from task import input_t, output_t

CUDA_SRC = r"""
#include <ATen/cuda/CUDAContext.h>
#include <torch/extension.h>

__device__ float block_sum(float v)
{
    __shared__ float warp_sums[32];
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, o);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0)
        warp_sums[warp] = v;
    __syncthreads();
    v = threadIdx.x < (blockDim.x >> 5) ? warp_sums[threadIdx.x] : 0.0f;
    if (warp == 0)
        for (int o = 16; o > 0; o >>= 1)
            v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

__global__ void partial_sums(const float *x, float *part, int64_t n,
                             bool vec)
{
    float acc = 0.0f;
    int64_t tid = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    int64_t done = 0;
    if (vec) {
        const float4 *x4 = reinterpret_cast<const float4 *>(x);
        int64_t n4 = n / 4;
        for (int64_t i = tid; i < n4; i += stride) {
            float4 v = x4[i];
            acc += (v.x + v.y) + (v.z + v.w);
        }
        done = n4 * 4;
    }
    for (int64_t i = done + tid; i < n; i += stride)
        acc += x[i];
    acc = block_sum(acc);
    if (threadIdx.x == 0)
        part[blockIdx.x] = acc;
}

__global__ void final_sum(const float *part, float *out, int m)
{
    float acc = 0.0f;
    for (int i = threadIdx.x; i < m; i += blockDim.x)
        acc += part[i];
    acc = block_sum(acc);
    if (threadIdx.x == 0)
        *out = acc;
}

torch::Tensor vectorsum(torch::Tensor x)
{
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat &&
                x.is_contiguous());
    int64_t n = x.numel();
    int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    int blocks = sms * 8;
    auto part = torch::empty({blocks}, x.options());
    auto out = torch::empty({}, x.options());
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    const float *px = x.data_ptr<float>();
    bool vec = (reinterpret_cast<uintptr_t>(px) & 15) == 0;
    partial_sums<<<blocks, 512, 0, stream>>>(px, part.data_ptr<float>(), n,
                                             vec);
    final_sum<<<1, 1024, 0, stream>>>(part.data_ptr<float>(),
                                      out.data_ptr<float>(), blocks);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

CPP_SRC = "torch::Tensor vectorsum(torch::Tensor x);"

_ext = load_inline(name="kb_vectorsum_inline", cpp_sources=CPP_SRC,
                   cuda_sources=CUDA_SRC, functions=["vectorsum"],
                   extra_cuda_cflags=["-O3"], verbose=False)


def custom_kernel(data: input_t) -> output_t:
    (x,) = data
    return _ext.vectorsum(x)


if __name__ == "__main__":
    x = torch.ones((3 << 20) + 3, dtype=torch.float32, device="cuda")
    torch.testing.assert_close(custom_kernel((x,)), x.sum())
