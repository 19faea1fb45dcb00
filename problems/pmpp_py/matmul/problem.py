"""matmul (Python): c = a b with fp16 inputs and an fp16 result.

The problem's side of the harness (problems/harness/python/README.md,
"Writing a problem"); imported by the trusted parent only.

a (m, k) and b (k, n), row-major, uniform in [-1, 1) rounded to fp16; c
(m, n) fp16, accumulated in fp32 (the usual half-precision GEMM).

Reference: the fp32 product of the fp16 values. On a GPU it runs on the
TF32 tensor cores, which is exact here: fp16 has 11 significant bits, as
TF32 has, so every input converts to TF32 unchanged, every product is
exact in fp32 and the sums accumulate in fp32. On the CPU it is an fp32
GEMM.

Check, as the CUDA matmul: |c - ref| <= 1e-3 |ref| + 1e-3 sqrt(k)/3,
sqrt(k)/3 being the typical |c|. Rounding the result to fp16 (at most
2^-11 relative) and any fp32 accumulation order (split-K included) pass;
accumulating in fp16 (errors of several 1e-3 of |c| at k >= 1024) does
not, nor does a missing term (about 1/3 in size).

Cost: 2 (mk + kn + mn) bytes and 2 mnk flops on the fp16 tensor cores;
the floor counts half the flops (min_work 0.5), leaving room for
Strassen-like schemes.

Sizes: the case's own on a GPU; on the CPU, when m n k exceeds 2^30, m, n
and k are each divided by 16, rounded up (kbh_problem.cpu_scale: 4096
times less work).
"""
import math

import torch

import kbh_problem as kp

KEYS = {"m": kp.integer(1, 65536), "n": kp.integer(1, 65536),
        "k": kp.integer(1, 65536)}
INPUT_NAMES = ("a", "b")

# Exact for fp16 inputs (see above), and 8 times faster than fp32 FMAs.
torch.backends.cuda.matmul.allow_tf32 = True


def setup(case, device_kind):
    m, n, k = case["m"], case["n"], case["k"]
    if max(m * k, k * n, m * n) > 1 << 30:
        raise ValueError("a matrix above 2^30 elements")
    m, n, k = kp.cpu_scale((m, n, k), m * n * k, device_kind,
                           limit=1 << 30)
    return {"m": m, "n": n, "k": k}


def generate(args, seed, device):
    g = kp.generator(seed, device)
    return (kp.draw(g, (args["m"], args["k"]), torch.float16),
            kp.draw(g, (args["k"], args["n"]), torch.float16))


def outputs(args):
    return [((args["m"], args["n"]), torch.float16)]


def reference(args, inputs):
    a, b = inputs
    return a.float() @ b.float()


def check(args, inputs, expected, output):
    return kp.compare(output, expected, rtol=1e-3,
                      atol=1e-3 * math.sqrt(args["k"]) / 3, what="c")


def cost(args):
    m, n, k = args["m"], args["n"], args["k"]
    return {"bytes": 2 * (m * k + k * n + m * n), "flops": 2 * m * n * k,
            "ops": "fp16_tc", "min_work": 0.5}
