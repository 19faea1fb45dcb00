#!POPCORN leaderboard vectoradd_py
#!POPCORN gpu H100
# CUDA through torch.utils.cpp_extension.load_inline: 16-byte loads (eight
# halves) where the pointers allow, a scalar loop for the rest. The
# extension is built when this module is imported; the worker's compile
# step (`python submission.py`) builds it into the job's extension cache
# before anything is timed, so the harness's import only loads it.
import torch
from torch.utils.cpp_extension import load_inline

from task import input_t, output_t

CUDA_SRC = r"""
#include <ATen/cuda/CUDAContext.h>
#include <cuda_fp16.h>
#include <torch/extension.h>

__global__ void add_vec8(const uint4 *a, const uint4 *b, uint4 *out,
                         int64_t n8)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n8;
         i += (int64_t)gridDim.x * blockDim.x) {
        uint4 x = a[i], y = b[i], z;
        const __half2 *hx = reinterpret_cast<const __half2 *>(&x);
        const __half2 *hy = reinterpret_cast<const __half2 *>(&y);
        __half2 *hz = reinterpret_cast<__half2 *>(&z);
#pragma unroll
        for (int k = 0; k < 4; k++)
            hz[k] = __hadd2(hx[k], hy[k]);
        out[i] = z;
    }
}

__global__ void add_tail(const __half *a, const __half *b, __half *out,
                         int64_t from, int64_t n)
{
    int64_t i = from + blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = __hadd(a[i], b[i]);
}

torch::Tensor vectoradd(torch::Tensor a, torch::Tensor b)
{
    TORCH_CHECK(a.is_cuda() && a.scalar_type() == torch::kHalf &&
                a.is_contiguous() && b.is_contiguous());
    auto out = torch::empty_like(a);
    int64_t n = a.numel();
    auto pa = reinterpret_cast<const __half *>(a.data_ptr<at::Half>());
    auto pb = reinterpret_cast<const __half *>(b.data_ptr<at::Half>());
    auto po = reinterpret_cast<__half *>(out.data_ptr<at::Half>());
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    bool aligned = ((reinterpret_cast<uintptr_t>(pa) |
                     reinterpret_cast<uintptr_t>(pb) |
                     reinterpret_cast<uintptr_t>(po)) & 15) == 0;
    int64_t n8 = aligned ? n / 8 : 0;
    if (n8) {
        int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
        int64_t blocks = std::min<int64_t>((n8 + 255) / 256, (int64_t)sms * 16);
        add_vec8<<<blocks, 256, 0, stream>>>(
            reinterpret_cast<const uint4 *>(pa),
            reinterpret_cast<const uint4 *>(pb),
            reinterpret_cast<uint4 *>(po), n8);
    }
    int64_t rest = n - n8 * 8;
    if (rest)
        add_tail<<<(rest + 255) / 256, 256, 0, stream>>>(pa, pb, po, n8 * 8, n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

CPP_SRC = "torch::Tensor vectoradd(torch::Tensor a, torch::Tensor b);"

_ext = load_inline(name="kb_vectoradd_inline", cpp_sources=CPP_SRC,
                   cuda_sources=CUDA_SRC, functions=["vectoradd"],
                   extra_cuda_cflags=["-O3"], verbose=False)


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    return _ext.vectoradd(a, b)


if __name__ == "__main__":
    x = torch.ones((1 << 20) + 3, dtype=torch.float16, device="cuda")
    torch.testing.assert_close(custom_kernel((x, x)), x + x)
