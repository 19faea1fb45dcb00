"""sort (Python): n fp32 values sorted ascending.

The problem's side of the harness (problems/harness/python/README.md,
"Writing a problem"); imported by the trusted parent only.

Data: (u - 1/2) 2^e, u a 24-bit uniform in [0, 1), e uniform in
[-20, 20]: both signs, 41 exponents, duplicates at large n; never NaN,
infinity or -0.0 (the value 0 is +0.0), and every value is exact in fp32,
so the sorted order is unique bit for bit. The reference is torch.sort;
the check is exact (bitwise, kbh_problem.compare_exact): no tolerance.
Cost: 8n bytes (read once, write once), no flops bound.

Sizes: the case's `size` on a GPU; on the CPU, sizes above 2^20 are divided
by 256, rounded up (kbh_problem.cpu_size).
"""
import torch

import kbh_problem as kp

KEYS = {"size": kp.integer(1, 1 << 31)}
INPUT_NAMES = ("data",)


setup = kp.size_setup


def generate(args, seed, device):
    g = kp.generator(seed, device)
    n = args["n"]
    u = torch.randint(0, 1 << 24, (n,), generator=g, device=device,
                      dtype=torch.int32)
    e = torch.randint(-20, 21, (n,), generator=g, device=device,
                      dtype=torch.int32)
    # (u - 2^23) / 2^24 is exact in fp32, and so is the scaling by 2^e
    x = (u - (1 << 23)).to(torch.float32)
    return (torch.ldexp(x, e - 24).to(torch.float32),)


def outputs(args):
    return [((args["n"],), torch.float32)]


def reference(args, inputs):
    (x,) = inputs
    return torch.sort(x).values


def check(args, inputs, expected, output):
    return kp.compare_exact(output, expected, what="sorted output")


def cost(args):
    return {"bytes": 8 * args["n"], "ops": "none"}
