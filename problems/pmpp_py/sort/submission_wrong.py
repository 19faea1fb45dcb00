#!POPCORN leaderboard sort_py
# Wrong: a radix sort on order-preserving integer keys (sign bit flipped
# for positives, every bit for negatives) that forgets to map the sorted
# keys back to floats. The order is right but every value is wrong (a
# positive x comes back as -x, a negative one as garbage), at every size.
import torch

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    (x,) = data
    bits = x.view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    keys = torch.where(bits >= 1 << 31, bits ^ 0xFFFFFFFF, bits ^ 0x80000000)
    keys = torch.sort(keys).values
    # missing: the inverse of the key transform
    keys = torch.where(keys >= 1 << 31, keys - (1 << 32), keys)
    return keys.to(torch.int32).view(torch.float32)
