# An attack on the Python harness's timing (issue 29, item 2), for
# bench/gpu/py/timing.py: an honest vectoradd that patches the harness's
# own reply packer in its process, so that every call's claim (its event
# time) is scaled by KB_CLAIM_SCALE (0.6 by default) before the parent
# reads it; the stamps stay honest. Under the slack rule (the default) the
# claim is believed above window - slack - copy; with the sentinel
# (KBH_SENTINEL=1) it may refine the parent's own measurement by at most
# max(1 %, 2 us).
import kbh_wire

from task import input_t, output_t

SCALE = 0.6
_pack = kbh_wire.pack_reply


def _lying(r):
    if r.claim:
        r.claim *= SCALE
    return _pack(r)


kbh_wire.pack_reply = _lying


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    return a + b
