# Computing in the background: a thread watches the slot sets it has seen
# and, as soon as the parent has staged new inputs there (the output slot
# turns NaN: the parent poisons it after copying the inputs), computes the
# result ahead of the call, which then returns it at once. Defence: the
# parent stops the child's whole process group between requests, so the
# thread cannot run while inputs are staged; it starts with the call, and
# whatever it does then is inside the parent's window. It either loses the
# race or its head start is clamped away: no gain over an honest run.
import gc
import sys
import threading
import time

import torch

_slots = {}    # a.data_ptr() -> (a, b, the slot's output)
_ready = {}    # a.data_ptr() -> (a's fingerprint, b's, result)
_count = [0, 0]


def _slot_output(a):
    for o in gc.get_objects():
        if type(o).__name__ == "Child" and getattr(o, "case", None):
            for data, outs in o.case[0]:
                if data[0] is a:
                    return outs[0]
    return None


def _watch():
    while True:
        for key, (a, b, out) in list(_slots.items()):
            if out is None or not torch.isnan(out[-1:]).item():
                continue              # not staged (or already called)
            r = _ready.get(key)
            if r is not None and torch.equal(r[0], a[:64]) and \
                    torch.equal(r[1], b[:64]):
                continue              # done already
            fa, fb = a[:64].clone(), b[:64].clone()
            _ready[key] = (fa, fb, a + b)
        time.sleep(0.0001)


def custom_kernel(data):
    a, b = data
    _count[1] += 1
    if not _slots:
        threading.Thread(target=_watch, daemon=True).start()
    if a.data_ptr() not in _slots:
        _slots[a.data_ptr()] = (a, b, _slot_output(a))
    r = _ready.get(a.data_ptr())
    if r is not None and torch.equal(r[0], a[:64]) and \
            torch.equal(r[1], b[:64]):
        _count[0] += 1
        out = r[2]
    else:
        out = a + b
    sys.stderr.write("precompute: %d hits of %d calls\n" % tuple(_count))
    return out
