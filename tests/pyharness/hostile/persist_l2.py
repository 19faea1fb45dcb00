# kbh-hostile: gpu-only
# Persisting L2 (vectorsum): a correct sum, on a stream of its own that
# carries an access-policy window marking its input persisting, with the
# device's whole persisting set-aside (driver calls through ctypes). Lines
# in the set-aside survive a streaming flush, so inputs at an address that
# comes back (the harness alternates two slots) could stay in L2 from one
# timed call to the next. Defence: the parent makes every persisting line
# normal before each flush (cuCtxResetPersistingL2Cache): no faster than the
# honest x.sum().
import ctypes

import torch

_cu = ctypes.CDLL("libcuda.so.1")
ATTR_MAX_PERSISTING_L2 = 108
ATTR_MAX_WINDOW = 109
LIMIT_PERSISTING_L2 = 0x06
STREAM_ATTR_ACCESS_POLICY_WINDOW = 1
PERSISTING, STREAMING = 2, 1


class _Window(ctypes.Structure):
    _fields_ = [("base_ptr", ctypes.c_void_p), ("num_bytes", ctypes.c_size_t),
                ("hitRatio", ctypes.c_float), ("hitProp", ctypes.c_int),
                ("missProp", ctypes.c_int)]


class _Value(ctypes.Union):
    _fields_ = [("window", _Window), ("pad", ctypes.c_char * 64)]


_state = {}


def _setup():
    dev, v = ctypes.c_int(), ctypes.c_int()
    _cu.cuCtxGetDevice(ctypes.byref(dev))
    _cu.cuDeviceGetAttribute(ctypes.byref(v), ATTR_MAX_PERSISTING_L2, dev)
    _cu.cuCtxSetLimit(LIMIT_PERSISTING_L2, ctypes.c_size_t(v.value))
    _cu.cuDeviceGetAttribute(ctypes.byref(v), ATTR_MAX_WINDOW, dev)
    _state["window_max"] = v.value
    _state["stream"] = torch.cuda.Stream()


def custom_kernel(data):
    (x,) = data
    if not _state:
        _setup()
    s = _state["stream"]
    v = _Value()
    v.window = _Window(x.data_ptr(), min(x.numel() * 4, _state["window_max"]),
                       1.0, PERSISTING, STREAMING)
    _cu.cuStreamSetAttribute(ctypes.c_void_p(s.cuda_stream),
                             STREAM_ATTR_ACCESS_POLICY_WINDOW,
                             ctypes.byref(v))
    cur = torch.cuda.current_stream()
    s.wait_stream(cur)
    with torch.cuda.stream(s):
        out = x.sum()
    cur.wait_stream(s)          # inside the harness's end event
    out.record_stream(cur)
    return out
