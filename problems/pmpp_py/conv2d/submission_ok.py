#!POPCORN leaderboard conv2d_py
# Plain PyTorch. On a GPU torch lets cuDNN use TF32 for fp32 convolutions
# by default, which does not meet the tolerance: turn it off.
import torch

from task import input_t, output_t

torch.backends.cudnn.allow_tf32 = False


def custom_kernel(data: input_t) -> output_t:
    x, w = data
    return torch.nn.functional.conv2d(x, w)
