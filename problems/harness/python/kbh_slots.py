"""kbh_slots: the work slots, the only memory the two processes share.

A case has `nslots` slot sets (calls rotate through them, so consecutive
calls see different addresses); a set holds one array per tensor input and
one per output. An array is described to the child by a plain dict

    {"buf": id, "off": byte offset, "nbytes": n, "dtype": "float16",
     "shape": [d0, d1, ...]}

and both processes view it as a contiguous tensor of that dtype and shape
(view()).

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


def view(torch, base, off, nbytes, dtype, shape):
    """The array [off, off + nbytes) of the uint8 tensor base as a
    contiguous tensor of dtype and shape."""
    t = base[off:off + nbytes]
    if dtype != torch.uint8:
        t = t.view(dtype)
    return t.view(tuple(shape))


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
            for shape, dtype in specs:
                nb = nbytes_of(torch, shape, dtype)
                row.append({"buf": 0, "off": off, "nbytes": nb,
                            "dtype": dtype_name(dtype), "shape": list(shape)})
                off += round_up(nb, PAGE)
            self.descs.append(row)
        self.size = max(off, PAGE)
        self.fd, self.map = sealed_memfd("kbh-slots", self.size)
        base = torch.frombuffer(self.map, dtype=torch.uint8)
        self.tensors = [[view(torch, base, a["off"], a["nbytes"],
                              dtype_of(torch, a["dtype"]), a["shape"])
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
            for shape, dtype in specs:
                nb = nbytes_of(torch, shape, dtype)
                b = pool._take(nb)
                self.ids.append(b["id"])
                row.append({"buf": b["id"], "off": 0, "nbytes": nb,
                            "dtype": dtype_name(dtype), "shape": list(shape)})
                trow.append(view(torch, b["t"], 0, nb, dtype, shape))
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
