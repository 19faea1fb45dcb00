# Hostile: lies about time the ways an in-process eval.py believes. It
# freezes time.perf_counter(_ns) and torch.cuda.Event's elapsed time.
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
    a, b = data
    return a + b
