# Patches the harness's own code in its process: finds the child's request
# table (the dict that maps operations to the Child's handlers) and wraps
# its CALL handler so that every reply claims 100 us, with stamps moved to
# fit that claim inside the parent's window; each call really takes over
# 3 ms. Defence: the same as for patched clocks (the parent's window, the
# clamp, the suspect flag), since nothing in this process is trusted.
import gc
import sys
import time
import types

CLAIM_NS = 100000


def _lying(call):
    def wrapper(req, fds, r):
        call(req, fds, r)
        r.claim = CLAIM_NS
        r.t1 = r.t0 + CLAIM_NS
    return wrapper


_patched = 0
for o in gc.get_objects():
    if type(o) is dict:
        for k, v in list(o.items()):
            if type(v) is types.MethodType and v.__name__ == "call" and \
                    type(v.__self__).__name__ == "Child":
                o[k] = _lying(v)
                _patched += 1
sys.stderr.write("harness_patch: patched %d handler(s)\n" % _patched)


def custom_kernel(data):
    a, b = data
    end = time.monotonic_ns() + 3000000
    while time.monotonic_ns() < end:
        pass
    return a + b
