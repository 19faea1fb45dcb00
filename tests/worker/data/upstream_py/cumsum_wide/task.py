from typing import Tuple, TypedDict

import torch

input_t = Tuple[torch.Tensor, torch.Tensor]
output_t = torch.Tensor


class TestSpec(TypedDict):
    size: int
    seed: int
