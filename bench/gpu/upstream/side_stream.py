# Hostile (upstream format): leaves its work on a stream of its own and
# returns without waiting for it (after a 1 ms device sleep, so that the
# work outlives any timing that ends at the return).
import torch

from task import input_t, output_t

_stream = None


def custom_kernel(data: input_t) -> output_t:
    global _stream
    a, b, out = data
    if _stream is None:
        _stream = torch.cuda.Stream()
    _stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(_stream):
        torch.cuda._sleep(2000000)
        torch.add(a, b, out=out)
    return out
