#!POPCORN leaderboard sort_py
#!POPCORN gpu H100
# CUDA through torch.utils.cpp_extension.load_inline, with CUB (shipped
# with the CUDA toolkit): cub::DeviceRadixSort::SortKeys sorts the floats
# (CUB maps them to order-preserving keys itself) from the input into a
# new tensor; its temporary storage is a torch allocation on the current
# stream. Built when this module is imported; the worker's compile step
# (`python submission.py`) builds it before anything is timed.
import torch
from torch.utils.cpp_extension import load_inline

from task import input_t, output_t

KERNELS = r"""
#include <cstdint>
#include <cub/cub.cuh>

// Bytes of temporary storage cub needs for n keys (tmp == nullptr), or
// the sort itself.
static size_t radix_sort(const float *in, float *out, int n, void *tmp,
                         size_t tmp_bytes, cudaStream_t stream)
{
    cub::DeviceRadixSort::SortKeys(tmp, tmp_bytes, in, out, n, 0, 32,
                                   stream);
    return tmp_bytes;
}
"""

CUDA_SRC = r"""
#include <ATen/cuda/CUDAContext.h>
#include <torch/extension.h>
""" + KERNELS + r"""
torch::Tensor sort(torch::Tensor x)
{
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat &&
                x.is_contiguous() && x.numel() < (1ll << 31));
    int n = (int)x.numel();
    auto out = torch::empty_like(x);
    if (n == 0)
        return out;
    cudaStream_t st = at::cuda::getCurrentCUDAStream();
    size_t bytes = radix_sort(x.data_ptr<float>(), out.data_ptr<float>(), n,
                              nullptr, 0, st);
    auto tmp = torch::empty({(int64_t)bytes}, x.options().dtype(torch::kByte));
    radix_sort(x.data_ptr<float>(), out.data_ptr<float>(), n,
               tmp.data_ptr(), bytes, st);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

CPP_SRC = "torch::Tensor sort(torch::Tensor x);"

_ext = load_inline(name="kb_sort_inline", cpp_sources=CPP_SRC,
                   cuda_sources=CUDA_SRC, functions=["sort"],
                   extra_cuda_cflags=["-O3"], verbose=False)


def custom_kernel(data: input_t) -> output_t:
    (x,) = data
    return _ext.sort(x)


if __name__ == "__main__":
    x = torch.randn((1 << 20) + 7, device="cuda")
    torch.testing.assert_close(custom_kernel((x,)), torch.sort(x).values,
                               rtol=0, atol=0)
