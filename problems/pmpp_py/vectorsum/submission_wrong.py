#!POPCORN leaderboard vectorsum_py
# Wrong: sums the first half and doubles it (an "estimate"). The data has
# zero mean, so the second half's own sum, about 0.58 sqrt(n/2), is missing:
# far beyond the tolerance at every size but 1.
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    (x,) = data
    n = x.numel()
    h = (n + 1) // 2
    return x[:h].sum() * (n / h)
