#!POPCORN leaderboard matmul_py
# Plain PyTorch: on a GPU cuBLAS's fp16 GEMM (tensor cores, fp32
# accumulation); on the CPU, where torch may have no fp16 GEMM, in fp32.
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    if a.is_cuda:
        return a @ b
    return (a.float() @ b.float()).half()
