#!POPCORN leaderboard vectoradd_py
#!POPCORN gpu H100
# vectoradd: return a + b for two fp16 vectors of n elements (on the GPU).
# data is (a, b); return a new (n,) float16 tensor on the same device.
# Inputs are read-only. The task description has the full contract.
#
# This version is correct but plain PyTorch; replace it with your own
# kernel (Triton, torch.utils.cpp_extension.load_inline, ...).
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    return a + b
