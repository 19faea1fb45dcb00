"""sort: the types of custom_kernel, for submissions
(`from task import input_t, output_t`)."""
from typing import Tuple

import torch

input_t = Tuple[torch.Tensor]   # (data,): (n,) float32
output_t = torch.Tensor         # data sorted ascending: (n,) float32
