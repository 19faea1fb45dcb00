"""matmul: the types of custom_kernel, for submissions
(`from task import input_t, output_t`)."""
from typing import Tuple

import torch

input_t = Tuple[torch.Tensor, torch.Tensor]  # a (m, k), b (k, n): float16
output_t = torch.Tensor                      # c = a b: (m, n) float16
