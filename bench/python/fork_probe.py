"""What a worker-held, pre-imported interpreter would save (issue 15).

Compares, in one run, the time to import torch with the time for a fork
of an interpreter that has already imported it to enter fresh user,
mount, PID and network namespaces and do a tensor operation, two ways:
"unshare" makes the namespaces in the fork; "join" enters namespaces made
beforehand by another process (util-linux unshare here, standing for the
sandbox's init) through setns(2) on its pidfd. The import is what every
Python run pays today; the forks are the floor of a run forked from such
an interpreter (no CUDA: the fork must come before any device is
opened). Not a sandbox: no mounts, seccomp or cgroup are set up here.

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
SYS_PIDFD_OPEN = 434


def import_seconds():
    """A fresh interpreter's `import torch`, timed inside it."""
    code = ("import time; t = time.monotonic(); import torch; "
            "print(time.monotonic() - t)")
    out = subprocess.run([sys.executable, "-c", code], check=True,
                         capture_output=True, text=True).stdout
    return float(out)


def timed_fork(torch, enter, inner_ok, what):
    """Seconds for a fork that calls enter() (entering namespaces), forks
    the first process of its PID namespace, runs one tensor operation
    there and checks inner_ok()."""
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            enter()
            inner = os.fork()
            if inner == 0:
                ok = (torch.arange(1000.0) * 2).sum().item() == 999000.0
                os._exit(0 if ok and inner_ok() else 1)
            code = os.waitstatus_to_exitcode(os.waitpid(inner, 0)[1])
        finally:
            os._exit(code)
    if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) != 0:
        sys.exit(f"the {what} run failed")
    return time.monotonic() - start


def forked_seconds(torch, libc):
    """A fork that makes new namespaces itself."""
    uid, gid = os.getuid(), os.getgid()

    def enter():
        if libc.unshare(NEWUSER | NEWNS | NEWPID | NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "unshare")
        for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"),
                           ("gid_map", f"0 {gid} 1")):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)

    return timed_fork(torch, enter, lambda: os.getpid() == 1,
                      "forked (no unprivileged user namespaces?)")


def ns_init():
    """A process that is PID 1 of new user, mount, PID and network
    namespaces (util-linux unshare's child); returns (unshare, its pid)."""
    holder = subprocess.Popen(["unshare", "--user", "--map-root-user",
                               "--mount", "--pid", "--fork", "--net",
                               "sleep", "600"])
    for _ in range(500):
        kids = open(f"/proc/{holder.pid}/task/{holder.pid}/children").read()
        if kids.split():
            return holder, int(kids.split()[0])
        time.sleep(0.01)
    sys.exit("unshare made no namespace init")


def joined_seconds(torch, libc, target):
    """A fork that joins target's namespaces."""
    def enter():
        fd = libc.syscall(SYS_PIDFD_OPEN, target, 0)
        if fd < 0 or libc.setns(fd, NEWUSER | NEWNS | NEWPID | NEWNET):
            raise OSError(ctypes.get_errno(), "setns")

    return timed_fork(torch, enter, lambda: os.getuid() == 0, "joined")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=5, help="runs of each (5)")
    n = ap.parse_args().n
    import torch

    libc = ctypes.CDLL(None, use_errno=True)
    holder, target = ns_init()
    times = {"import torch": [], "fork, unshare, op": [],
             "fork, join, op": []}
    try:
        for _ in range(n):  # interleaved, so load affects all alike
            times["import torch"].append(import_seconds())
            times["fork, unshare, op"].append(forked_seconds(torch, libc))
            times["fork, join, op"].append(
                joined_seconds(torch, libc, target))
    finally:
        holder.kill()
        holder.wait()
    print(f"torch {torch.__version__}, python {sys.version.split()[0]}, "
          f"{n} runs each")
    base = statistics.median(times["import torch"])
    for what, t in times.items():
        m = statistics.median(t)
        print(f"{what:20s} median {m:.4f} s ({min(t):.4f}-{max(t):.4f}), "
              f"{m / base:.4f} of the import")


if __name__ == "__main__":
    main()
