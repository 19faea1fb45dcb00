#!POPCORN leaderboard conv2d_py
#!POPCORN gpu H100
# CUDA through torch.utils.cpp_extension.load_inline: a direct
# convolution, fp32 FMAs. Each block computes a 16 x 16 tile of output
# pixels for COB output channels of one image; each input channel's
# (16 + K - 1)^2 input patch is staged in shared memory, and the weights
# are read through the read-only cache. Built when this module is
# imported; the worker's compile step (`python submission.py`) builds it
# before anything is timed.
import torch
from torch.utils.cpp_extension import load_inline

from task import input_t, output_t

KERNELS = r"""
#include <cstdint>

#define TILE 16
#define COB 8
#define MAXK 31

__global__ void conv_kernel(const float *__restrict__ x,
                            const float *__restrict__ w,
                            float *__restrict__ out, int C, int S, int K,
                            int O, int co_blocks)
{
    __shared__ float patch[(TILE + MAXK - 1) * (TILE + MAXK - 1)];
    int b = blockIdx.z / co_blocks;
    int co0 = (blockIdx.z % co_blocks) * COB;
    int ox = blockIdx.x * TILE + threadIdx.x;
    int oy = blockIdx.y * TILE + threadIdx.y;
    int P = TILE + K - 1;
    float acc[COB];
#pragma unroll
    for (int j = 0; j < COB; j++)
        acc[j] = 0.0f;
    for (int ci = 0; ci < C; ci++) {
        const float *plane = x + ((int64_t)b * C + ci) * S * S;
        __syncthreads();
        for (int i = threadIdx.y * TILE + threadIdx.x; i < P * P;
             i += TILE * TILE) {
            int py = blockIdx.y * TILE + i / P, px = blockIdx.x * TILE + i % P;
            patch[i] = py < S && px < S ? plane[(int64_t)py * S + px] : 0.0f;
        }
        __syncthreads();
        for (int ky = 0; ky < K; ky++)
            for (int kx = 0; kx < K; kx++) {
                float v = patch[(threadIdx.y + ky) * P + threadIdx.x + kx];
#pragma unroll
                for (int j = 0; j < COB; j++)
                    if (co0 + j < C)
                        acc[j] = fmaf(__ldg(&w[(((int64_t)(co0 + j) * C + ci) *
                                                K + ky) * K + kx]),
                                      v, acc[j]);
            }
    }
    if (ox < O && oy < O)
        for (int j = 0; j < COB && co0 + j < C; j++)
            out[(((int64_t)b * C + co0 + j) * O + oy) * O + ox] = acc[j];
}
"""

CUDA_SRC = r"""
#include <ATen/cuda/CUDAContext.h>
#include <torch/extension.h>
""" + KERNELS + r"""
torch::Tensor conv2d(torch::Tensor x, torch::Tensor w)
{
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat &&
                x.is_contiguous() && w.is_contiguous() && x.dim() == 4);
    int B = x.size(0), C = x.size(1), S = x.size(2), K = w.size(2);
    TORCH_CHECK(K <= MAXK && K <= S);
    int O = S - K + 1;
    auto out = torch::empty({B, C, O, O}, x.options());
    int co_blocks = (C + COB - 1) / COB;
    dim3 block(TILE, TILE);
    dim3 grid((O + TILE - 1) / TILE, (O + TILE - 1) / TILE, B * co_blocks);
    conv_kernel<<<grid, block, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), w.data_ptr<float>(), out.data_ptr<float>(), C,
        S, K, O, co_blocks);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

CPP_SRC = "torch::Tensor conv2d(torch::Tensor x, torch::Tensor w);"

_ext = load_inline(name="kb_conv2d_inline", cpp_sources=CPP_SRC,
                   cuda_sources=CUDA_SRC, functions=["conv2d"],
                   extra_cuda_cflags=["-O3"], verbose=False)


def custom_kernel(data: input_t) -> output_t:
    x, w = data
    return _ext.conv2d(x, w)


if __name__ == "__main__":
    torch.backends.cudnn.allow_tf32 = False
    x = torch.rand(2, 5, 37, 37, device="cuda") - 0.5
    w = torch.rand(5, 5, 3, 3, device="cuda") - 0.5
    torch.testing.assert_close(custom_kernel((x, w)),
                               torch.nn.functional.conv2d(x, w))
