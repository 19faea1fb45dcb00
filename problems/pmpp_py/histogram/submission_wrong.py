#!POPCORN leaderboard histogram_py
# Wrong: an off-by-one start (the loop begins at index 1, as a kernel
# whose first thread skips its element), so data[0] is never counted: one
# bin is one short, at every size.
import torch

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    (x,) = data
    return torch.bincount(x[1:], minlength=256).to(torch.int32)
