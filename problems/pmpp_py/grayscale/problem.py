"""grayscale (Python): RGB to luminance, fp32.

The problem's side of the harness (problems/harness/python/README.md,
"Writing a problem"); imported by the trusted parent only.

rgb is (H, W, 3) fp32, interleaved, channels uniform in [0, 1); gray is
(H, W) fp32, gray = 0.2989 R + 0.5870 G + 0.1140 B. The reference computes
in float64 and the check accepts |gray - Y| <= 1e-5 + 1e-5 |Y|, as the
CUDA grayscale: fp32 arithmetic in any order (with or without FMA, the
weights rounded to fp32) is within a few ulp of Y (~2e-7), while fp16
(2^-11 relative), bf16 or TF32 arithmetic is not, nor is a missed pixel
or a swapped channel. Cost: 16 bytes per pixel (12 read, 4 written), no
flops bound.

Sizes: the case's height x width on a GPU; on the CPU, when height x
width exceeds 2^20 pixels, both are divided by 16, rounded up
(kbh_problem.cpu_scale: 256 times fewer pixels, as cpu_size).
"""
import torch

import kbh_problem as kp

KEYS = {"height": kp.integer(1, 65536), "width": kp.integer(1, 65536)}
INPUT_NAMES = ("rgb",)
WEIGHTS = (0.2989, 0.5870, 0.1140)


def setup(case, device_kind):
    h, w = case["height"], case["width"]
    if h * w > 1 << 30:
        raise ValueError("height x width above 2^30")
    h, w = kp.cpu_scale((h, w), h * w, device_kind)
    return {"h": h, "w": w}


def generate(args, seed, device):
    return (kp.uniform((args["h"], args["w"], 3), seed, device, lo=0.0),)


def outputs(args):
    return [((args["h"], args["w"]), torch.float32)]


def reference(args, inputs):
    (rgb,) = inputs
    wt = torch.tensor(WEIGHTS, dtype=torch.float64, device=rgb.device)
    # a row band at a time: bounded float64 temporaries
    out = torch.empty((args["h"], args["w"]), dtype=torch.float64,
                      device=rgb.device)
    step = max(1, (1 << 24) // max(1, args["w"]))
    for lo in range(0, args["h"], step):
        band = rgb[lo:lo + step].double()
        out[lo:lo + step] = (band * wt).sum(-1)
    return out


def check(args, inputs, expected, output):
    return kp.compare(output, expected, rtol=1e-5, atol=1e-5, what="gray")


def cost(args):
    return {"bytes": 16 * args["h"] * args["w"], "ops": "none"}
