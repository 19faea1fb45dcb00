import torch

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    x, y = data
    torch.cumsum(x, dim=0, out=y)
    return y
