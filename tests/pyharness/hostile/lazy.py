# A lazy tensor subclass: custom_kernel returns at once a tensor that only
# computes when it is copied (__torch_function__ on copy_), which the
# harness does after its timed region. The deferred work takes over 3 ms.
# Defence: the copy-out is inside the parent's window, which bounds the
# claim from below: the samples are clamped to about the real time and the
# case is suspect.
import time

import torch


class Lazy(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.Tensor.copy_ and isinstance(args[1], Lazy):
            dst, src = args[0], args[1]
            end = time.monotonic_ns() + 3000000
            while time.monotonic_ns() < end:
                pass
            with torch._C.DisableTorchFunction():
                torch.add(src.lazy_a, src.lazy_b, out=dst)
            return dst
        return super().__torch_function__(func, types, args, kwargs)


def custom_kernel(data):
    a, b = data
    t = torch.empty_like(a).as_subclass(Lazy)
    t.lazy_a, t.lazy_b = a, b
    return t
