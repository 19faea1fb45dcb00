"""kbh_cuda: the few CUDA driver calls the harness makes itself, through
ctypes on libcuda.so.1 (used by both processes on a GPU host; never on a
CPU one).

Why not torch's own CUDA IPC (torch.multiprocessing.reductions.reduce_tensor,
storage._share_cuda_ / _new_shared_cuda): it shares the caching allocator's
whole segment (one cudaMalloc) that holds the tensor, and that allocator
splits cached segments between tensors. A slot tensor could then share a
segment with the parent's pristine inputs or expected output, and the
child, which maps the whole segment, could read them at a known offset.
It also involves a reference-count file in /dev/shm and a producer-side
cache. So the work slots are allocations of their own, made here:
cuMemAlloc of a multiple of 2 MiB (the driver packs smaller allocations
into shared 2 MiB blocks, and IPC maps whole blocks), exported with
cuIpcGetMemHandle, opened by the child with cuIpcOpenMemHandle, and wrapped
as torch tensors through __cuda_array_interface__ (no copy) on both sides.
They are never freed while the child lives: freeing memory another process
still maps is undefined behaviour, and a hostile child need not unmap it.
"""

import ctypes

GRANULE = 2 << 20

# CUdevice_attribute values (cuda.h)
ATTR_CLOCK_RATE = 13            # kHz
ATTR_MULTIPROCESSOR_COUNT = 16
ATTR_MEMORY_CLOCK_RATE = 36     # kHz
ATTR_GLOBAL_MEMORY_BUS_WIDTH = 37
ATTR_L2_CACHE_SIZE = 38
ATTR_CC_MAJOR = 75
ATTR_CC_MINOR = 76
ATTR_MAX_SHARED_PER_BLOCK_OPTIN = 97

FUNC_ATTR_MAX_DYNAMIC_SHARED = 8
STREAM_NON_BLOCKING = 1
MEMHOSTALLOC_DEVICEMAP = 2

IPC_LAZY_ENABLE_PEER_ACCESS = 1
IPC_HANDLE_SIZE = 64


class CudaError(Exception):
    pass


class _Handle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_ubyte * IPC_HANDLE_SIZE)]


