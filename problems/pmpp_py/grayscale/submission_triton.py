#!POPCORN leaderboard grayscale_py
#!POPCORN gpu H100
# A Triton kernel: each program converts BLOCK pixels, reading the three
# interleaved channels with stride-3 loads (the cache lines are shared, so
# DRAM traffic stays 12 bytes a pixel); int64 offsets.
import torch
import triton
import triton.language as tl

from task import input_t, output_t


@triton.jit
def _gray(rgb_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pix = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = pix < n
    r = tl.load(rgb_ptr + 3 * pix, mask=mask)
    g = tl.load(rgb_ptr + 3 * pix + 1, mask=mask)
    b = tl.load(rgb_ptr + 3 * pix + 2, mask=mask)
    tl.store(out_ptr + pix, 0.2989 * r + 0.5870 * g + 0.1140 * b, mask=mask)


def custom_kernel(data: input_t) -> output_t:
    (rgb,) = data
    h, w, _ = rgb.shape
    out = torch.empty((h, w), dtype=torch.float32, device=rgb.device)
    n = h * w
    block = 2048
    _gray[(triton.cdiv(n, block),)](rgb, out, n, BLOCK=block, num_warps=8)
    return out


if __name__ == "__main__":
    # The worker's compile step runs this file once: compile the kernel
    # now, outside any timing.
    x = torch.rand(37, 1001, 3, device="cuda")
    want = 0.2989 * x[..., 0] + 0.5870 * x[..., 1] + 0.1140 * x[..., 2]
    torch.testing.assert_close(custom_kernel((x,)), want)
