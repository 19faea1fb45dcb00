"""kbh_problem: helpers for writing a problem.py (trusted parent only).

The interface itself is in README.md ("Writing a problem"); these are the
pieces most problems need: case-key parsers, seeded generation, the CPU
size rule, and a tolerant comparison that says where it failed.
"""

import math

import torch


# ---- case keys --------------------------------------------------------------

def integer(lo, hi):
    """A KEYS parser: a plain decimal integer in [lo, hi]."""
    def parse(s):
        if not s.isascii() or not s.isdigit():
            raise ValueError("not an unsigned integer")
        v = int(s)
        if not lo <= v <= hi:
            raise ValueError("outside [%d, %d]" % (lo, hi))
        return v
    return parse


def choice(*values):
    """A KEYS parser: one of the given words."""
    def parse(s):
        if s not in values:
            raise ValueError("not one of %s" % ", ".join(values))
        return s
    return parse


# ---- sizes on the CPU -------------------------------------------------------

CPU_FULL = 1 << 20    # sizes up to this are kept on the CPU
CPU_DIVISOR = 256     # larger ones are divided by this, rounded up


def cpu_size(n, device_kind):
    """The CPU rule: a GPU-sized case would take minutes and gigabytes on
    the CPU, so on the CPU a size above 2^20 becomes ceil(size / 256)
    (268435456 -> 1048576, 201326593 -> 786433: odd sizes stay odd);
    sizes up to 2^20 (the edge cases of the tests) are kept. On a GPU the
    size is the case's."""
    if device_kind != "cpu" or n <= CPU_FULL:
        return n
    return -(-n // CPU_DIVISOR)


def size_setup(case, device_kind):
    """setup() for a problem of one key, `size`: {"n": the size after the
    CPU rule (cpu_size)}. Use as `setup = kbh_problem.size_setup`."""
    return {"n": cpu_size(case["size"], device_kind)}


def cpu_scale(dims, work, device_kind, limit=CPU_FULL, divisor=16):
    """The CPU rule for cases of several dimensions: on the CPU, when
    `work` (the problem's measure of the case: pixels, m n k, ...)
    exceeds `limit`, every dimension in dims is divided by divisor,
    rounded up; otherwise, and on a GPU, dims are kept. Returns a tuple.
    Each problem states its dims, work, limit and divisor in its task
    description."""
    dims = tuple(dims)
    if device_kind != "cpu" or work <= limit:
        return dims
    return tuple(-(-d // divisor) for d in dims)


# ---- generation -------------------------------------------------------------

def generator(seed, device):
    """A torch.Generator on device seeded with the 64-bit seed."""
    g = torch.Generator(device=device)
    g.manual_seed(seed & ((1 << 64) - 1))
    return g


def uniform(shape, seed, device, dtype=torch.float32, lo=-1.0, hi=1.0):
    """Uniform values in [lo, hi), drawn in fp32 and rounded to dtype."""
    return draw(generator(seed, device), shape, dtype, lo, hi)


def draw(g, shape, dtype=torch.float32, lo=-1.0, hi=1.0):
    """uniform() from a generator (several tensors from one seed: draw
    them in turn from one generator)."""
    t = torch.rand(shape, generator=g, device=g.device, dtype=torch.float32)
    t.mul_(hi - lo).add_(lo)
    return t if dtype == torch.float32 else t.to(dtype)


# ---- comparison -------------------------------------------------------------

_CHUNK = 1 << 26   # elements compared at a time (bounds temporary memory)


def compare(got, want, rtol, atol, what="output"):
    """(ok, message): every element of got within atol + rtol * |want| of
    want, computed in float64 on the CPU and float32 on a GPU (the
    tolerance is far above float32's rounding); NaN or Inf in got always
    fails. atol is a number, or a tensor of want's shape (a tolerance per
    element). The message names the first bad element and the count."""
    if tuple(got.shape) != tuple(want.shape):
        return False, "%s has shape %s, expected %s" % (
            what, tuple(got.shape), tuple(want.shape))
    g, w = got.reshape(-1), want.reshape(-1)
    per = isinstance(atol, torch.Tensor)
    a = atol.reshape(-1) if per else atol
    ct = torch.float64 if g.device.type == "cpu" else torch.float32
    bad, first = 0, None
    for lo in range(0, g.numel(), _CHUNK):
        gc = g[lo:lo + _CHUNK].to(ct)
        wc = w[lo:lo + _CHUNK].to(ct)
        ac = a[lo:lo + _CHUNK].to(ct) if per else a
        ok = torch.isfinite(gc) & ((gc - wc).abs() <= ac + rtol * wc.abs())
        nbad = int((~ok).sum())
        if nbad and first is None:
            i = int((~ok).nonzero()[0][0])
            first = (lo + i, float(gc[i]), float(wc[i]),
                     float(ac[i]) if per else ac)
        bad += nbad
    if not bad:
        return True, ""
    i, x, y, ai = first
    return False, ("%d of %d elements of the %s differ from the expected "
                   "result; first at index %d: got %r, expected %r "
                   "(tolerance %.3g)" % (bad, g.numel(), what, i, x, y,
                                         ai + rtol * abs(y)))


def compare_exact(got, want, what="output"):
    """(ok, message): got equal to want element by element, bit for bit
    for floating-point dtypes (-0.0 is not 0.0; a NaN matches only the
    same NaN, so poisoned outputs fail wherever the expected value is a
    number).
    The message names the first bad element and the count."""
    if tuple(got.shape) != tuple(want.shape):
        return False, "%s has shape %s, expected %s" % (
            what, tuple(got.shape), tuple(want.shape))
    g, w = got.reshape(-1), want.reshape(-1)
    if g.dtype.is_floating_point:
        bits = {2: torch.int16, 4: torch.int32, 8: torch.int64}[
            g.element_size()]
        gb, wb = g.view(bits), w.to(g.dtype).view(bits)
    else:
        gb, wb = g.to(torch.int64), w.to(torch.int64)
    bad = gb != wb
    nbad = int(bad.sum())
    if not nbad:
        return True, ""
    i = int(bad.nonzero()[0][0])
    return False, ("%d of %d elements of the %s differ from the expected "
                   "result; first at index %d: got %r, expected %r (exact "
                   "match required)" % (nbad, g.numel(), what, i,
                                        g[i].item(), w[i].item()))


def isclose_scalar(got, want, tol, what="result"):
    """(ok, message) for one value against a tolerance."""
    x = float(got)
    if not math.isfinite(x) or not abs(x - want) <= tol:
        return False, "%s %r, expected %r (tolerance %.3g)" % (
            what, x, want, tol)
    return True, ""
