#!POPCORN leaderboard vectoradd_py
# Wrong: the last n % 256 elements are left at zero (a kernel whose grid is
# rounded down). Passes sizes that are multiples of 256 only.
import torch

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    n = a.numel()
    m = n - n % 256
    out = torch.zeros_like(a)
    out[:m] = a[:m] + b[:m]
    return out
