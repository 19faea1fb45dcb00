# Computing in a forked grandchild: from its second call on, a process it
# forked watches both slot sets (it shares their memory) and, as soon as the
# parent has staged new inputs (the output slot turns NaN), computes the
# result into shared memory ahead of the call, which then returns a view of
# it. Defence: SIGSTOP goes to the child's whole process group, and the
# parent waits until every process of it has stopped, so the grandchild
# cannot run while inputs are staged: no gain. (CPU only in effect: CUDA
# cannot be used in a forked process.)
import gc
import mmap
import os
import sys
import time

import torch

_slots = []      # [(a, b, the slot's output)] of the slot sets seen
_shared = None   # per slot: [64 halves of a, 64 of b, n halves of a + b]
_count = [0, 0]


def _slot_output(a):
    for o in gc.get_objects():
        if type(o).__name__ == "Child" and getattr(o, "case", None):
            for data, outs in o.case[0]:
                if data[0] is a:
                    return outs[0]
    return None


def _grandchild(parent, n):
    try:
        _watch(parent, n)
    finally:            # never back into the harness's code
        os._exit(0)


def _watch(parent, n):
    torch.set_num_threads(1)     # no OpenMP pool after a fork
    sh = torch.frombuffer(_shared, dtype=torch.float16)
    views = []
    for k, (a, b, slot_out) in enumerate(_slots):
        base = k * (128 + n)
        views.append((a, b, slot_out, sh[base:base + 64],
                      sh[base + 64:base + 128], sh[base + 128:base + 128 + n]))
    end = time.monotonic() + 120
    while os.getppid() == parent and time.monotonic() < end:
        for a, b, slot_out, fa, fb, out in views:
            # staged (the parent poisons the output after the inputs) and
            # not done yet
            if not torch.isnan(slot_out[-1:]).item() or \
                    (torch.equal(a[:64], fa) and torch.equal(b[:64], fb)):
                continue
            fa.fill_(float("nan"))        # invalid while being written
            torch.add(a, b, out=out)
            fb.copy_(b[:64])
            fa.copy_(a[:64])
        time.sleep(0.0001)


def custom_kernel(data):
    global _shared
    a, b = data
    n = a.numel()
    _count[1] += 1
    ptrs = [s[0].data_ptr() for s in _slots]
    if len(_slots) < 2 and a.data_ptr() not in ptrs:
        _slots.append((a, b, _slot_output(a)))
        if len(_slots) == 2:
            _shared = mmap.mmap(-1, 2 * 2 * (128 + n))
            parent = os.getpid()
            if os.fork() == 0:
                _grandchild(parent, n)
    out = None
    if _shared is not None and a.data_ptr() in ptrs:
        base = ptrs.index(a.data_ptr()) * (128 + n)
        sh = torch.frombuffer(_shared, dtype=torch.float16)
        if torch.equal(sh[base:base + 64], a[:64].cpu()) and \
                torch.equal(sh[base + 64:base + 128], b[:64].cpu()):
            # written before fa (copied to the device on a GPU)
            out = sh[base + 128:base + 128 + n].to(a.device)
            _count[0] += 1
    if out is None:
        out = a + b
    sys.stderr.write("precompute: %d hits of %d calls\n" % tuple(_count))
    return out
