# Finishing after returning: returns zeros at once, and a thread writes the
# real result straight into the harness's output slot (found through the
# harness's objects in this process) after the harness has copied the
# zeros there and replied. Defence: the parent stops the child's process
# group as soon as it has the reply and checks the output while it is
# stopped: the thread cannot finish in time, the check fails.
import gc
import threading
import time

import torch


def _slot_output(a):
    for o in gc.get_objects():
        if type(o).__name__ == "Child" and getattr(o, "case", None):
            for data, outs in o.case[0]:
                if data[0] is a:
                    return outs[0]
    return None


def _finish(a, b, dst):
    # after the harness has copied the zeros there (the slot was NaN)
    while torch.isnan(dst[-1:]).item():
        time.sleep(0.0001)
    out = a + b              # the real work, after the reply
    dst.copy_(out)


def custom_kernel(data):
    a, b = data
    dst = _slot_output(a)
    if dst is not None:
        threading.Thread(target=_finish, args=(a, b, dst),
                         daemon=True).start()
    return torch.zeros_like(a)
