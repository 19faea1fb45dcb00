import torch

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    a, b, c = data
    torch.add(a, b, out=c)
    return c
