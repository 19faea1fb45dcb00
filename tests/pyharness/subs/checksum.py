# Honest, and prints what it was given (a checksum of its inputs and their
# addresses) at every call: the seeds' effect, seen from the child.
import sys


def custom_kernel(data):
    a, b = data
    sys.stderr.write("checksum: %.6f %d %d\n"
                     % (float(a.float().sum()), a.data_ptr(), b.data_ptr()))
    return a + b
