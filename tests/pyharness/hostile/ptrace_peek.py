# Reads the trusted parent: its /proc/<ppid>/{mem,environ,maps,fd/*} (the
# environment holds POPCORN_SEED in a ranked run), process_vm_readv and
# ptrace(ATTACH). Reports each attempt; computes honestly. Defence: the
# parent is non-dumpable (its /proc files are closed to the child) and the
# child's seccomp filter refuses ptrace and process_vm_readv: every
# attempt fails and the run completes.
import ctypes
import os
import sys

_libc = ctypes.CDLL(None, use_errno=True)


def _report(what, ok, detail=""):
    sys.stderr.write("ptrace_peek: %s: %s%s\n"
                     % (what, "READ" if ok else "denied", detail))


def _attack():
    ppid = os.getppid()
    for name in ("environ", "mem", "maps"):
        try:
            with open("/proc/%d/%s" % (ppid, name), "rb") as f:
                got = f.read(4096)
            _report(name, bool(got), " (%d bytes)" % len(got))
        except OSError as e:
            _report(name, False, " (%s)" % e.strerror)
    opened, why = [], ""
    for n in range(32):            # the parent's descriptors, report's too
        try:
            fd = os.open("/proc/%d/fd/%d" % (ppid, n),
                         os.O_RDONLY | os.O_NONBLOCK)
            os.close(fd)
            opened.append(n)
        except OSError as e:
            why = why or e.strerror
    _report("fd", bool(opened), " %s" % opened if opened else
            " (%s)" % why)

    class IOVec(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
    buf = ctypes.create_string_buffer(64)
    local = IOVec(ctypes.cast(buf, ctypes.c_void_p), 64)
    remote = IOVec(0x400000, 64)
    n = _libc.process_vm_readv(ppid, ctypes.byref(local), 1,
                               ctypes.byref(remote), 1, 0)
    _report("process_vm_readv", n > 0,
            "" if n > 0 else " (%s)" % os.strerror(ctypes.get_errno()))
    r = _libc.ptrace(16, ppid, 0, 0)           # PTRACE_ATTACH
    _report("ptrace(ATTACH)", r == 0,
            "" if r == 0 else " (%s)" % os.strerror(ctypes.get_errno()))
    if r == 0:
        _libc.ptrace(17, ppid, 0, 0)           # PTRACE_DETACH


_attack()


def custom_kernel(data):
    a, b = data
    return a + b
