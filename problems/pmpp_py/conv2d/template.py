#!POPCORN leaderboard conv2d_py
#!POPCORN gpu H100
# conv2d: torch.nn.functional.conv2d(input, kernel) in fp32 (no padding,
# stride 1) on the GPU: input (B, C, S, S), kernel (C, C, K, K); return a
# new (B, C, S-K+1, S-K+1) float32 tensor on the same device. Inputs are
# read-only. fp32 accuracy: TF32 does not pass. The task description has
# the full contract and the tolerance.
#
# This version is correct but plain PyTorch; replace it with your own
# kernel (Triton, torch.utils.cpp_extension.load_inline, ...).
import torch

from task import input_t, output_t

torch.backends.cudnn.allow_tf32 = False


def custom_kernel(data: input_t) -> output_t:
    x, w = data
    return torch.nn.functional.conv2d(x, w)
