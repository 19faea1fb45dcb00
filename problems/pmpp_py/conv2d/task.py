"""conv2d: the types of custom_kernel, for submissions
(`from task import input_t, output_t`)."""
from typing import Tuple

import torch

input_t = Tuple[torch.Tensor, torch.Tensor]  # input (B, C, S, S), kernel
                                             # (C, C, K, K): float32, NCHW
output_t = torch.Tensor                      # (B, C, S-K+1, S-K+1) float32
