"""rmsnorm (Python): RMSNorm over the rows of a bf16 matrix, with a weight.

The problem's side of the harness (problems/harness/python/README.md,
"Writing a problem"); imported by the trusted parent only.

x (M, N) and w (N,) bf16, eps = 1e-6 (a constant of data);
out[i, j] = x[i, j] / sqrt(mean_j x[i, j]^2 + eps) * w[j], bf16: the
normalisation of every transformer block of today's LLMs, one row per
token. A fused kernel reads x once and writes out once.

Data: x uniform in [-1, 1) times a per-row scale 2^e, e uniform in
[-6, 6] (rows of very different size: a kernel must normalise each row by
its own statistics), w uniform in [-1, 1), both rounded to bf16.

Reference: float32 throughout, unrounded. Check:
|out - ref| <= 2^-6 |ref| + 1e-5. out is a product (x times the row's
factor times w): with the statistics in fp32, each bf16 rounding on the
way (x r, then times w, then the result) costs at most 2^-8 relative, so
any honest order with up to three roundings stays within 3 2^-8 < 2^-6;
the 1e-5 covers results near bf16's smallest normals. Statistics
accumulated in bf16 are not accepted by design. A weight read as 1 + w,
a missing weight, or a row normalised by another row's statistics is off
by far more.

Cost: 4 M N + 2 N bytes (read x and w, write out), no flops bound.

Sizes: the case's own on a GPU; on the CPU, when M N exceeds 2^20, the
rows M are divided by 256, rounded up (kbh_problem.cpu_scale), N kept.
"""
import torch

import kbh_problem as kp

KEYS = {"rows": kp.integer(1, 1 << 24), "cols": kp.integer(1, 65536)}
INPUT_NAMES = ("x", "w")
EPS = 1e-6


def setup(case, device_kind):
    m, n = case["rows"], case["cols"]
    if m * n >= 1 << 31:
        raise ValueError("rows x cols of 2^31 or more")
    (m,) = kp.cpu_scale((m,), m * n, device_kind, divisor=256)
    return {"m": m, "n": n}


def generate(args, seed, device):
    g = kp.generator(seed, device)
    m, n = args["m"], args["n"]
    e = torch.randint(-6, 7, (m, 1), generator=g, device=device)
    x = kp.draw(g, (m, n)).mul_(torch.pow(2.0, e.float()))
    w = kp.draw(g, (n,), torch.bfloat16)
    return (x.to(torch.bfloat16), w, EPS)


def outputs(args):
    return [((args["m"], args["n"]), torch.bfloat16)]


def reference(args, inputs):
    x, w, eps = inputs
    xf = x.float()
    r = torch.rsqrt(xf.square().mean(-1, keepdim=True) + eps)
    return xf.mul_(r).mul_(w.float())


def check(args, inputs, expected, output):
    return kp.compare(output, expected, rtol=2.0 ** -6, atol=1e-5)


def cost(args):
    return {"bytes": 4 * args["m"] * args["n"] + 2 * args["n"],
            "ops": "none"}
