#!POPCORN leaderboard grouped_gemm_py
#!POPCORN gpu H100
# A grouped GEMM in one Triton launch, without reading the group sizes on
# the host: the grid covers an upper bound of the row tiles (ceil(T/BM) +
# G) times the column tiles; each program finds its group from the
# cumulative tile counts (computed on the device), multiplies its rows
# of x by that group's weight with tl.dot (bf16 tensor cores, fp32
# accumulator) and stores bf16. Programs past the last tile return at
# once.
import torch
import triton
import triton.language as tl

from task import input_t, output_t

BM, BN, BK = 128, 128, 64


@triton.jit
def _grouped(x_ptr, w_ptr, out_ptr, offs_ptr, tile_end_ptr, G, N, K,
             BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
             BG: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    gi = tl.arange(0, BG)
    ends = tl.load(tile_end_ptr + gi, mask=gi < G, other=2147483647)
    g = tl.sum((ends <= pid_m).to(tl.int32), axis=0)
    if g >= G:
        return
    tile0 = tl.load(tile_end_ptr + g - 1, mask=g > 0, other=0)
    row0 = tl.load(offs_ptr + g - 1, mask=g > 0, other=0)
    row_end = tl.load(offs_ptr + g)
    rm = row0 + (pid_m - tile0) * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    m_ok = rm < row_end
    n_ok = rn < N
    xp = x_ptr + rm[:, None].to(tl.int64) * K + rk[None, :]
    wp = w_ptr + (g.to(tl.int64) * N + rn[None, :]) * K + rk[:, None]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        k_ok = (k0 + rk) < K
        a = tl.load(xp, mask=m_ok[:, None] & k_ok[None, :], other=0.0)
        b = tl.load(wp, mask=k_ok[:, None] & n_ok[None, :], other=0.0)
        acc = tl.dot(a, b, acc)
        xp += BK
        wp += BK
    dst = out_ptr + rm[:, None].to(tl.int64) * N + rn[None, :]
    tl.store(dst, acc.to(tl.bfloat16), mask=m_ok[:, None] & n_ok[None, :])


def custom_kernel(data: input_t) -> output_t:
    x, w, offs = data
    t, k = x.shape
    g, n, _ = w.shape
    out = torch.empty((t, n), dtype=torch.bfloat16, device=x.device)
    sizes = torch.diff(offs, prepend=offs.new_zeros(1))
    tile_end = torch.cumsum((sizes + BM - 1) // BM, 0).to(torch.int32)
    grid = (triton.cdiv(t, BM) + g, triton.cdiv(n, BN))
    bg = max(16, triton.next_power_of_2(g))
    _grouped[grid](x, w, out, offs, tile_end, g, n, k, BM=BM, BN=BN, BK=BK,
                   BG=bg, num_warps=8, num_stages=3)
    return out


if __name__ == "__main__":
    # The worker's compile step runs this file once: compile the kernel
    # now, outside any timing.
    x = torch.rand(1000, 96, device="cuda").to(torch.bfloat16)
    w = torch.rand(5, 200, 96, device="cuda").to(torch.bfloat16)
    offs = torch.tensor([0, 300, 301, 700, 1000], dtype=torch.int32,
                        device="cuda")
    out = custom_kernel((x, w, offs))
    start = 0
    for i, end in enumerate(offs.tolist()):
        torch.testing.assert_close(
            out[start:end].float(), x[start:end].float() @ w[i].float().t(),
            rtol=1e-2, atol=0.1)
        start = end
