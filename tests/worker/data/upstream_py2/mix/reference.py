import torch

from task import input_t, output_t
from utils import verbose_allclose


def ref_kernel(data: input_t) -> output_t:
    y = data["x"] * data["w"]["scale"]
    return -y if data["cfg"]["negate"] else y


def generate_input(num_rows: int, num_cols: int, negate: bool, seed: int,
                   device: str = "cuda") -> input_t:
    if not isinstance(negate, bool):
        raise TypeError(f"negate is a {type(negate).__name__}, not a bool")
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    x = torch.rand(num_cols, num_rows, device=device, generator=g).t()
    scale = torch.rand(num_cols, device=device, generator=g) + 0.5
    return {"x": x, "w": {"scale": scale}, "cfg": {"negate": negate}}


def check_implementation(data: input_t, output: output_t):
    msgs = verbose_allclose(output, ref_kernel(data))
    return (not msgs), "; ".join(msgs)
