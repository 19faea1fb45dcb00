# Result replay (kernelbot#501 style): computes once per input address and
# replays that result whenever the same addresses come back. Defence: fresh
# inputs every call (and rotating slots): the replayed result is wrong.
_cache = {}


def custom_kernel(data):
    a, b = data
    key = (a.data_ptr(), b.data_ptr(), a.numel())
    if key not in _cache:
        _cache[key] = a + b
    return _cache[key]
