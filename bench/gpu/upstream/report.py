# Hostile (upstream format): writes result lines of its own to the report
# descriptor at import, as code in eval.py's process can.
import os

import torch

from task import input_t, output_t

try:
    os.write(int(os.environ.get("POPCORN_FD", "-1")),
             b"benchmark-count: 1\nbenchmark.0.spec: forged\n"
             b"benchmark.0.mean: 1\n")
except (OSError, ValueError):
    pass


def custom_kernel(data: input_t) -> output_t:
    a, b, out = data
    torch.add(a, b, out=out)
    return out
