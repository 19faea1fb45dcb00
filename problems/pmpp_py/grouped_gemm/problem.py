"""grouped_gemm (Python): a grouped bf16 GEMM, as in a mixture-of-experts
layer.

The problem's side of the harness (problems/harness/python/README.md,
"Writing a problem"); imported by the trusted parent only.

x (T, K) bf16 holds T tokens sorted by expert; w (G, N, K) bf16 holds one
weight per expert in nn.Linear's layout; offs (G,) int32 holds where each
group of rows ends (offs[G-1] = T; group g is rows offs[g-1] .. offs[g]-1,
offs[-1] being 0). out (T, N) bf16: every group's rows times its weight
transposed, out[r] = x[r] w[g]^T, accumulated in fp32. The group sizes are
drawn anew for every call (the routing changes with every batch), so they
live on the device; groups may be empty.

Why this problem rather than an fp8 GEMM: it is the GEMM of today's MoE
models, it runs on the CPU as well (CI runs every problem end to end
there, and the CPU build of PyTorch that CI uses has no float8 dtypes),
and its accuracy rule is the plain one of bf16 with fp32 accumulation.

Data uniform in [-1, 1), rounded to bf16; cut points uniform.

Reference: the fp32 product, group by group. On a GPU it runs on the TF32
tensor cores, which is exact here: bf16's 8 significant bits fit TF32's
11, so inputs convert unchanged, products are exact in fp32 and sums
accumulate in fp32.

Check: |out - ref| <= 2^-7 |ref| + 2^-7 sqrt(K)/3, sqrt(K)/3 being the
typical |out|: one rounding to bf16 (at most 2^-8 relative) and any fp32
accumulation order (split-K included) pass; bf16 accumulation (errors
near K 2^-9 / 3) does not, nor does a row multiplied by another group's
weight.

Cost: 2 (T K + min(G, T) N K + T N) + 4 G bytes (at most T groups have
rows, and an empty group's weight need not be read), 2 T N K flops on the
bf16 tensor cores (the fp16 rate); the floor counts half the flops
(min_work 0.5), as matmul's.

Sizes: the case's own on a GPU; on the CPU, when T N K exceeds 2^30, T,
N and K are each divided by 16, rounded up (kbh_problem.cpu_scale); G
kept.
"""
import math

import torch

import kbh_problem as kp

KEYS = {"groups": kp.integer(1, 1024), "tokens": kp.integer(1, 1 << 24),
        "n": kp.integer(1, 65536), "k": kp.integer(1, 65536)}
INPUT_NAMES = ("x", "w", "offs")

# Exact for bf16 inputs (see above), and 8 times faster than fp32 FMAs.
torch.backends.cuda.matmul.allow_tf32 = True


def setup(case, device_kind):
    g, t, n, k = case["groups"], case["tokens"], case["n"], case["k"]
    if max(t * k, g * n * k, t * n) >= 1 << 31:
        raise ValueError("a tensor of 2^31 elements or more")
    t, n, k = kp.cpu_scale((t, n, k), t * n * k, device_kind,
                           limit=1 << 30)
    return {"g": g, "t": t, "n": n, "k": k}


def generate(args, seed, device):
    gen = kp.generator(seed, device)
    g, t, n, k = args["g"], args["t"], args["n"], args["k"]
    x = kp.draw(gen, (t, k), torch.bfloat16)
    w = kp.draw(gen, (g, n, k), torch.bfloat16)
    cuts = torch.randint(0, t + 1, (g,), generator=gen, device=device)
    cuts[-1] = t
    offs = torch.sort(cuts).values.to(torch.int32)
    return (x, w, offs)


def outputs(args):
    return [((args["t"], args["n"]), torch.bfloat16)]


def reference(args, inputs):
    x, w, offs = inputs
    out = torch.empty((args["t"], args["n"]), dtype=torch.float32,
                      device=x.device)
    start = 0
    for g, end in enumerate(offs.tolist()):
        if end > start:
            out[start:end] = x[start:end].float() @ w[g].float().t()
        start = end
    return out


def check(args, inputs, expected, output):
    return kp.compare(output, expected, rtol=2.0 ** -7,
                      atol=2.0 ** -7 * math.sqrt(args["k"]) / 3)


def cost(args):
    g, t, n, k = args["g"], args["t"], args["n"], args["k"]
    return {"bytes": 2 * (t * k + min(g, t) * n * k + t * n) + 4 * g,
            "flops": 2 * t * n * k, "ops": "fp16_tc", "min_work": 0.5}
