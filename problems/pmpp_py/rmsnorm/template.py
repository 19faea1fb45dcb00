#!POPCORN leaderboard rmsnorm_py
#!POPCORN gpu H100
# rmsnorm: out = x / sqrt(mean(x^2 over each row) + eps) * w for x (M, N)
# and w (N,) in bfloat16 on the GPU; return a new (M, N) bfloat16 tensor
# on the same device. data is (x, w, eps). Inputs are read-only. The task
# description has the full contract and the tolerance.
#
# This version is correct but plain PyTorch (several passes over x);
# replace it with your own fused kernel (Triton,
# torch.utils.cpp_extension.load_inline, ...).
import torch

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    x, w, eps = data
    xf = x.float()
    r = torch.rsqrt(xf.square().mean(-1, keepdim=True) + eps)
    return (xf * r * w.float()).to(torch.bfloat16)
