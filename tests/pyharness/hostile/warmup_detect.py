# Warm-up detection: honest for the first three calls (the quick check and
# the warm-up), then returns garbage at once. Defence: every call is
# checked, timed ones included.
import torch

_calls = 0


def custom_kernel(data):
    global _calls
    _calls += 1
    a, b = data
    if _calls <= 3:
        return a + b
    return torch.empty_like(a)
