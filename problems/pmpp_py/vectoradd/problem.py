"""vectoradd (Python): out = a + b, element-wise, fp16.

The problem's side of the harness (problems/harness/python/README.md,
"Writing a problem"); imported by the trusted parent only.

Inputs uniform in [-1, 1), drawn in fp32 and rounded to fp16. The
reference is the correctly rounded fp16 sum (fp32 add, one rounding).
Tolerance 1e-3 + 1e-3 |expected|: an fp16 add is correctly rounded, and a
sum taken in fp32 and rounded once is within one fp16 ulp (2^-10 relative,
below 1e-3), so every honest kernel passes, while a missed or misplaced
element is off by up to 2. Cost: 6n bytes (read a and b, write out), no
flops bound: a bandwidth-bound problem.

Sizes: the case's `size` on a GPU; on the CPU, sizes above 2^20 are divided
by 256, rounded up (kbh_problem.cpu_size).
"""
import torch

import kbh_problem as kp

KEYS = {"size": kp.integer(1, 1 << 31)}
INPUT_NAMES = ("a", "b")


setup = kp.size_setup


def generate(args, seed, device):
    g = kp.generator(seed, device)
    n = args["n"]
    a = torch.rand(n, generator=g, device=device).mul_(2).sub_(1).half()
    b = torch.rand(n, generator=g, device=device).mul_(2).sub_(1).half()
    return (a, b)


def outputs(args):
    return [((args["n"],), torch.float16)]


def reference(args, inputs):
    a, b = inputs
    return (a.float() + b.float()).half()


def check(args, inputs, expected, output):
    return kp.compare(output, expected, rtol=1e-3, atol=1e-3)


def cost(args):
    return {"bytes": 6 * args["n"], "ops": "none"}
