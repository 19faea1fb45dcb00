"""A test problem (tests/pyharness): out = x, with a 20 s watchdog in every
mode, so that a submission that hangs ends the run quickly."""
import torch

import kbh_problem as kp

KEYS = {"size": kp.integer(1, 1 << 20)}
WATCHDOG_S = dict.fromkeys(("test", "benchmark", "profile", "leaderboard"), 20)


def generate(args, seed, device):
    return (kp.uniform((args["size"],), seed, device),)


def outputs(args):
    return [((args["size"],), torch.float32)]


def reference(args, inputs):
    return inputs[0].clone()


def check(args, inputs, expected, output):
    return kp.compare(output, expected, 0.0, 0.0)


def cost(args):
    return {"bytes": 8 * args["size"]}
