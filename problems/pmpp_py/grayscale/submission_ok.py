#!POPCORN leaderboard grayscale_py
# Plain PyTorch: fp32 arithmetic, one pass per channel.
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    (rgb,) = data
    return 0.2989 * rgb[..., 0] + 0.5870 * rgb[..., 1] + 0.1140 * rgb[..., 2]
