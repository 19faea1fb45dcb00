#!POPCORN leaderboard prefixsum_py
# Wrong: an exclusive scan (out[i] = x[0] + ... + x[i-1], out[0] = 0), the
# classic mix-up of the two scans: every element is off by x[i], which is
# far beyond the tolerance almost everywhere, at every size.
import torch

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    (x,) = data
    return torch.cumsum(x, 0) - x