def round_up(n, granule=GRANULE):
    return max(granule, (n + granule - 1) // granule * granule)


class Driver:
    """libcuda.so.1, bound to the primary context of one device (the one
    torch uses). Raises CudaError (OSError when the library is missing)."""

    def __init__(self, ordinal):
        self.lib = ctypes.CDLL("libcuda.so.1")
        u64, cint, csize = ctypes.c_uint64, ctypes.c_int, ctypes.c_size_t
        self._bind("cuInit", [ctypes.c_uint])
        self._bind("cuGetErrorString", [cint, ctypes.POINTER(ctypes.c_char_p)])
        self._bind("cuDriverGetVersion", [ctypes.POINTER(cint)])
        self._bind("cuDeviceGet", [ctypes.POINTER(cint), cint])
        self._bind("cuDeviceGetAttribute", [ctypes.POINTER(cint), cint, cint])
        self._bind("cuDevicePrimaryCtxRetain",
                   [ctypes.POINTER(ctypes.c_void_p), cint])
        self._bind("cuCtxSetCurrent", [ctypes.c_void_p])
        self._bind("cuMemAlloc", [ctypes.POINTER(u64), csize], "_v2")
        self._bind("cuMemFree", [u64], "_v2")
        self._bind("cuMemsetD8", [u64, ctypes.c_ubyte, csize], "_v2")
        self._bind("cuIpcGetMemHandle", [ctypes.POINTER(_Handle), u64])
        self._bind("cuIpcOpenMemHandle",
                   [ctypes.POINTER(u64), _Handle, ctypes.c_uint], "_v2")
        self._bind("cuIpcCloseMemHandle", [u64])
        self._bind("cuCtxResetPersistingL2Cache", [])
        vp = ctypes.c_void_p
        self._bind("cuModuleLoadData", [ctypes.POINTER(vp), ctypes.c_char_p])
        self._bind("cuModuleGetFunction",
                   [ctypes.POINTER(vp), vp, ctypes.c_char_p])
        self._bind("cuFuncSetAttribute", [vp, cint, cint])
        self._bind("cuLaunchKernel",
                   [vp] + [ctypes.c_uint] * 6 + [ctypes.c_uint, vp,
                                                 ctypes.POINTER(vp), vp])
        self._bind("cuStreamCreate", [ctypes.POINTER(vp), ctypes.c_uint])
        self._bind("cuStreamSynchronize", [vp])
        self._bind("cuMemHostAlloc", [ctypes.POINTER(vp), csize,
                                      ctypes.c_uint])
        self._bind("cuMemHostGetDevicePointer",
                   [ctypes.POINTER(u64), vp, ctypes.c_uint], "_v2")
        self._check(self.lib.cuInit(0), "cuInit")
        dev = cint()
        self._check(self.lib.cuDeviceGet(ctypes.byref(dev), ordinal),
                    "cuDeviceGet")
        self.dev = dev.value
        self.ctx = ctypes.c_void_p()
        self._check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(self.ctx),
                                                      self.dev),
                    "cuDevicePrimaryCtxRetain")
        self.make_current()

    def _bind(self, name, argtypes, suffix=""):
        fn = None
        for n in ((name + suffix, name) if suffix else (name,)):
            fn = getattr(self.lib, n, None)
            if fn is not None:
                break
        if fn is None:
            raise CudaError("libcuda.so.1 has no %s" % name)
        fn.argtypes = argtypes
        fn.restype = ctypes.c_int
        setattr(self.lib, name, fn)

    def _check(self, rc, what):
        if rc != 0:
            s = ctypes.c_char_p()
            self.lib.cuGetErrorString(rc, ctypes.byref(s))
            text = s.value.decode("ascii", "replace") if s.value else "?"
            raise CudaError("%s: CUDA driver error %d (%s)" % (what, rc, text))

    def make_current(self):
        """Makes the primary context (torch's) current on this thread."""
        self._check(self.lib.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")

    def version(self):
        v = ctypes.c_int()
        self._check(self.lib.cuDriverGetVersion(ctypes.byref(v)),
                    "cuDriverGetVersion")
        return v.value

    def attribute(self, attr):
        """A device attribute, or 0 when the driver does not know it."""
        v = ctypes.c_int()
        if self.lib.cuDeviceGetAttribute(ctypes.byref(v), attr, self.dev):
            return 0
        return v.value

    def alloc(self, nbytes):
        """A zeroed allocation of its own, a multiple of 2 MiB: (ptr, size)."""
        size = round_up(nbytes)
        p = ctypes.c_uint64()
        self._check(self.lib.cuMemAlloc(ctypes.byref(p), size), "cuMemAlloc")
        self._check(self.lib.cuMemsetD8(p.value, 0, size), "cuMemsetD8")
        return p.value, size

    def free(self, ptr):
        self._check(self.lib.cuMemFree(ptr), "cuMemFree")

    def ipc_handle(self, ptr):
        h = _Handle()
        self._check(self.lib.cuIpcGetMemHandle(ctypes.byref(h), ptr),
                    "cuIpcGetMemHandle")
        return ctypes.string_at(ctypes.addressof(h), IPC_HANDLE_SIZE)

    def ipc_open(self, handle):
        if len(handle) != IPC_HANDLE_SIZE:
            raise CudaError("IPC handle of %d bytes" % len(handle))
        h = _Handle()
        ctypes.memmove(ctypes.addressof(h), handle, IPC_HANDLE_SIZE)
        p = ctypes.c_uint64()
        self._check(self.lib.cuIpcOpenMemHandle(ctypes.byref(p), h,
                                                IPC_LAZY_ENABLE_PEER_ACCESS),
                    "cuIpcOpenMemHandle")
        return p.value

    def ipc_close(self, ptr):
        self._check(self.lib.cuIpcCloseMemHandle(ptr), "cuIpcCloseMemHandle")

    def reset_persisting_l2(self):
        """Makes every persisting L2 line normal again (L2 is the device's:
        this holds for lines another context marked)."""
        self._check(self.lib.cuCtxResetPersistingL2Cache(),
                    "cuCtxResetPersistingL2Cache")


    # ---- kernels of the harness's own (kbh_sentinel) -------------------

    def load_function(self, image, name):
        """A kernel from a PTX image (bytes, NUL-terminated here): the
        driver compiles it for this device. Returns the CUfunction."""
        mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
        self._check(self.lib.cuModuleLoadData(ctypes.byref(mod),
                                              image + b"\0"),
                    "cuModuleLoadData")
        self._check(self.lib.cuModuleGetFunction(ctypes.byref(fn), mod,
                                                 name.encode()),
                    "cuModuleGetFunction")
        return fn

    def set_max_dynamic_shared(self, fn, nbytes):
        """0, or the driver's error code (the caller may go without)."""
        return self.lib.cuFuncSetAttribute(fn, FUNC_ATTR_MAX_DYNAMIC_SHARED,
                                           nbytes)

    def stream(self):
        """A stream that does not synchronise with the legacy stream."""
        s = ctypes.c_void_p()
        self._check(self.lib.cuStreamCreate(ctypes.byref(s),
                                            STREAM_NON_BLOCKING),
                    "cuStreamCreate")
        return s

    def sync_stream(self, s):
        self._check(self.lib.cuStreamSynchronize(s), "cuStreamSynchronize")

    def host_mapped(self, nbytes):
        """Zeroed page-locked host memory the device can read and write:
        (host address, device address)."""
        h, d = ctypes.c_void_p(), ctypes.c_uint64()
        self._check(self.lib.cuMemHostAlloc(ctypes.byref(h), nbytes,
                                            MEMHOSTALLOC_DEVICEMAP),
                    "cuMemHostAlloc")
        ctypes.memset(h.value, 0, nbytes)
        self._check(self.lib.cuMemHostGetDevicePointer(ctypes.byref(d),
                                                       h, 0),
                    "cuMemHostGetDevicePointer")
        return h.value, d.value

    def launch(self, fn, grid, block, shared, stream, params):
        """cuLaunchKernel with one-dimensional grid and block; params: the
        kernel's arguments as ctypes values (kept alive by the caller
        until this returns: the driver copies them)."""
        ptrs = (ctypes.c_void_p * len(params))(
            *[ctypes.cast(ctypes.byref(p), ctypes.c_void_p) for p in params])
        self._check(self.lib.cuLaunchKernel(fn, grid, 1, 1, block, 1, 1,
                                            shared, stream, ptrs, None),
                    "cuLaunchKernel")


class _CudaArray:
    """A raw device range as __cuda_array_interface__ (version 2: no stream
    to synchronise with), bytes; `owner` is kept alive with the tensor."""

    def __init__(self, ptr, nbytes, owner):
        self.__cuda_array_interface__ = {
            "shape": (nbytes,), "typestr": "|u1", "data": (ptr, False),
            "strides": None, "version": 2}
        self.owner = owner


def tensor(torch, ptr, nbytes, owner=None):
    """A uint8 CUDA tensor over [ptr, ptr + nbytes) without a copy (the
    memory stays the caller's: nothing frees it when the tensor goes).
    Through __cuda_array_interface__ (public, but torch parses its typestr
    with numpy); without numpy, through the non-owning storage torch 2.x
    builds from a pointer."""
    try:
        return torch.as_tensor(_CudaArray(ptr, nbytes, owner), device="cuda")
    except RuntimeError as e:
        make = getattr(torch._C, "_construct_storage_from_data_pointer",
                       None)
        if "umpy" not in str(e) or make is None:
            raise
    dev = torch.device("cuda", torch.cuda.current_device())
    t = torch.empty(0, dtype=torch.uint8, device=dev)
    return t.set_(make(ptr, dev, nbytes), 0, (nbytes,), (1,))
