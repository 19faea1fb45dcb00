# An attack on the Python harness's timing (issue 29, item 2), for
# bench/gpu/py/timing.py: an honest vectoradd that patches the harness's
# own reply packer in its process, so that every call's claim (its event
# time) is SHIFT_NS shorter than it was, a lie small enough to hide in
# the slack rule's slack (the issue's -9.6 %, unflagged, on the H200). With
# the sentinel it may refine the parent's own measurement by at most
# max(1 %, 2 us).
import kbh_wire

from task import input_t, output_t

SHIFT_NS = 30000
_pack = kbh_wire.pack_reply


def _lying(r):
    if r.claim > SHIFT_NS:
        r.claim -= SHIFT_NS
    return _pack(r)


kbh_wire.pack_reply = _lying


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    return a + b
