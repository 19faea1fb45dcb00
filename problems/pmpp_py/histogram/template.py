#!POPCORN leaderboard histogram_py
#!POPCORN gpu H100
# histogram: count the occurrences of each byte value in data, a (n,)
# uint8 tensor on the GPU; return a new (256,) int32 tensor on the same
# device, bins[v] = number of i with data[i] == v. Inputs are read-only.
# The task description has the full contract.
#
# This version is correct but plain PyTorch; replace it with your own
# kernel (Triton, torch.utils.cpp_extension.load_inline, ...).
import torch

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    (x,) = data
    return torch.bincount(x, minlength=256).to(torch.int32)
