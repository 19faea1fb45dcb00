# A frozen clock: every clock the harness's half in its process could use
# returns the time of import. Its stamps fall outside the parent's window
# of every call. Defence: such a claim is forged; every case is suspect
# ("forged-timing").
import sys
import time

_frozen = time.monotonic_ns()


def _fake():
    return _frozen


time.monotonic_ns = _fake
time.perf_counter_ns = _fake
main = sys.modules["__main__"]
if hasattr(main, "_now"):
    main._now = _fake


def custom_kernel(data):
    a, b = data
    return a + b
