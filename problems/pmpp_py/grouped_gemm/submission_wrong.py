#!POPCORN leaderboard grouped_gemm_py
# Wrong: offs read as where each group starts instead of where it ends,
# so every group's rows get the previous group's weight and the first
# group's rows are left at zero: wrong at every size.
import torch

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    x, w, offs = data
    t = x.shape[0]
    out = torch.zeros((t, w.shape[1]), dtype=torch.bfloat16,
                      device=x.device)
    starts = offs.tolist()
    for g, start in enumerate(starts):
        end = starts[g + 1] if g + 1 < len(starts) else t
        if end > start:
            out[start:end] = (x[start:end].float() @ w[g].float().t()).to(
                torch.bfloat16)
    return out
