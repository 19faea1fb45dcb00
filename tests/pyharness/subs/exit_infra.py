# Exits with the harness's "device error" status from inside custom_kernel,
# hoping to have its failure retried as the platform's: the exit status is
# the parent's (115, crashed), not the child's.
import os


def custom_kernel(data):
    os._exit(110)
