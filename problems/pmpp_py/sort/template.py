#!POPCORN leaderboard sort_py
#!POPCORN gpu H100
# sort: return the n float32 values of x (on the GPU) sorted ascending, as
# a new (n,) float32 tensor on the same device; it must equal the sorted
# input bit for bit. Inputs are read-only. The task description has the
# full contract.
#
# This version is correct but plain PyTorch; replace it with your own
# kernel (Triton, torch.utils.cpp_extension.load_inline, ...).
import torch

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    (x,) = data
    return torch.sort(x).values
