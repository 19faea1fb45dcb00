"""vectorsum (Python): the sum of n fp32 values.

The problem's side of the harness (problems/harness/python/README.md,
"Writing a problem"); imported by the trusted parent only.

Data uniform in [-1, 1): zero mean on purpose, so the exact sum is only
about 0.58 sqrt(n) and a kernel that skips or samples part of the input is
off by that part's own sum (~0.58 sqrt(skipped)). The reference sums x and
x^2 in float64. Tolerance, as for the CUDA and C vectorsum:
|out - sum| <= 8 u sqrt(n sum x^2) + 2 u |sum|, u = 2^-24. Left-to-right
fp32 summation, the least accurate order, errs by about 0.41 u n rms on
zero-mean data; 8 u n rms is some 20 of its standard deviations (tree,
blocked, per-thread and atomic orders are all more accurate), and
2 u |sum| covers the final rounding. At n = 2^28 the tolerance is about 74;
skipping 2^14 elements costs an error of that size on average. Cost: 4n
bytes, no flops bound.

Sizes: the case's `size` on a GPU; on the CPU, sizes above 2^20 are divided
by 256, rounded up (kbh_problem.cpu_size).
"""
import math

import torch

import kbh_problem as kp

KEYS = {"size": kp.integer(1, 1 << 31)}
INPUT_NAMES = ("data",)

U = 2.0 ** -24
_CHUNK = 1 << 26


setup = kp.size_setup


def generate(args, seed, device):
    return (kp.uniform((args["n"],), seed, device),)


def outputs(args):
    return [((), torch.float32)]


def reference(args, inputs):
    """(sum, sum of squares) in float64, a chunk at a time (bounded
    temporaries)."""
    (x,) = inputs
    s = s2 = 0.0
    for lo in range(0, x.numel(), _CHUNK):
        c = x[lo:lo + _CHUNK].double()
        s += float(c.sum())
        s2 += float((c * c).sum())
    return s, s2


def check(args, inputs, expected, output):
    s, s2 = expected
    tol = 8 * U * math.sqrt(args["n"] * s2) + 2 * U * abs(s)
    return kp.isclose_scalar(output, s, tol, "sum")


def cost(args):
    return {"bytes": 4 * args["n"], "ops": "none"}
