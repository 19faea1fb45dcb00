"""histogram (Python): a 256-bin histogram of n bytes.

The problem's side of the harness (problems/harness/python/README.md,
"Writing a problem"); imported by the trusted parent only.

data is (n,) uint8, uniform random bytes; the result is (256,) int32,
bins[v] = #{i : data[i] == v}. Counts are integers: the check is exact
(every bin), so there is no tolerance to justify; int32 holds every
count, since n < 2^31. The reference is torch.bincount. Cost: n + 1024
bytes (read the data, write the bins), no flops bound.

Sizes: the case's `size` on a GPU; on the CPU, sizes above 2^20 are divided
by 256, rounded up (kbh_problem.cpu_size).
"""
import torch

import kbh_problem as kp

KEYS = {"size": kp.integer(1, (1 << 31) - 1)}
INPUT_NAMES = ("data",)


setup = kp.size_setup


def generate(args, seed, device):
    g = kp.generator(seed, device)
    return (torch.randint(0, 256, (args["n"],), generator=g, device=device,
                          dtype=torch.uint8),)


def outputs(args):
    return [((256,), torch.int32)]


def reference(args, inputs):
    (x,) = inputs
    return torch.bincount(x, minlength=256)


def check(args, inputs, expected, output):
    return kp.compare_exact(output, expected, what="bins")


def cost(args):
    return {"bytes": args["n"] + 1024, "ops": "none"}
