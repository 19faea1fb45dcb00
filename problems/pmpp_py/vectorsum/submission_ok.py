#!POPCORN leaderboard vectorsum_py
# Plain PyTorch.
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    (x,) = data
    return x.sum()
