# Hostile (upstream format): where the run is sealed, its child is our
# harness's; this patches the child's reply packer so that every call's
# claim is scaled by 0.6 before the parent reads it (issue 29, item 2).
# Unsealed there is no such packer, and it is an honest submission.
import torch

from task import input_t, output_t

try:
    import kbh_wire

    _pack = kbh_wire.pack_reply

    def _lying(r):
        if r.claim:
            r.claim *= 0.6
        return _pack(r)

    kbh_wire.pack_reply = _lying
except ImportError:
    pass


def custom_kernel(data: input_t) -> output_t:
    a, b, out = data
    torch.add(a, b, out=out)
    return out
