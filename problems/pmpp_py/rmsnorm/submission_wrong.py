#!POPCORN leaderboard rmsnorm_py
# Wrong: the weight applied as (1 + w), the convention of models that
# store the weight as an offset from 1, which this problem's w is not:
# every element is off by x r, at every size.
import torch

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    x, w, eps = data
    xf = x.float()
    r = torch.rsqrt(xf.square().mean(-1, keepdim=True) + eps)
    return (xf * r * (1.0 + w.float())).to(torch.bfloat16)
