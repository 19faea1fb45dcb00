#!POPCORN leaderboard rmsnorm_py
#!POPCORN gpu H100
# A fused Triton RMSNorm: one program per row; a first pass over the row
# sums the squares in fp32, a second scales it by the row's factor and
# the weight and stores bf16 (the second pass reads the row from cache:
# x is read from DRAM once).
import torch
import triton
import triton.language as tl

from task import input_t, output_t


@triton.jit
def _rmsnorm(x_ptr, w_ptr, out_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64) * N
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for lo in range(0, N, BLOCK):
        offs = lo + tl.arange(0, BLOCK)
        v = tl.load(x_ptr + row + offs, mask=offs < N, other=0.0)
        v = v.to(tl.float32)
        acc += v * v
    r = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    for lo in range(0, N, BLOCK):
        offs = lo + tl.arange(0, BLOCK)
        mask = offs < N
        v = tl.load(x_ptr + row + offs, mask=mask, other=0.0).to(tl.float32)
        wv = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_ptr + row + offs, (v * r * wv).to(tl.bfloat16),
                 mask=mask)


def custom_kernel(data: input_t) -> output_t:
    x, w, eps = data
    m, n = x.shape
    out = torch.empty_like(x)
    block = min(triton.next_power_of_2(n), 4096)
    _rmsnorm[(m,)](x, w, out, n, eps, BLOCK=block,
                   num_warps=8 if block >= 2048 else 4)
    return out


if __name__ == "__main__":
    # The worker's compile step runs this file once: compile the kernel
    # now, outside any timing.
    x = torch.randn(33, 5000, device="cuda").to(torch.bfloat16)
    w = torch.randn(5000, device="cuda").to(torch.bfloat16)
    xf = x.float()
    want = xf * torch.rsqrt(xf.square().mean(-1, keepdim=True) + 1e-6) \
        * w.float()
    torch.testing.assert_close(custom_kernel((x, w, 1e-6)).float(), want,
                               rtol=2e-2, atol=1e-5)
