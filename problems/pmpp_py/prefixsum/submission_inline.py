#!POPCORN leaderboard prefixsum_py
#!POPCORN gpu H100
# CUDA through torch.utils.cpp_extension.load_inline: reduce, then scan.
# (1) every block sums its tile of 256 x 16 elements; (2) one block scans
# those sums into each tile's carry (exclusive); (3) every block scans its
# tile (16 elements a thread, then a warp-shuffle block scan of the
# thread totals) and adds its carry. Built when this module is imported;
# the worker's compile step (`python submission.py`) builds it before
# anything is timed.
import torch
from torch.utils.cpp_extension import load_inline

from task import input_t, output_t

KERNELS = r"""
#include <cstdint>

#define THREADS 256
#define PER 16
#define TILE (THREADS * PER)

// Inclusive scan of v over the block (THREADS threads). Every thread
// must call it; the caller syncs before it uses wt again.
__device__ float block_scan(float v, float *wt)
{
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int o = 1; o < 32; o <<= 1) {
        float t = __shfl_up_sync(0xffffffffu, v, o);
        if (lane >= o)
            v += t;
    }
    if (lane == 31)
        wt[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float w = lane < THREADS / 32 ? wt[lane] : 0.0f;
        for (int o = 1; o < 32; o <<= 1) {
            float t = __shfl_up_sync(0xffffffffu, w, o);
            if (lane >= o)
                w += t;
        }
        if (lane < THREADS / 32)
            wt[lane] = w;
    }
    __syncthreads();
    return warp > 0 ? v + wt[warp - 1] : v;
}

__global__ void tile_sums(const float *__restrict__ x, float *sums, int64_t n)
{
    __shared__ float wt[32];
    int64_t base = blockIdx.x * (int64_t)TILE + threadIdx.x * PER;
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < PER; k++)
        if (base + k < n)
            s += x[base + k];
    s = block_scan(s, wt);
    if (threadIdx.x == THREADS - 1)
        sums[blockIdx.x] = s;
}

__global__ void scan_sums(const float *sums, float *carry, int64_t m)
{
    __shared__ float wt[32];
    __shared__ float total;
    float run = 0.0f;
    for (int64_t lo = 0; lo < m; lo += THREADS) {
        int64_t i = lo + threadIdx.x;
        float v = i < m ? sums[i] : 0.0f;
        float incl = block_scan(v, wt);
        if (i < m)
            carry[i] = run + (incl - v);
        if (threadIdx.x == THREADS - 1)
            total = incl;
        __syncthreads();
        run += total;
        __syncthreads();
    }
}

__global__ void scan_tiles(const float *__restrict__ x,
                           float *__restrict__ out, const float *carry,
                           int64_t n)
{
    __shared__ float wt[32];
    int64_t base = blockIdx.x * (int64_t)TILE + threadIdx.x * PER;
    float v[PER], s = 0.0f;
#pragma unroll
    for (int k = 0; k < PER; k++) {
        s += base + k < n ? x[base + k] : 0.0f;
        v[k] = s;
    }
    float off = block_scan(s, wt) - s + carry[blockIdx.x];
#pragma unroll
    for (int k = 0; k < PER; k++)
        if (base + k < n)
            out[base + k] = v[k] + off;
}
"""

CUDA_SRC = r"""
#include <ATen/cuda/CUDAContext.h>
#include <torch/extension.h>
""" + KERNELS + r"""
torch::Tensor prefixsum(torch::Tensor x)
{
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat &&
                x.is_contiguous());
    int64_t n = x.numel();
    auto out = torch::empty_like(x);
    if (n == 0)
        return out;
    int64_t m = (n + TILE - 1) / TILE;
    auto sums = torch::empty({m}, x.options());
    auto carry = torch::empty({m}, x.options());
    cudaStream_t st = at::cuda::getCurrentCUDAStream();
    const float *px = x.data_ptr<float>();
    tile_sums<<<m, THREADS, 0, st>>>(px, sums.data_ptr<float>(), n);
    scan_sums<<<1, THREADS, 0, st>>>(sums.data_ptr<float>(),
                                     carry.data_ptr<float>(), m);
    scan_tiles<<<m, THREADS, 0, st>>>(px, out.data_ptr<float>(),
                                      carry.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

CPP_SRC = "torch::Tensor prefixsum(torch::Tensor x);"

_ext = load_inline(name="kb_prefixsum_inline", cpp_sources=CPP_SRC,
                   cuda_sources=CUDA_SRC, functions=["prefixsum"],
                   extra_cuda_cflags=["-O3"], verbose=False)


def custom_kernel(data: input_t) -> output_t:
    (x,) = data
    return _ext.prefixsum(x)


if __name__ == "__main__":
    x = torch.rand((1 << 20) + 7, device="cuda") - 0.5
    want = torch.cumsum(x.double(), 0).float()
    torch.testing.assert_close(custom_kernel((x,)), want, rtol=0, atol=1e-2)
