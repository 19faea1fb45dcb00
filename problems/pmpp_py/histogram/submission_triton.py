#!POPCORN leaderboard histogram_py
#!POPCORN gpu H100
# A Triton kernel in two steps: each program counts BLOCK * ITERS bytes
# into a private 256-bin histogram (tl.histogram) and adds it to the
# global bins with 256 atomic adds; the bins are zeroed first. Integer
# counts: the result does not depend on the order of the atomics.
import torch
import triton
import triton.language as tl

from task import input_t, output_t

BLOCK = 4096
ITERS = 16


@triton.jit
def _hist(x_ptr, bins_ptr, n, BLOCK: tl.constexpr, ITERS: tl.constexpr):
    base = tl.program_id(0).to(tl.int64) * BLOCK * ITERS
    acc = tl.zeros((256,), dtype=tl.int32)
    for k in range(ITERS):
        offs = base + k * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        v = tl.load(x_ptr + offs, mask=mask, other=0).to(tl.int32)
        # lanes past the end load 0 and land in bin 0: take them out
        extra = BLOCK - tl.sum(mask.to(tl.int32), axis=0)
        acc += tl.histogram(v, 256)
        acc -= tl.where(tl.arange(0, 256) == 0, extra, 0)
    tl.atomic_add(bins_ptr + tl.arange(0, 256), acc)


def custom_kernel(data: input_t) -> output_t:
    (x,) = data
    n = x.numel()
    bins = torch.zeros(256, dtype=torch.int32, device=x.device)
    grid = (triton.cdiv(n, BLOCK * ITERS),)
    _hist[grid](x, bins, n, BLOCK=BLOCK, ITERS=ITERS, num_warps=8)
    return bins


if __name__ == "__main__":
    # The worker's compile step runs this file once: compile the kernel
    # now, outside any timing.
    x = torch.randint(0, 256, (3 << 20,), dtype=torch.uint8, device="cuda")
    want = torch.bincount(x, minlength=256).to(torch.int32)
    torch.testing.assert_close(custom_kernel((x,)), want)
