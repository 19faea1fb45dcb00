# kbh-hostile: gpu-only
# Work left on another stream: launches the sum on a stream of its own and
# returns without waiting, so the end event (on the current stream) is
# recorded before the work ends; the work spins for 3 ms first. Defence:
# the harness's device-wide synchronize, the copy-out and the parent's own
# probe op all wait for the work inside the parent's window, which bounds
# the claim: the samples are clamped and the case is suspect (or they gain
# nothing).
import torch

_stream = None


def custom_kernel(data):
    global _stream
    a, b = data
    if _stream is None:
        _stream = torch.cuda.Stream()
    out = torch.empty_like(a)
    _stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(_stream):
        torch.cuda._sleep(6000000)           # ~3 ms at ~2 GHz
        torch.add(a, b, out=out)
    return out
