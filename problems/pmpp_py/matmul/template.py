#!POPCORN leaderboard matmul_py
#!POPCORN gpu H100
# matmul: c = a b for fp16 a (m, k) and b (k, n), row-major, on the GPU;
# return a new (m, n) float16 tensor on the same device, accumulated in
# fp32. Inputs are read-only. The task description has the full contract
# and the tolerance.
#
# This version is correct but plain PyTorch; replace it with your own
# kernel (Triton, torch.utils.cpp_extension.load_inline, ...).
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    if a.is_cuda:
        return a @ b
    return (a.float() @ b.float()).half()
