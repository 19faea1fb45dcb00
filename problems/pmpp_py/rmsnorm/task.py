"""rmsnorm: the types of custom_kernel, for submissions
(`from task import input_t, output_t`)."""
from typing import Tuple

import torch

input_t = Tuple[torch.Tensor, torch.Tensor, float]  # x (M, N) bfloat16,
                                                    # w (N,) bfloat16, eps
output_t = torch.Tensor                             # (M, N) bfloat16
