#!POPCORN leaderboard grouped_gemm_py
#!POPCORN gpu H100
# grouped_gemm: a mixture-of-experts GEMM in bf16 on the GPU. data is
# (x, w, offs): x (T, K) with its rows sorted by group, w (G, N, K) one
# weight per group (nn.Linear layout), offs (G,) int32 the end row of each
# group (groups may be empty; the sizes change with every call). Return a
# new (T, N) bfloat16 tensor with out[r] = x[r] @ w[g].T for the group g
# of row r, accumulated in fp32. Inputs are read-only. The task
# description has the full contract and the tolerance.
#
# This version is correct but plain PyTorch (one GEMM per group, and a
# wait for the group sizes); replace it with your own kernel (Triton,
# torch.utils.cpp_extension.load_inline, ...).
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
