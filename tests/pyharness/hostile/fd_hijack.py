# Report hijack: writes a complete passing report (with a 1 ns time) to
# every descriptor it has (0..2 included; not its channel to the harness or
# its slots' memfd, which would fail the run for other reasons) and to the
# parent's descriptors through /proc/<ppid>/fd, at import and on every
# call; then computes honestly. Defence: the report descriptor is not in
# the child (closed), and the parent is non-dumpable and the child has no
# capabilities (the parent's /proc/<pid>/fd is closed to it). The report
# must hold none of these lines. On a call it writes only to the
# descriptors it had at import: the ones CUDA opens later (its own pipes)
# are no report channel, and writing to them breaks the child's CUDA.
import os
import stat
import sys

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


def _spam(only=None):
    done = []
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if only is not None and fd not in only:
            continue
        try:
            if _harness_fd(fd):
                continue
            os.write(fd, FAKE)
            done.append(fd)
        except OSError:
            pass
    ppid = os.getppid()
    try:
        names = os.listdir("/proc/%d/fd" % ppid)
    except OSError as e:
        names = []
        sys.stderr.write("fd_hijack: /proc/%d/fd: %s\n" % (ppid, e.strerror))
    for name in names:
        try:
            fd = os.open("/proc/%d/fd/%s" % (ppid, name), os.O_WRONLY)
            os.write(fd, FAKE)
            os.close(fd)
            done.append("parent:" + name)
        except OSError:
            pass
    sys.stderr.write("fd_hijack: wrote to %s\n" % done)
    return {fd for fd in done if isinstance(fd, int)}


_AT_IMPORT = _spam()


def custom_kernel(data):
    _spam(_AT_IMPORT)
    a, b = data
    return a + b
