# Shared helpers of an upstream-shaped Python problem set (a task lists
# this file as "../utils.py"), written for our tests from the protocol:
# seeding and the tolerance check a reference module uses.
import random

import numpy as np
import torch


def set_seed(seed: int = 42):
    # As upstream's: numpy takes seeds below 2**32 only, so the
    # platform's POPCORN_SEED must stay in upstream's range (below 2**31).
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def verbose_allclose(received, expected, rtol=1e-5, atol=1e-8):
    """Returns a list of messages, empty when received matches expected."""
    if received.shape != expected.shape:
        return [f"SIZE MISMATCH: got {tuple(received.shape)}, "
                f"want {tuple(expected.shape)}"]
    diff = (received.float() - expected.float()).abs()
    bad = ~(diff <= atol + rtol * expected.float().abs())
    bad |= torch.isnan(received.float())
    n = int(bad.sum())
    if n:
        i = int(bad.flatten().nonzero()[0])
        return [f"{n} mismatched elements; first at {i}: "
                f"{received.flatten()[i].item()} vs "
                f"{expected.flatten()[i].item()}"]
    return []
