# Hostile (upstream format): freezes the clocks an in-process eval.py
# reads, so every timed call reads as (nearly) nothing.
import time

import torch

from task import input_t, output_t

time.perf_counter_ns = lambda: 1
time.perf_counter = lambda: 1e-9


class _Event:
    def __init__(self, *a, **k):
        pass

    def record(self, *a, **k):
        pass

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return 1e-6


torch.cuda.Event = _Event


def custom_kernel(data: input_t) -> output_t:
    a, b, out = data
    torch.add(a, b, out=out)
    return out
