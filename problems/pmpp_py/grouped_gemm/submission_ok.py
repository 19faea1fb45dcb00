#!POPCORN leaderboard grouped_gemm_py
# Plain PyTorch: one GEMM per group (the group ends read to the host
# first, which waits for the device); on the CPU, where torch's bf16 GEMM
# may accumulate in bf16, in fp32.
import torch

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    x, w, offs = data
    out = torch.empty((x.shape[0], w.shape[1]), dtype=torch.bfloat16,
                      device=x.device)
    start = 0
    for g, end in enumerate(offs.tolist()):
        if end > start:
            if x.is_cuda:
                out[start:end] = x[start:end] @ w[g].t()
            else:
                out[start:end] = x[start:end].float() @ w[g].float().t()
        start = end
    return out
