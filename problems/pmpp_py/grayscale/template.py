#!POPCORN leaderboard grayscale_py
#!POPCORN gpu H100
# grayscale: gray = 0.2989 R + 0.5870 G + 0.1140 B for an (H, W, 3)
# float32 image (channels interleaved) on the GPU; return a new (H, W)
# float32 tensor on the same device. Inputs are read-only. The task
# description has the full contract and the tolerance (fp32 accuracy).
#
# This version is correct but plain PyTorch; replace it with your own
# kernel (Triton, torch.utils.cpp_extension.load_inline, ...).
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    (rgb,) = data
    return 0.2989 * rgb[..., 0] + 0.5870 * rgb[..., 1] + 0.1140 * rgb[..., 2]
