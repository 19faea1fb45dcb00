#!POPCORN leaderboard conv2d_py
#!POPCORN gpu H100
# A direct convolution in Triton, fp32 FMAs (no tensor cores: TF32 would
# not meet the tolerance): each program computes CO_BLOCK output channels
# of PIX_BLOCK output pixels of one image, as a sum over (ci, ky, kx) of
# outer products of a weight column and a row of input pixels.
import torch
import triton
import triton.language as tl

from task import input_t, output_t

CO_BLOCK = 16
PIX_BLOCK = 128


@triton.jit
def _conv(x_ptr, w_ptr, out_ptr, C, S, K, O, n_co_blocks,
          CO_BLOCK: tl.constexpr, PIX_BLOCK: tl.constexpr):
    b = tl.program_id(0) // n_co_blocks
    co = (tl.program_id(0) % n_co_blocks) * CO_BLOCK + tl.arange(0, CO_BLOCK)
    pix = tl.program_id(1) * PIX_BLOCK + tl.arange(0, PIX_BLOCK)
    co_ok = co < C
    pix_ok = pix < O * O
    y = pix // O
    x = pix % O
    acc = tl.zeros((CO_BLOCK, PIX_BLOCK), dtype=tl.float32)
    img = x_ptr + b.to(tl.int64) * C * S * S
    for ci in range(0, C):
        plane = img + ci.to(tl.int64) * S * S
        for ky in range(0, K):
            for kx in range(0, K):
                v = tl.load(plane + (y + ky) * S + (x + kx), mask=pix_ok,
                            other=0.0)
                wv = tl.load(w_ptr + ((co * C + ci) * K + ky) * K + kx,
                             mask=co_ok, other=0.0)
                acc += wv[:, None] * v[None, :]
    dst = out_ptr + (b.to(tl.int64) * C + co[:, None]) * O * O + pix[None, :]
    tl.store(dst, acc, mask=co_ok[:, None] & pix_ok[None, :])


def custom_kernel(data: input_t) -> output_t:
    x, w = data
    bsz, c, s, _ = x.shape
    k = w.shape[2]
    o = s - k + 1
    out = torch.empty((bsz, c, o, o), dtype=torch.float32, device=x.device)
    n_co = triton.cdiv(c, CO_BLOCK)
    grid = (bsz * n_co, triton.cdiv(o * o, PIX_BLOCK))
    _conv[grid](x, w, out, c, s, k, o, n_co, CO_BLOCK=CO_BLOCK,
                PIX_BLOCK=PIX_BLOCK, num_warps=4)
    return out


if __name__ == "__main__":
    # The worker's compile step runs this file once: compile the kernel
    # now, outside any timing.
    torch.backends.cudnn.allow_tf32 = False
    x = torch.rand(2, 5, 37, 37, device="cuda") - 0.5
    w = torch.rand(5, 5, 3, 3, device="cuda") - 0.5
    torch.testing.assert_close(custom_kernel((x, w)),
                               torch.nn.functional.conv2d(x, w))
