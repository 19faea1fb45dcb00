from typing import Dict

import torch

input_t = Dict[str, object]
output_t = torch.Tensor
