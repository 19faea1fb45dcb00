# Garbage-collector scan: looks through every object of its process (and
# one level into containers) for a tensor that already holds the expected
# output, or a copy of its inputs (a pristine copy to poison). Reports what
# it found on stderr; uses a found answer if any. Defence: the expected
# outputs and pristine copies live in the parent's process only, so it
# must find nothing and compute honestly.
import gc
import sys

import torch

_calls = 0


def _tensors():
    """Every tensor in the process, one level into containers."""
    objs = gc.get_objects()
    out = []
    skip = {id(objs), id(out)}
    for o in objs:
        if id(o) in skip:
            continue
        if isinstance(o, torch.Tensor):
            out.append(o)
            continue
        if isinstance(o, dict):
            o = list(o.values())
        if isinstance(o, (list, tuple)):
            for x in o:
                if isinstance(x, torch.Tensor):
                    out.append(x)
                elif isinstance(x, (list, tuple)):
                    out += [y for y in x if isinstance(y, torch.Tensor)]
    return out


def custom_kernel(data):
    global _calls
    a, b = data
    want = a + b
    _calls += 1
    if _calls > 3:
        return want
    mine = {id(a), id(b), id(want)}
    answers, copies = [], 0
    for t in _tensors():
        if id(t) in mine or t.dtype != a.dtype or t.shape != a.shape:
            continue
        if t.data_ptr() in (a.data_ptr(), b.data_ptr()):
            continue
        if torch.equal(t, want):
            answers.append(t)
        elif torch.equal(t, a) or torch.equal(t, b):
            copies += 1
    sys.stderr.write("gc_scan: call %d: %d expected-like, %d pristine-like\n"
                     % (_calls, len(answers), copies))
    return answers[0] if answers else want
