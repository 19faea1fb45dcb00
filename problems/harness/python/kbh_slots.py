"""kbh_slots: the work slots, the only memory the two processes share.

A case has `nslots` slot sets (calls rotate through them, so consecutive
calls see different addresses); a set holds one array per tensor input and
one per output. An array is described to the child by a plain dict

    {"buf": id, "off": byte offset, "nbytes": n, "dtype": "float16",
     "shape": [d0, d1, ...], "stride": None or [s0, s1, ...]}

and both processes view it as a tensor of that dtype and shape (view()):
contiguous, or with the given strides, which are then those of a dense
layout (a permutation of a contiguous one: upstream's inputs are often
permuted views, and kernels that take data_ptr() rely on that memory
order; layout() says which strides qualify). Either way the array's
nbytes bytes are exactly its elements, in memory order (raw()), which is
how the parent stages and compares them.

A case's `data` (what custom_kernel gets) is described to the child by a
plain tree (flatten(), build()): ("t", k) the k-th tensor input array,
("c", value) a constant (int, float, bool, str, None), ("tuple", [...]),
("list", [...]), ("dict", [(key, node), ...]) with str or int keys.

CPU (CpuSlots): one memfd per case, created and sized by the parent, sealed
against shrinking and growing (a child that could shrink it would make the
parent's next access to its own mapping a SIGBUS) and passed to the child
with the OPEN request (SCM_RIGHTS). Arrays start on page boundaries.

CUDA (CudaPool): one driver allocation per array (kbh_cuda: a multiple of
2 MiB, exported by IPC handle), pooled for the whole run: a case takes
free buffers that are large enough, or allocates new ones, and gives them
back when it closes. The child opens each buffer's handle once and keeps
the mapping (buffer ids name them in later OPENs). Nothing but inputs and
outputs of calls ever lives in them.
"""

import fcntl
import mmap
import os

import kbh_cuda

PAGE = mmap.PAGESIZE

# fcntl seal bits (linux/fcntl.h); Python has them from 3.8 on Linux.
F_ADD_SEALS = getattr(fcntl, "F_ADD_SEALS", 1033)
F_SEAL_SEAL = getattr(fcntl, "F_SEAL_SEAL", 1)
F_SEAL_SHRINK = getattr(fcntl, "F_SEAL_SHRINK", 2)
F_SEAL_GROW = getattr(fcntl, "F_SEAL_GROW", 4)


def dtype_name(dtype):
    """torch.float16 -> "float16"."""
    return str(dtype).split(".", 1)[1]


def dtype_of(torch, name):
    d = getattr(torch, name, None)
    if not isinstance(d, torch.dtype):
        raise ValueError("unknown dtype %r" % name)
    return d


def nbytes_of(torch, shape, dtype):
    n = 1
    for d in shape:
        n *= int(d)
    return n * torch.empty((), dtype=dtype).element_size()


def view(torch, base, off, nbytes, dtype, shape, stride=None):
    """The array [off, off + nbytes) of the uint8 tensor base as a tensor
    of dtype and shape, contiguous or with stride (a dense layout)."""
    t = base[off:off + nbytes]
    if dtype != torch.uint8:
        t = t.view(dtype)
    if stride is None:
        return t.view(tuple(shape))
    return t.as_strided(tuple(shape), tuple(stride))


def layout(t):
    """None when tensor t is contiguous; its strides when they are those
    of a dense layout (every element once, no gaps: a permutation of a
    contiguous layout, as permute() makes); raises ValueError otherwise
    (slices, expanded or overlapping views: their memory holds more than
    their elements, which a slot does not reproduce)."""
    if t.is_contiguous():
        return None
    want = 1
    for st, sz in sorted((st, sz) for sz, st in zip(t.shape, t.stride())
                         if sz != 1):
        if st != want:
            raise ValueError("a %s tensor of shape %s and strides %s is not "
                             "dense (a slice or an expanded view)"
                             % (dtype_name(t.dtype), tuple(t.shape),
                                tuple(t.stride())))
        want *= sz
    return tuple(t.stride())


def raw(torch, t):
    """The bytes of tensor t (contiguous, or of a dense layout) in memory
    order, as a flat uint8 tensor sharing its memory."""
    if t.is_contiguous():
        flat = t.reshape(-1)
    else:
        flat = t.as_strided((t.numel(),), (1,))
    return flat.view(torch.uint8)


CONSTANTS = (int, float, bool, str, type(None))
DATA_DEPTH = 8          # containers nested in data, at most
DATA_TENSORS = 256      # tensors in data, at most


def flatten(torch, x, names=()):
    """data (a tensor, or tuples, lists and dicts of tensors and constants)
    as (tree, tensors, paths): tree as the module's docstring says, the
    tensors in tree order, and a name for each (names[i] for data[i] of a
    tuple or list, else "input i", then [key] for what lies deeper).
    Raises ValueError for anything else."""
    tensors, paths = [], []

    def walk(v, path, depth):
        if isinstance(v, torch.Tensor):
            if len(tensors) == DATA_TENSORS:
                raise ValueError("data holds more than %d tensors"
                                 % DATA_TENSORS)
            tensors.append(v)
            paths.append(path)
            return ("t", len(tensors) - 1)
        if isinstance(v, CONSTANTS):
            return ("c", v)
        if depth == DATA_DEPTH:
            raise ValueError("data nests deeper than %d" % DATA_DEPTH)
        if type(v) in (tuple, list):
            kids = []
            for i, e in enumerate(v):
                if depth == 0:
                    p = names[i] if i < len(names) else "input %d" % i
                else:
                    p = "%s[%d]" % (path, i)
                kids.append(walk(e, p, depth + 1))
            return (type(v).__name__, kids)
        if type(v) is dict:
            kids = []
            for k, e in v.items():
                if type(k) not in (str, int):
                    raise ValueError("data holds a dict key of type %s"
                                     % type(k).__name__)
                kids.append((k, walk(e, "%s[%r]" % (path or "data", k),
                                     depth + 1)))
            return ("dict", kids)
        raise ValueError("data holds a %s (tensors, constants, tuples, "
                         "lists and dicts only)" % type(v).__name__)

    tree = walk(x, "data", 0)
    return tree, tensors, paths


