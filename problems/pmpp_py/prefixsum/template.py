#!POPCORN leaderboard prefixsum_py
#!POPCORN gpu H100
# prefixsum: the inclusive prefix sum out[i] = x[0] + ... + x[i] of a
# (n,) float32 tensor on the GPU; return a new (n,) float32 tensor on the
# same device. Inputs are read-only. The task description has the full
# contract and the tolerance.
#
# This version is correct but plain PyTorch; replace it with your own
# kernel (Triton, torch.utils.cpp_extension.load_inline, ...).
import torch

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    (x,) = data
    return torch.cumsum(x, 0)
