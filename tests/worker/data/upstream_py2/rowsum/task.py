import torch

input_t = torch.Tensor
output_t = torch.Tensor