def build(tree, tensors):
    """The data a tree describes, its tensor leaves from tensors."""
    kind, v = tree
    if kind == "t":
        return tensors[v]
    if kind == "c":
        return v
    if kind == "tuple":
        return tuple(build(e, tensors) for e in v)
    if kind == "list":
        return [build(e, tensors) for e in v]
    if kind == "dict":
        return {k: build(e, tensors) for k, e in v}
    raise ValueError("bad data tree node %r" % (kind,))


def _spec(spec):
    """An array's (shape, dtype) or (shape, dtype, stride) as (shape, dtype,
    stride or None)."""
    shape, dtype = spec[0], spec[1]
    stride = spec[2] if len(spec) > 2 else None
    return shape, dtype, (list(stride) if stride is not None else None)


def round_up(n, a):
    return max(a, (n + a - 1) // a * a)


def sealed_memfd(name, size):
    """(fd, shared mapping) of a memfd of size bytes, sealed against
    shrinking and growing: a child that shrank it would make the parent's
    next access a SIGBUS. Raises OSError."""
    fd = os.memfd_create(name, os.MFD_CLOEXEC |
                         getattr(os, "MFD_ALLOW_SEALING", 2))
    try:
        os.ftruncate(fd, size)
        fcntl.fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW |
                    F_SEAL_SEAL)
        return fd, mmap.mmap(fd, size, mmap.MAP_SHARED,
                             mmap.PROT_READ | mmap.PROT_WRITE)
    except OSError:
        os.close(fd)
        raise


class CpuSlots:
    """The parent's side of a CPU case's slots: a sealed memfd of the
    arrays' total size, mapped shared. arrays(specs) lays out
    nslots x len(specs) arrays; tensors are the parent's views."""

    def __init__(self, torch, nslots, specs):
        self.torch = torch
        self.descs = []      # per slot: [array dict]
        off = 0
        for _ in range(nslots):
            row = []
            for spec in specs:
                shape, dtype, stride = _spec(spec)
                nb = nbytes_of(torch, shape, dtype)
                row.append({"buf": 0, "off": off, "nbytes": nb,
                            "dtype": dtype_name(dtype), "shape": list(shape),
                            "stride": stride})
                off += round_up(nb, PAGE)
            self.descs.append(row)
        self.size = max(off, PAGE)
        self.fd, self.map = sealed_memfd("kbh-slots", self.size)
        base = torch.frombuffer(self.map, dtype=torch.uint8)
        self.tensors = [[view(torch, base, a["off"], a["nbytes"],
                              dtype_of(torch, a["dtype"]), a["shape"],
                              a["stride"])
                         for a in row] for row in self.descs]
        del base

    def open_args(self):
        """What the child needs besides the descriptors (sent alongside)."""
        return {"kind": "cpu", "size": self.size}

    def close(self):
        """Drops the parent's views. The mapping goes with the last tensor
        that uses it (never unmapped under a live view), the memory with
        the child's mapping too."""
        self.tensors = []
        self.map = None
        os.close(self.fd)


class CudaPool:
    """The parent's pool of slot buffers (kbh_cuda.Driver allocations)."""

    def __init__(self, torch, driver):
        self.torch = torch
        self.drv = driver
        self.bufs = []       # [{"id", "ptr", "size", "handle", "busy", "t"}]
        self.sent = set()    # ids whose handle the child has

    def _take(self, nbytes):
        free = [b for b in self.bufs if not b["busy"] and b["size"] >= nbytes]
        if free:
            b = min(free, key=lambda b: b["size"])
        else:
            ptr, size = self.drv.alloc(nbytes)
            b = {"id": len(self.bufs) + 1, "ptr": ptr, "size": size,
                 "handle": self.drv.ipc_handle(ptr), "busy": False,
                 "t": kbh_cuda.tensor(self.torch, ptr, size)}
            self.bufs.append(b)
        b["busy"] = True
        return b

    def slots(self, nslots, specs):
        return CudaSlots(self, nslots, specs)

    def release(self, ids):
        for b in self.bufs:
            if b["id"] in ids:
                b["busy"] = False


class CudaSlots:
    """A CUDA case's slots, taken from the pool."""

    def __init__(self, pool, nslots, specs):
        torch = pool.torch
        self.pool = pool
        self.descs, self.tensors, self.ids = [], [], []
        for _ in range(nslots):
            row, trow = [], []
            for spec in specs:
                shape, dtype, stride = _spec(spec)
                nb = nbytes_of(torch, shape, dtype)
                b = pool._take(nb)
                self.ids.append(b["id"])
                row.append({"buf": b["id"], "off": 0, "nbytes": nb,
                            "dtype": dtype_name(dtype), "shape": list(shape),
                            "stride": stride})
                trow.append(view(torch, b["t"], 0, nb, dtype, shape, stride))
            self.descs.append(row)
            self.tensors.append(trow)
        self.fd = None

    def open_args(self):
        new = {}
        for b in self.pool.bufs:
            if b["id"] in self.ids and b["id"] not in self.pool.sent:
                new[b["id"]] = (b["handle"], b["size"])
        self.pool.sent.update(new)
        return {"kind": "cuda", "new": new}

    def close(self):
        self.tensors = []
        self.pool.release(set(self.ids))
