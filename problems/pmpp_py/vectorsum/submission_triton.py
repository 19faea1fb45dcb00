#!POPCORN leaderboard vectorsum_py
#!POPCORN gpu H100
# A Triton kernel in two passes: each program sums BLOCK * ITERS elements
# (fp32 partial sums, int64 offsets), a second launch sums the partials.
# No atomics, so the result does not depend on scheduling order.
import torch
import triton
import triton.language as tl

from task import input_t, output_t

BLOCK = 4096
ITERS = 16


@triton.jit
def _partial(x_ptr, part_ptr, n, BLOCK: tl.constexpr, ITERS: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    base = pid * BLOCK * ITERS
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for k in range(ITERS):
        offs = base + k * BLOCK + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(part_ptr + pid, tl.sum(acc, axis=0))


@triton.jit
def _final(part_ptr, out_ptr, m, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for lo in range(0, m, BLOCK):
        offs = lo + tl.arange(0, BLOCK)
        acc += tl.load(part_ptr + offs, mask=offs < m, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0))


def custom_kernel(data: input_t) -> output_t:
    (x,) = data
    n = x.numel()
    m = triton.cdiv(n, BLOCK * ITERS)
    part = torch.empty(m, dtype=torch.float32, device=x.device)
    out = torch.empty((), dtype=torch.float32, device=x.device)
    _partial[(m,)](x, part, n, BLOCK=BLOCK, ITERS=ITERS, num_warps=8)
    _final[(1,)](part, out, m, BLOCK=1024, num_warps=4)
    return out


if __name__ == "__main__":
    # The worker's compile step runs this file once: compile the kernels
    # now, outside any timing.
    x = torch.ones(3 << 20, dtype=torch.float32, device="cuda")
    torch.testing.assert_close(custom_kernel((x,)), x.sum())
