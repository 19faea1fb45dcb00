"""grouped_gemm: the types of custom_kernel, for submissions
(`from task import input_t, output_t`)."""
from typing import Tuple

import torch

input_t = Tuple[torch.Tensor, torch.Tensor, torch.Tensor]
# x (T, K) bfloat16, rows sorted by group; w (G, N, K) bfloat16, one
# nn.Linear weight per group; offs (G,) int32, the end row of each group
output_t = torch.Tensor   # (T, N) bfloat16: out[r] = x[r] @ w[g(r)].T
