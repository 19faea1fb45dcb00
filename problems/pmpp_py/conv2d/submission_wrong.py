#!POPCORN leaderboard conv2d_py
# Wrong: the loop over input channels stops one early (range(C - 1)), so
# the last input channel never contributes: every output is off by that
# channel's share, far beyond the tolerance, at every size (with one
# channel the output is all zeros).
import torch

from task import input_t, output_t

torch.backends.cudnn.allow_tf32 = False


def custom_kernel(data: input_t) -> output_t:
    x, w = data
    c, k = w.shape[0], w.shape[2]
    o = x.shape[2] - k + 1
    out = torch.zeros((x.shape[0], c, o, o), dtype=x.dtype, device=x.device)
    for ci in range(c - 1):
        out += torch.nn.functional.conv2d(x[:, ci:ci + 1], w[:, ci:ci + 1])
    return out
