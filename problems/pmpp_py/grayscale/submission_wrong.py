#!POPCORN leaderboard grayscale_py
# Wrong: the channels read as B, G, R (an image library's BGR order), so
# the red and blue weights are swapped: off by 0.1849 (R - B), far beyond
# the tolerance for almost every pixel, at every size.
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    (rgb,) = data
    return 0.2989 * rgb[..., 2] + 0.5870 * rgb[..., 1] + 0.1140 * rgb[..., 0]
