# Escaping the process group: forks a grandchild that calls setsid() and
# setpgid() to leave the child's process group (which the parent stops
# between requests) and counts in shared memory as fast as it can. At each
# call the child reports the grandchild's process group and how far the
# count advanced between its previous call and this one (while the parent
# had everything stopped). Defence: the child's seccomp filter makes
# setsid and setpgid no-ops, so the grandchild stays in the group and is
# stopped with it: the count does not advance between calls.
import ctypes
import mmap
import os
import sys
import time

_shm = mmap.mmap(-1, 16)
_counter = ctypes.c_uint64.from_buffer(_shm, 0)
_pgid = ctypes.c_int64.from_buffer(_shm, 8)
_state = {"pid": 0, "last": None, "moved": 0, "calls": 0}


def _grandchild(parent):
    try:
        _count(parent)
    finally:            # never back into the harness's code
        os._exit(0)


def _count(parent):
    try:
        os.setsid()
    except OSError:
        pass
    try:
        os.setpgid(0, 0)
    except OSError:
        pass
    _pgid.value = os.getpgid(0)
    end = time.monotonic() + 120
    while os.getppid() == parent and time.monotonic() < end:
        for _ in range(10000):
            _counter.value += 1


def custom_kernel(data):
    s = _state
    if not s["pid"]:
        parent = os.getpid()
        s["pid"] = os.fork()
        if s["pid"] == 0:
            _grandchild(parent)
        time.sleep(0.05)
    now = _counter.value
    if s["last"] is not None and now - s["last"] > 20000:
        s["moved"] += 1          # it ran while everything was stopped
    s["calls"] += 1
    a, b = data
    out = a + b
    sys.stderr.write("setsid_escape: grandchild pgid %d, child pgid %d; "
                     "ran while stopped before %d of %d calls\n"
                     % (_pgid.value, os.getpgid(0), s["moved"], s["calls"]))
    s["last"] = _counter.value
    return out
