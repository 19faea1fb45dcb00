"""histogram: the types of custom_kernel, for submissions
(`from task import input_t, output_t`)."""
from typing import Tuple

import torch

input_t = Tuple[torch.Tensor]   # (data,): (n,) uint8
output_t = torch.Tensor         # bins: (256,) int32
