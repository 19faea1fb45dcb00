# custom_kernel crashes its process (SIGSEGV): exit 115, "crash:" line.
import ctypes


def custom_kernel(data):
    ctypes.string_at(0)
