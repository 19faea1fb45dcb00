#!POPCORN leaderboard prefixsum_py
#!POPCORN gpu H100
# Triton, reduce then scan in three launches: every program sums its
# block; one program scans the block sums into carries (a running carry
# over chunks); every program scans its block with tl.cumsum and adds its
# carry. int64 offsets.
import torch
import triton
import triton.language as tl

from task import input_t, output_t

BLOCK = 4096


@triton.jit
def _block_sums(x_ptr, sums_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(sums_ptr + pid, tl.sum(x, axis=0))


@triton.jit
def _carries(sums_ptr, carry_ptr, m, CHUNK: tl.constexpr):
    run = tl.zeros((), dtype=tl.float32)
    for lo in range(0, m, CHUNK):
        offs = lo + tl.arange(0, CHUNK)
        v = tl.load(sums_ptr + offs, mask=offs < m, other=0.0)
        incl = tl.cumsum(v, axis=0)
        tl.store(carry_ptr + offs, run + incl - v, mask=offs < m)
        run += tl.sum(v, axis=0)


@triton.jit
def _scan(x_ptr, carry_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    out = tl.cumsum(x, axis=0) + tl.load(carry_ptr + pid)
    tl.store(out_ptr + offs, out, mask=mask)


def custom_kernel(data: input_t) -> output_t:
    (x,) = data
    n = x.numel()
    out = torch.empty_like(x)
    m = triton.cdiv(n, BLOCK)
    sums = torch.empty(m, dtype=torch.float32, device=x.device)
    carry = torch.empty(m, dtype=torch.float32, device=x.device)
    _block_sums[(m,)](x, sums, n, BLOCK=BLOCK, num_warps=8)
    _carries[(1,)](sums, carry, m, CHUNK=1024, num_warps=4)
    _scan[(m,)](x, carry, out, n, BLOCK=BLOCK, num_warps=8)
    return out


if __name__ == "__main__":
    # The worker's compile step runs this file once: compile the kernels
    # now, outside any timing.
    x = torch.rand((1 << 20) + 7, device="cuda") - 0.5
    want = torch.cumsum(x.double(), 0).float()
    torch.testing.assert_close(custom_kernel((x,)), want, rtol=0, atol=1e-2)
