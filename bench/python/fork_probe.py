"""What a worker-held, pre-imported interpreter would save (issue 15).

Compares, in one run, the time to import torch with the time for a fork
of an interpreter that has already imported it to enter fresh user,
mount, PID and network namespaces and do a tensor operation. The first is
what every Python run pays today; the second is the floor of a run forked
from such an interpreter (no CUDA: the fork must come before any device
is opened). Not a sandbox: no mounts, seccomp or cgroup are set up here.

    python3 bench/python/fork_probe.py [-n RUNS]
"""
import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import time

NEWNS, NEWUSER, NEWPID, NEWNET = 0x20000, 0x10000000, 0x20000000, 0x40000000


def import_seconds():
    """A fresh interpreter's `import torch`, timed inside it."""
    code = ("import time; t = time.monotonic(); import torch; "
            "print(time.monotonic() - t)")
    out = subprocess.run([sys.executable, "-c", code], check=True,
                         capture_output=True, text=True).stdout
    return float(out)


def forked_seconds(torch, libc):
    """A fork that enters new namespaces and runs one operation."""
    uid, gid = os.getuid(), os.getgid()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            if libc.unshare(NEWUSER | NEWNS | NEWPID | NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "unshare")
            for name, text in (("setgroups", "deny"),
                               ("uid_map", f"0 {uid} 1"),
                               ("gid_map", f"0 {gid} 1")):
                with open(f"/proc/self/{name}", "w") as f:
                    f.write(text)
            inner = os.fork()  # the first process of the new PID namespace
            if inner == 0:
                ok = (torch.arange(1000.0) * 2).sum().item() == 999000.0
                os._exit(0 if ok and os.getpid() == 1 else 1)
            code = os.waitstatus_to_exitcode(os.waitpid(inner, 0)[1])
        finally:
            os._exit(code)
    status = os.waitpid(pid, 0)[1]
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("the forked run failed (no unprivileged user namespaces?)")
    return time.monotonic() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=5, help="runs of each (5)")
    n = ap.parse_args().n
    import torch

    libc = ctypes.CDLL(None, use_errno=True)
    imports, forks = [], []
    for _ in range(n):  # interleaved, so load affects both alike
        imports.append(import_seconds())
        forks.append(forked_seconds(torch, libc))
    mi, mf = statistics.median(imports), statistics.median(forks)
    print(f"torch {torch.__version__}, python {sys.version.split()[0]}, "
          f"{n} runs each")
    print(f"import torch:              median {mi:.3f} s "
          f"({min(imports):.3f}-{max(imports):.3f})")
    print(f"fork + namespaces + op:    median {mf:.4f} s "
          f"({min(forks):.4f}-{max(forks):.4f})")
    print(f"ratio fork / import: {mf / mi:.4f}")


if __name__ == "__main__":
    main()
