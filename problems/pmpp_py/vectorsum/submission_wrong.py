#!POPCORN leaderboard vectorsum_py
# Wrong: rounds the data to fp16 before summing (a lossy "optimisation"):
# off by far more than the tolerance at every size.
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    (x,) = data
    return x.half().float().sum()
