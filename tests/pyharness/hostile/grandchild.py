# Computing in a forked grandchild: from its second call on, a process it
# forked watches both input slot sets (it shares their memory) and computes
# each new input's result into shared memory ahead of the call, which then
# returns a view of it. Defence: SIGSTOP goes to the child's whole process
# group, and the parent waits until every process of it has stopped, so the
# grandchild cannot run while inputs are staged: no gain. (CPU only in
# effect: CUDA cannot be used in a forked process.)
import mmap
import os
import sys
import time

import torch

_slots = []      # [(a, b)] of the slot sets seen, in order
_shared = None   # per slot: [64 halves of a, 64 of b, n halves of a + b]
_count = [0, 0]


def _grandchild(parent, n):
    try:
        _watch(parent, n)
    finally:            # never back into the harness's code
        os._exit(0)


def _watch(parent, n):
    torch.set_num_threads(1)     # no OpenMP pool after a fork
    sh = torch.frombuffer(_shared, dtype=torch.float16)
    views = []
    for k, (a, b) in enumerate(_slots):
        base = k * (128 + n)
        views.append((a, b, sh[base:base + 64], sh[base + 64:base + 128],
                      sh[base + 128:base + 128 + n]))
    end = time.monotonic() + 120
    while os.getppid() == parent and time.monotonic() < end:
        for a, b, fa, fb, out in views:
            if torch.equal(a[:64], fa) and torch.equal(b[:64], fb):
                continue
            ca, cb = a[:64].clone(), b[:64].clone()
            time.sleep(0.0005)            # staging done? (stable inputs)
            if not (torch.equal(a[:64], ca) and torch.equal(b[:64], cb)):
                continue
            fa.fill_(float("nan"))        # invalid while being written
            torch.add(a, b, out=out)
            fb.copy_(cb)
            fa.copy_(ca)
        time.sleep(0.0001)


def custom_kernel(data):
    global _shared
    a, b = data
    n = a.numel()
    _count[1] += 1
    if len(_slots) < 2 and all(a.data_ptr() != s[0].data_ptr()
                               for s in _slots):
        _slots.append((a, b))
        if len(_slots) == 2:
            _shared = mmap.mmap(-1, 2 * 2 * (128 + n))
            parent = os.getpid()
            if os.fork() == 0:
                _grandchild(parent, n)
    out = None
    if _shared is not None:
        k = [s[0].data_ptr() for s in _slots].index(a.data_ptr()) \
            if a.data_ptr() in [s[0].data_ptr() for s in _slots] else -1
        if k >= 0:
            sh = torch.frombuffer(_shared, dtype=torch.float16)
            base = k * (128 + n)
            fa, fb = sh[base:base + 64], sh[base + 64:base + 128]
            if torch.equal(fa, a[:64]) and torch.equal(fb, b[:64]):
                out = sh[base + 128:base + 128 + n].clone()
                # still the same result after the copy? (a seqlock: the
                # grandchild invalidates fa before it writes)
                if torch.equal(fa, a[:64]) and torch.equal(fb, b[:64]):
                    _count[0] += 1
                else:
                    out = None
    if out is None:
        out = a + b
    sys.stderr.write("precompute: %d hits of %d calls\n" % tuple(_count))
    return out
