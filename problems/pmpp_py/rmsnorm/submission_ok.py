#!POPCORN leaderboard rmsnorm_py
# Plain PyTorch, statistics and scaling in fp32, one rounding to bf16.
import torch

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    x, w, eps = data
    xf = x.float()
    r = torch.rsqrt(xf.square().mean(-1, keepdim=True) + eps)
    return (xf * r * w.float()).to(torch.bfloat16)
