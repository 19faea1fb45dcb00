"""grayscale: the types of custom_kernel, for submissions
(`from task import input_t, output_t`)."""
from typing import Tuple

import torch

input_t = Tuple[torch.Tensor]   # (rgb,): (H, W, 3) float32, interleaved
output_t = torch.Tensor         # gray: (H, W) float32
