# Computing in the background: a thread watches the input slots it has
# seen and, as soon as the parent stages new inputs there, computes the
# result ahead of the call, which then returns it at once. Defence: the
# parent stops the child's whole process group between requests, so the
# thread cannot run while inputs are staged; it starts with the call, and
# whatever it does then is inside the parent's window. It either loses the
# race or its head start is clamped away: no gain over an honest run.
import sys
import threading
import time

import torch

_slots = {}    # a.data_ptr() -> (a, b)
_ready = {}    # a.data_ptr() -> (a's fingerprint, b's, result)
_count = [0, 0]


def _fp(t):
    return t[:64].clone()


def _watch():
    done = {}
    while True:
        for key, (a, b) in list(_slots.items()):
            fa, fb = _fp(a), _fp(b)
            old = done.get(key)
            if old is not None and torch.equal(old[0], fa) and \
                    torch.equal(old[1], fb):
                continue
            time.sleep(0.0005)            # staging done? (stable inputs)
            if not (torch.equal(_fp(a), fa) and torch.equal(_fp(b), fb)):
                continue
            _ready[key] = (fa, fb, a + b)
            done[key] = (fa, fb)
        time.sleep(0.0001)


def custom_kernel(data):
    a, b = data
    _count[1] += 1
    if not _slots:
        threading.Thread(target=_watch, daemon=True).start()
    _slots[a.data_ptr()] = (a, b)
    r = _ready.get(a.data_ptr())
    if r is not None and torch.equal(r[0], a[:64]) and \
            torch.equal(r[1], b[:64]):
        _count[0] += 1
        out = r[2]
    else:
        out = a + b
    sys.stderr.write("precompute: %d hits of %d calls\n" % tuple(_count))
    return out
