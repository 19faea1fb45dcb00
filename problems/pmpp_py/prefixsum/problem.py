"""prefixsum (Python): the inclusive prefix sum of n fp32 values.

The problem's side of the harness (problems/harness/python/README.md,
"Writing a problem"); imported by the trusted parent only.

Data uniform in [-1, 1). The reference scans in float64 and also scans
|x|, which gives each element the scale of its rounding error; the check
accepts |out[i] - S(i)| <= 1e-6 + 1e-5 sum_{j<=i} |x_j|, as the CUDA
prefixsum. Any fp32 order (sequential, blocked, tree, decoupled
look-back) errs by at most about u sum_{j<=i} |S_j| in the worst case and
by far less on zero-mean data, orders of magnitude inside 1e-5 sum |x_j|
(u = 2^-24); an exclusive scan, a missing block carry or a carry added
twice is off by O(1) and fails. Cost: 8n bytes, no flops bound.

Sizes: the case's `size` on a GPU; on the CPU, sizes above 2^20 are divided
by 256, rounded up (kbh_problem.cpu_size).
"""
import torch

import kbh_problem as kp

KEYS = {"size": kp.integer(1, 1 << 31)}
INPUT_NAMES = ("data",)


setup = kp.size_setup


def generate(args, seed, device):
    return (kp.uniform((args["n"],), seed, device),)


def outputs(args):
    return [((args["n"],), torch.float32)]


def reference(args, inputs):
    """(the float64 scan, the float64 scan of |x|)."""
    (x,) = inputs
    d = x.double()
    return torch.cumsum(d, 0), torch.cumsum(d.abs_(), 0)


def check(args, inputs, expected, output):
    want, scale = expected
    return kp.compare(output, want, rtol=0.0, atol=1e-6 + 1e-5 * scale,
                      what="scan")


def cost(args):
    return {"bytes": 8 * args["n"], "ops": "none"}
