#!POPCORN leaderboard rmsnorm_py
#!POPCORN gpu H100
# A fused RMSNorm through torch.utils.cpp_extension.load_inline: one block
# of 256 threads per row; the sum of squares in fp32 (warp shuffles, then
# the warps' sums through shared memory), rsqrtf, then the scaled row in
# bf16 (the second read of the row comes from cache). Built when this
# module is imported; the worker's compile step (`python submission.py`)
# builds it before anything is timed.
import torch
from torch.utils.cpp_extension import load_inline

from task import input_t, output_t

KERNELS = r"""
#include <cstdint>
#include <cuda_bf16.h>

#define THREADS 256

// The sum of v over the block, returned to every thread.
__device__ float block_sum(float v)
{
    __shared__ float part[THREADS / 32];
    __shared__ float total;
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0)
        part[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        v = threadIdx.x < THREADS / 32 ? part[threadIdx.x] : 0.0f;
        for (int o = 16; o > 0; o >>= 1)
            v += __shfl_down_sync(0xffffffffu, v, o);
        if (threadIdx.x == 0)
            total = v;
    }
    __syncthreads();
    return total;
}

__global__ void rmsnorm_kernel(const __nv_bfloat16 *__restrict__ x,
                               const __nv_bfloat16 *__restrict__ w,
                               __nv_bfloat16 *__restrict__ out, int n,
                               float eps)
{
    const __nv_bfloat16 *xr = x + (int64_t)blockIdx.x * n;
    __nv_bfloat16 *orow = out + (int64_t)blockIdx.x * n;
    float s = 0.0f;
    for (int i = threadIdx.x; i < n; i += THREADS) {
        float v = __bfloat162float(xr[i]);
        s = fmaf(v, v, s);
    }
    float r = rsqrtf(block_sum(s) / n + eps);
    for (int i = threadIdx.x; i < n; i += THREADS)
        orow[i] = __float2bfloat16(__bfloat162float(xr[i]) * r *
                                   __bfloat162float(w[i]));
}
"""

CUDA_SRC = r"""
#include <ATen/cuda/CUDAContext.h>
#include <torch/extension.h>
""" + KERNELS + r"""
torch::Tensor rmsnorm(torch::Tensor x, torch::Tensor w, double eps)
{
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kBFloat16 &&
                w.scalar_type() == torch::kBFloat16 && x.is_contiguous() &&
                w.is_contiguous() && x.dim() == 2);
    auto out = torch::empty_like(x);
    int64_t m = x.size(0);
    int n = x.size(1);
    if (m > 0)
        rmsnorm_kernel<<<m, THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(
            reinterpret_cast<const __nv_bfloat16 *>(x.data_ptr<at::BFloat16>()),
            reinterpret_cast<const __nv_bfloat16 *>(w.data_ptr<at::BFloat16>()),
            reinterpret_cast<__nv_bfloat16 *>(out.data_ptr<at::BFloat16>()), n,
            (float)eps);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

CPP_SRC = "torch::Tensor rmsnorm(torch::Tensor x, torch::Tensor w, double eps);"

_ext = load_inline(name="kb_rmsnorm_inline", cpp_sources=CPP_SRC,
                   cuda_sources=CUDA_SRC, functions=["rmsnorm"],
                   extra_cuda_cflags=["-O3"], verbose=False)


def custom_kernel(data: input_t) -> output_t:
    x, w, eps = data
    return _ext.rmsnorm(x, w, eps)


if __name__ == "__main__":
    x = torch.randn(33, 5000, device="cuda").to(torch.bfloat16)
    w = torch.randn(5000, device="cuda").to(torch.bfloat16)
    xf = x.float()
    want = xf * torch.rsqrt(xf.square().mean(-1, keepdim=True) + 1e-6) \
        * w.float()
    torch.testing.assert_close(custom_kernel((x, w, 1e-6)).float(), want,
                               rtol=2e-2, atol=1e-5)
