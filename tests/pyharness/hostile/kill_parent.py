# Signals the trusted parent: SIGKILL to its pid and to each of its
# threads, through kill, tgkill and tkill; signal 0 (a probe, harmless) to
# every process (-1) and to the parent's process group. Then computes
# honestly. Defence: the child's seccomp filter refuses signals to the
# parent, its threads, -1 and other process groups: every attempt fails
# with EPERM and the run completes.
import ctypes
import os
import signal
import sys

_libc = ctypes.CDLL(None, use_errno=True)
SYS = {"x86_64": {"tgkill": 234, "tkill": 200},
       "aarch64": {"tgkill": 131, "tkill": 130}}[os.uname().machine]


def _try(what, fn):
    try:
        fn()
        res = "ok"
    except OSError as e:
        res = e.strerror
    sys.stderr.write("kill_parent: %s: %s\n" % (what, res))


def _sys(nr, *args):
    def call():
        if _libc.syscall(nr, *args) != 0:
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e))
    return call


def _attack():
    ppid = os.getppid()
    try:
        tids = [int(t) for t in os.listdir("/proc/%d/task" % ppid)]
    except OSError:
        tids = [ppid]
    _try("kill(-1, 0)", lambda: os.kill(-1, 0))
    try:
        pg = os.getpgid(ppid)
        _try("killpg(parent's group, 0)", lambda: os.killpg(pg, 0))
    except OSError:
        pass
    for t in sorted(set(tids)):
        _try("tgkill(%d, %d, SIGKILL)" % (ppid, t),
             _sys(SYS["tgkill"], ppid, t, signal.SIGKILL))
        _try("tkill(%d, SIGKILL)" % t, _sys(SYS["tkill"], t, signal.SIGKILL))
        _try("kill(%d, SIGKILL)" % t, lambda t=t: os.kill(t, signal.SIGKILL))


_attack()


def custom_kernel(data):
    _attack()
    a, b = data
    return a + b
