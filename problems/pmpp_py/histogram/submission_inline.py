#!POPCORN leaderboard histogram_py
#!POPCORN gpu H100
# CUDA through torch.utils.cpp_extension.load_inline: each block counts a
# grid-stride share of the bytes (16 at a time where the pointer allows)
# into a shared-memory histogram, then adds its 256 counts to the global
# bins, zeroed first on the same stream. Built when this module is
# imported; the worker's compile step (`python submission.py`) builds it
# before anything is timed.
import torch
from torch.utils.cpp_extension import load_inline

from task import input_t, output_t

KERNELS = r"""
#include <cstdint>

__global__ void hist_kernel(const uint8_t *__restrict__ x,
                            int *__restrict__ bins, int64_t n, bool vec)
{
    __shared__ int local[256];
    for (int i = threadIdx.x; i < 256; i += blockDim.x)
        local[i] = 0;
    __syncthreads();
    int64_t tid = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    int64_t done = 0;
    if (vec) {
        const uint4 *x16 = reinterpret_cast<const uint4 *>(x);
        int64_t n16 = n / 16;
        for (int64_t i = tid; i < n16; i += stride) {
            uint4 v = x16[i];
            const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
            for (int k = 0; k < 4; k++) {
                atomicAdd(&local[w[k] & 0xff], 1);
                atomicAdd(&local[(w[k] >> 8) & 0xff], 1);
                atomicAdd(&local[(w[k] >> 16) & 0xff], 1);
                atomicAdd(&local[w[k] >> 24], 1);
            }
        }
        done = n16 * 16;
    }
    for (int64_t i = done + tid; i < n; i += stride)
        atomicAdd(&local[x[i]], 1);
    __syncthreads();
    for (int i = threadIdx.x; i < 256; i += blockDim.x)
        if (local[i])
            atomicAdd(&bins[i], local[i]);
}
"""

CUDA_SRC = r"""
#include <ATen/cuda/CUDAContext.h>
#include <torch/extension.h>
""" + KERNELS + r"""
torch::Tensor histogram(torch::Tensor x)
{
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kByte &&
                x.is_contiguous());
    auto bins = torch::zeros({256}, x.options().dtype(torch::kInt));
    int64_t n = x.numel();
    const uint8_t *px = x.data_ptr<uint8_t>();
    bool vec = (reinterpret_cast<uintptr_t>(px) & 15) == 0;
    int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    int64_t blocks = std::min<int64_t>((n + 4095) / 4096, (int64_t)sms * 8);
    if (n > 0)
        hist_kernel<<<blocks, 512, 0, at::cuda::getCurrentCUDAStream()>>>(
            px, bins.data_ptr<int>(), n, vec);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return bins;
}
"""

CPP_SRC = "torch::Tensor histogram(torch::Tensor x);"

_ext = load_inline(name="kb_histogram_inline", cpp_sources=CPP_SRC,
                   cuda_sources=CUDA_SRC, functions=["histogram"],
                   extra_cuda_cflags=["-O3"], verbose=False)


def custom_kernel(data: input_t) -> output_t:
    (x,) = data
    return _ext.histogram(x)


if __name__ == "__main__":
    x = torch.randint(0, 256, ((3 << 20) + 5,), dtype=torch.uint8,
                      device="cuda")
    want = torch.bincount(x, minlength=256).to(torch.int32)
    torch.testing.assert_close(custom_kernel((x,)), want)
