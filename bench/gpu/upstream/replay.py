# Hostile (upstream format): keeps each result by its inputs' addresses
# and, when the same buffers come again, returns it without computing.
import torch

from task import input_t, output_t

_seen = {}


def custom_kernel(data: input_t) -> output_t:
    a, b, out = data
    key = (a.data_ptr(), b.data_ptr(), out.data_ptr(), a.numel())
    if key not in _seen:
        torch.add(a, b, out=out)
        _seen[key] = True
    return out
