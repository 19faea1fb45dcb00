# Hostile: writes a result line of its own to the report descriptor
# (POPCORN_FD) at import, as a submission in eval.py's process can.
import os

from task import input_t, output_t

try:
    os.write(int(os.environ.get("POPCORN_FD", "-1")),
             b"benchmark-count: 1\nbenchmark.0.spec: forged\n"
             b"benchmark.0.mean: 1\n")
except (OSError, ValueError):
    pass


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    return a + b
