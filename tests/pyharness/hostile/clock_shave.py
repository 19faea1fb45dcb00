# Lies about its time by patching clocks: time.monotonic_ns and friends,
# the harness's own clock reference in its process (__main__._now), and on
# CUDA torch.cuda.Event.elapsed_time and the harness's captured reference
# to it. Each call really takes over 3 ms (a spin, then the sum) but claims
# 100 us, with stamps that fit the parent's window. Defence: the parent's
# window bounds the claim from below (window - slack - copy): the samples
# are clamped, no sample can be much shorter than the call really took,
# and the clamps (unexplained by load, half below the median) make the case
# suspect.
import gc
import sys
import time

import torch

_real = time.monotonic_ns
_last = [0]
_override = [None]
CLAIM_NS = 100000


def _fake():
    if _override[0] is not None:
        v, _override[0] = _override[0], None
        return v
    _last[0] = _real()
    return _last[0]


def _elapsed(self, end):
    return CLAIM_NS / 1e6


time.monotonic_ns = _fake
time.perf_counter_ns = _fake
main = sys.modules["__main__"]
if hasattr(main, "_now"):
    main._now = _fake
if torch.cuda.is_available():
    torch.cuda.Event.elapsed_time = _elapsed
for o in gc.get_objects():
    if type(o).__name__ == "Child" and hasattr(o, "elapsed"):
        o.elapsed = _elapsed


def custom_kernel(data):
    t0 = _last[0]            # the harness's t0, read through _fake
    a, b = data
    end = _real() + 3000000
    while _real() < end:
        pass
    out = a + b
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    _override[0] = t0 + CLAIM_NS     # the harness's t1
    return out
