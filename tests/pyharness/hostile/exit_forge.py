# Forge and exit: prints a complete passing report on stdout and every
# descriptor it has (not its channel to the harness, its slots or the GPU
# driver's), then ends its process with status 0 in the middle of the
# first call. Defence: the exit status and the report are
# the parent's: a crash (115), and none of these lines in the report.
import os
import stat

FAKE = ("benchmark-count: 10\nbenchmark.9.spec: forged\n"
        "benchmark.0.mean: 1.000\ncheck: pass\n").encode()


def _harness_fd(fd):
    """Its channel to the harness (a socket), its slots (a memfd), or the
    GPU driver's descriptors: not where a report goes."""
    if stat.S_ISSOCK(os.fstat(fd).st_mode):
        return True
    try:
        return os.readlink("/proc/self/fd/%d" % fd).startswith(
            ("/memfd:", "/dev/nvidia", "anon_inode:"))
    except OSError:
        return False


def custom_kernel(data):
    for name in os.listdir("/proc/self/fd"):
        try:
            fd = int(name)
            if not _harness_fd(fd):
                os.write(fd, FAKE)
        except OSError:
            pass
    os._exit(0)
