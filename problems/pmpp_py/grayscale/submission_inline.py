#!POPCORN leaderboard grayscale_py
#!POPCORN gpu H100
# CUDA through torch.utils.cpp_extension.load_inline: one thread per
# pixel in a grid-stride loop, fp32 FMAs. Built when this module is
# imported; the worker's compile step (`python submission.py`) builds it
# before anything is timed.
import torch
from torch.utils.cpp_extension import load_inline

from task import input_t, output_t

KERNELS = r"""
#include <cstdint>

__global__ void gray_kernel(const float *__restrict__ rgb,
                            float *__restrict__ out, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const float *p = rgb + 3 * i;
        out[i] = fmaf(0.2989f, p[0], fmaf(0.5870f, p[1], 0.1140f * p[2]));
    }
}
"""

CUDA_SRC = r"""
#include <ATen/cuda/CUDAContext.h>
#include <torch/extension.h>
""" + KERNELS + r"""
torch::Tensor grayscale(torch::Tensor rgb)
{
    TORCH_CHECK(rgb.is_cuda() && rgb.scalar_type() == torch::kFloat &&
                rgb.is_contiguous() && rgb.dim() == 3 && rgb.size(2) == 3);
    auto out = torch::empty({rgb.size(0), rgb.size(1)}, rgb.options());
    int64_t n = rgb.size(0) * rgb.size(1);
    int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    int64_t blocks = std::min<int64_t>((n + 255) / 256, (int64_t)sms * 32);
    if (n > 0)
        gray_kernel<<<blocks, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
            rgb.data_ptr<float>(), out.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

CPP_SRC = "torch::Tensor grayscale(torch::Tensor rgb);"

_ext = load_inline(name="kb_grayscale_inline", cpp_sources=CPP_SRC,
                   cuda_sources=CUDA_SRC, functions=["grayscale"],
                   extra_cuda_cflags=["-O3"], verbose=False)


def custom_kernel(data: input_t) -> output_t:
    (rgb,) = data
    return _ext.grayscale(rgb)


if __name__ == "__main__":
    x = torch.rand(37, 1001, 3, device="cuda")
    want = 0.2989 * x[..., 0] + 0.5870 * x[..., 1] + 0.1140 * x[..., 2]
    torch.testing.assert_close(custom_kernel((x,)), want)
