#!POPCORN leaderboard matmul_py
# Wrong: an off-by-one in the k loop (range(k - 1)), so the last column of
# a never meets the last row of b: every element misses one product
# (about 1/3 in size), at every size (with k = 1 the result is zero).
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    k = a.shape[1]
    return (a[:, :k - 1].float() @ b[:k - 1].float()).half()
