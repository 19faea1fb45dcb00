#!POPCORN leaderboard grouped_gemm_py
#!POPCORN gpu H100
# A grouped GEMM through torch.utils.cpp_extension.load_inline, with WMMA
# (16 x 16 x 16 bf16 fragments, fp32 accumulators), in one launch that
# never reads the group sizes on the host: the grid covers an upper bound
# of the row tiles (ceil(T/64) + G) times the column tiles; the first
# thread of each block finds the block's group by walking the group ends,
# and blocks past the last tile return. Each k step stages 64 x 16 of x
# and 16 x 64 of the group's weight (transposed on the way) in shared
# memory, zero-padded at the edges; each of 4 warps multiplies a 32 x 32
# quarter. Built when this module is imported; the worker's compile step
# (`python submission.py`) builds it before anything is timed.
import torch
from torch.utils.cpp_extension import load_inline

from task import input_t, output_t

KERNELS = r"""
#include <cstdint>
#include <cuda_bf16.h>
#include <mma.h>

using namespace nvcuda;

#define BM 64
#define BN 64
#define BK 16
#define LDA (BK + 8)
#define LDB (BN + 8)
#define LDC (BN + 4)

__global__ void grouped_kernel(const __nv_bfloat16 *__restrict__ x,
                               const __nv_bfloat16 *__restrict__ w,
                               const int *__restrict__ offs,
                               __nv_bfloat16 *__restrict__ out, int G, int N,
                               int K)
{
    __shared__ __align__(32) __nv_bfloat16 sa[BM * LDA];
    __shared__ __align__(32) __nv_bfloat16 sb[BK * LDB];
    __shared__ __align__(32) float sc[BM * LDC];
    __shared__ int grp[3];   // group, its first row, the block's first row
    if (threadIdx.x == 0) {
        int tiles = 0, start = 0, g = 0;
        grp[0] = -1;
        for (; g < G; g++) {
            int end = offs[g], t = (end - start + BM - 1) / BM;
            if ((int)blockIdx.x < tiles + t) {
                grp[0] = g;
                grp[1] = end;
                grp[2] = start + ((int)blockIdx.x - tiles) * BM;
                break;
            }
            tiles += t;
            start = end;
        }
    }
    __syncthreads();
    if (grp[0] < 0)
        return;
    const int g = grp[0], row_end = grp[1], row0 = grp[2];
    const __nv_bfloat16 *wg = w + (int64_t)g * N * K;
    const int col0 = blockIdx.y * BN;
    const int warp = threadIdx.x / 32;
    const int wm = (warp / 2) * 32, wn = (warp % 2) * 32;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            wmma::fill_fragment(acc[i][j], 0.0f);
    const __nv_bfloat16 zero = __float2bfloat16(0.0f);
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int i = threadIdx.x; i < BM * BK; i += blockDim.x) {
            int r = i / BK, q = i % BK, gr = row0 + r, gk = k0 + q;
            sa[r * LDA + q] =
                gr < row_end && gk < K ? x[(int64_t)gr * K + gk] : zero;
        }
        // sb[kk][nn] = w[g][col0 + nn][k0 + kk]: consecutive threads read
        // consecutive k of one weight row
        for (int i = threadIdx.x; i < BK * BN; i += blockDim.x) {
            int q = i / BK, r = i % BK, gc = col0 + q, gk = k0 + r;
            sb[r * LDB + q] =
                gk < K && gc < N ? wg[(int64_t)gc * K + gk] : zero;
        }
        __syncthreads();
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16,
                       wmma::row_major> fa[2];
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16,
                       wmma::row_major> fb[2];
        for (int i = 0; i < 2; i++)
            wmma::load_matrix_sync(fa[i], sa + (wm + 16 * i) * LDA, LDA);
        for (int j = 0; j < 2; j++)
            wmma::load_matrix_sync(fb[j], sb + wn + 16 * j, LDB);
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++)
                wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
        __syncthreads();
    }
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            wmma::store_matrix_sync(sc + (wm + 16 * i) * LDC + wn + 16 * j,
                                    acc[i][j], LDC, wmma::mem_row_major);
    __syncthreads();
    for (int i = threadIdx.x; i < BM * BN; i += blockDim.x) {
        int r = i / BN, q = i % BN, gr = row0 + r, gc = col0 + q;
        if (gr < row_end && gc < N)
            out[(int64_t)gr * N + gc] = __float2bfloat16(sc[r * LDC + q]);
    }
}
"""

CUDA_SRC = r"""
#include <ATen/cuda/CUDAContext.h>
#include <torch/extension.h>
""" + KERNELS + r"""
torch::Tensor grouped_gemm(torch::Tensor x, torch::Tensor w,
                           torch::Tensor offs)
{
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kBFloat16 &&
                w.scalar_type() == torch::kBFloat16 &&
                offs.scalar_type() == torch::kInt && x.is_contiguous() &&
                w.is_contiguous() && offs.is_contiguous());
    int T = x.size(0), K = x.size(1), G = w.size(0), N = w.size(1);
    auto out = torch::empty({T, N}, x.options());
    dim3 grid((T + BM - 1) / BM + G, (N + BN - 1) / BN);
    grouped_kernel<<<grid, 128, 0, at::cuda::getCurrentCUDAStream()>>>(
        reinterpret_cast<const __nv_bfloat16 *>(x.data_ptr<at::BFloat16>()),
        reinterpret_cast<const __nv_bfloat16 *>(w.data_ptr<at::BFloat16>()),
        offs.data_ptr<int>(),
        reinterpret_cast<__nv_bfloat16 *>(out.data_ptr<at::BFloat16>()), G, N,
        K);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

CPP_SRC = ("torch::Tensor grouped_gemm(torch::Tensor x, torch::Tensor w, "
           "torch::Tensor offs);")

_ext = load_inline(name="kb_grouped_gemm_inline", cpp_sources=CPP_SRC,
                   cuda_sources=CUDA_SRC, functions=["grouped_gemm"],
                   extra_cuda_cflags=["-O3"], verbose=False)


def custom_kernel(data: input_t) -> output_t:
    x, w, offs = data
    return _ext.grouped_gemm(x, w, offs)


if __name__ == "__main__":
    x = torch.rand(1000, 96, device="cuda").to(torch.bfloat16)
    w = torch.rand(5, 200, 96, device="cuda").to(torch.bfloat16)
    offs = torch.tensor([0, 300, 301, 700, 1000], dtype=torch.int32,
                        device="cuda")
    out = custom_kernel((x, w, offs))
    start = 0
    for i, end in enumerate(offs.tolist()):
        torch.testing.assert_close(
            out[start:end].float(), x[start:end].float() @ w[i].float().t(),
            rtol=1e-2, atol=0.1)
        start = end
