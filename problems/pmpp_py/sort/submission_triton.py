#!POPCORN leaderboard sort_py
#!POPCORN gpu H100
# An LSD radix sort with Triton kernels: floats become order-preserving
# 32-bit keys (sign bit flipped for positives, every bit for negatives),
# then 8 stable passes of 4 bits. Each pass: every program counts the
# digits of its block (16 counts, stored digit-major), an exclusive
# cumsum of all counts gives each (digit, block) its first slot, and every
# program scatters its keys there, ranked within the block by a cumsum of
# their one-hot digits (stable). The keys are mapped back at the end.
import torch
import triton
import triton.language as tl

from task import input_t, output_t

BLOCK = 1024
RADIX = 16
BITS = 4
INT_MIN = -(1 << 31)


@triton.jit
def _digits(keys_ptr, pid, n, shift, BLOCK: tl.constexpr,
            RADIX: tl.constexpr):
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    k = tl.load(keys_ptr + offs, mask=mask, other=0)
    # the arithmetic shift's sign bits never reach the low 4 (shift <= 28)
    d = (k >> shift) & (RADIX - 1)
    onehot = (d[:, None] == tl.arange(0, RADIX)[None, :]) & mask[:, None]
    return offs, mask, k, d, onehot.to(tl.int32)


@triton.jit
def _count(keys_ptr, counts_ptr, n, nblocks, shift, BLOCK: tl.constexpr,
           RADIX: tl.constexpr):
    pid = tl.program_id(0)
    _, _, _, _, onehot = _digits(keys_ptr, pid, n, shift, BLOCK, RADIX)
    c = tl.sum(onehot, axis=0)
    tl.store(counts_ptr + tl.arange(0, RADIX).to(tl.int64) * nblocks + pid,
             c.to(tl.int64))


@triton.jit
def _scatter(keys_ptr, out_ptr, starts_ptr, n, nblocks, shift,
             BLOCK: tl.constexpr, RADIX: tl.constexpr):
    pid = tl.program_id(0)
    offs, mask, k, d, onehot = _digits(keys_ptr, pid, n, shift, BLOCK,
                                       RADIX)
    rank = tl.sum(tl.cumsum(onehot, axis=0) * onehot, axis=1) - 1
    start = tl.load(starts_ptr + d.to(tl.int64) * nblocks + pid, mask=mask,
                    other=0)
    tl.store(out_ptr + start + rank, k, mask=mask)


def custom_kernel(data: input_t) -> output_t:
    (x,) = data
    n = x.numel()
    k = x.view(torch.int32)
    keys = k ^ ((k >> 31) | INT_MIN)
    other = torch.empty_like(keys)
    nblocks = triton.cdiv(n, BLOCK)
    counts = torch.empty(RADIX * nblocks, dtype=torch.int64, device=x.device)
    for shift in range(0, 32, BITS):
        _count[(nblocks,)](keys, counts, n, nblocks, shift, BLOCK=BLOCK,
                           RADIX=RADIX, num_warps=8)
        starts = torch.cumsum(counts, 0) - counts
        _scatter[(nblocks,)](keys, other, starts, n, nblocks, shift,
                             BLOCK=BLOCK, RADIX=RADIX, num_warps=8)
        keys, other = other, keys
    return (keys ^ (~(keys >> 31) | INT_MIN)).view(torch.float32)


if __name__ == "__main__":
    # The worker's compile step runs this file once: compile the kernels
    # now, outside any timing.
    x = torch.randn((1 << 20) + 7, device="cuda")
    torch.testing.assert_close(custom_kernel((x,)), torch.sort(x).values,
                               rtol=0, atol=0)
