#!POPCORN leaderboard vectorsum_py
#!POPCORN gpu H100
# vectorsum: return the sum of n float32 values (on the GPU) as a
# 0-dimensional float32 tensor on the same device. data is (x,), x of
# shape (n,). Inputs are read-only. The task description has the full
# contract and the tolerance.
#
# This version is correct but plain PyTorch; replace it with your own
# kernel (Triton, torch.utils.cpp_extension.load_inline, ...).
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    (x,) = data
    return x.sum()
