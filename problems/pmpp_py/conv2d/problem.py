"""conv2d (Python): 2-D convolution as torch.nn.functional.conv2d, fp32.

The problem's side of the harness (problems/harness/python/README.md,
"Writing a problem"); imported by the trusted parent only.

input (B, C, S, S) and kernel (C, C, K, K) fp32, NCHW, no padding, stride
1, as many output channels as input channels; output (B, C, O, O),
O = S - K + 1. Inputs and weights uniform in [-1, 1).

Check, as the CUDA conv2d: |out - ref| <= 1e-4 (|ref| + sqrt(C K^2) / 3),
sqrt(C K^2)/3 being the typical magnitude of an output. fp32 accumulation
in any order, and Winograd or FFT in fp32, err by about 1e-6 of that
magnitude and pass; plain TF32 or fp16 tensor-core arithmetic (errors
near 1e-3 of it) does not. The reference is torch's fp32 convolution with
TF32 turned off (cuDNN's fp32 algorithms on a GPU): its own error, about
1e-6 of the typical magnitude, is 1% of the tolerance.

Cost: inputs and output once (4 (B C S^2 + C^2 K^2 + B C O^2) bytes), and
2 B C^2 K^2 O^2 flops reported as GFLOP/s but not used for the floor
(min_work 0), since Winograd and FFT legitimately do fewer operations.

Sizes: the case's own on a GPU; on the CPU, a spatial size S above 128 is
divided by 16, rounded up (kbh_problem.cpu_scale: 1024 -> 64, 512 -> 32;
256 times fewer pixels), batch, channels and kernel size kept.
"""
import math

import torch

import kbh_problem as kp

KEYS = {"batch": kp.integer(1, 64), "channels": kp.integer(1, 1024),
        "size": kp.integer(1, 16384), "ksize": kp.integer(1, 31)}
INPUT_NAMES = ("input", "kernel")

# The reference runs in fp32: TF32 would not meet the tolerance.
torch.backends.cudnn.allow_tf32 = False


def setup(case, device_kind):
    b, c, k = case["batch"], case["channels"], case["ksize"]
    (s,) = kp.cpu_scale((case["size"],), case["size"], device_kind,
                        limit=128, divisor=16)
    if k > s:
        raise ValueError("ksize %d above size %d" % (k, s))
    if b * c * s * s >= 1 << 31 or c * c * k * k >= 1 << 31:
        raise ValueError("a tensor of 2^31 elements or more")
    return {"b": b, "c": c, "s": s, "k": k, "o": s - k + 1}


def generate(args, seed, device):
    b, c, s, k = args["b"], args["c"], args["s"], args["k"]
    g = kp.generator(seed, device)
    return (kp.draw(g, (b, c, s, s)), kp.draw(g, (c, c, k, k)))


def outputs(args):
    return [((args["b"], args["c"], args["o"], args["o"]), torch.float32)]


def reference(args, inputs):
    x, w = inputs
    return torch.nn.functional.conv2d(x, w)


def check(args, inputs, expected, output):
    typical = math.sqrt(args["c"] * args["k"] ** 2) / 3
    return kp.compare(output, expected, rtol=1e-4, atol=1e-4 * typical)


def cost(args):
    b, c, s, k, o = (args[x] for x in "bcsko")
    return {"bytes": 4 * (b * c * s * s + c * c * k * k + b * c * o * o),
            "flops": 2 * b * c * c * k * k * o * o, "ops": "fp32",
            "min_work": 0}
