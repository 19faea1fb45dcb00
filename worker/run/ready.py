"""kb_ready: a Python harness run started before its job (worker/run/ready.h).

The worker starts this script in a fresh sandbox, exactly as it starts a
harness run, before any job has arrived: same uid, namespaces, cgroup,
binds and environment, the run's report pipe on fd 3, and on fd 4 (named
by KB_READY_FD) a socket to the worker. It knows nothing of the job and
receives nothing secret. It

  1. starts the child our harness would start first (problems/harness/
     python/kbh_guard.py): a fresh interpreter running this script with
     --child, in a session of its own, with the environment our harness
     gives its child, and a SEQPACKET socket to this process;
  2. imports torch here meanwhile (never CUDA: no context is made before
     the job), waits for the child to say it has imported torch too, and
     writes "ready" to the worker;
  3. waits for the job: lines "arg <text>" (the run's argv without the
     interpreter: the harness's main script, then its arguments) and
     "go". The worker sends them with the run's cases already in the
     scratch directory and the task's files in place, and releases the
     run's wall-clock limit at the same moment;
  4. runs the main script as `python3 <main> <args>` would (runpy,
     __main__, sys.argv, sys.path[0] the script's folder). The worker
     never sends POPCORN_SEED this way: a secret run is never a held one.

Our harness (kbh_eval.py) takes the child with take_child() instead of
starting one; for any other main script (upstream's eval.py) the child is
ended before the script runs. In the child, the message from the parent
names kbh_child.py and its arguments, and the child runs it the same way.

Exit codes: those of the main script; 110 when this script fails before
the main script starts (ours, as the harness's 110).
"""

import os
import runpy
import socket
import subprocess
import sys

EXIT_OURS = 110
_child = None   # (Popen, our socket, the child's descriptor number)


def _fail(msg):
    sys.stderr.write("kb_ready: %s\n" % msg)
    sys.stderr.flush()
    os._exit(EXIT_OURS)


def _run(script, args):
    """As `python3 script args` does: __file__ absolute, the script's
    folder first on sys.path, sys.argv the arguments (runpy makes
    sys.argv[0] the absolute path too; python3 keeps it as given)."""
    path = os.path.abspath(script)
    sys.argv = [script] + args
    sys.path[0] = os.path.dirname(path)
    runpy.run_path(path, run_name="__main__")


def _import_torch():
    try:
        import torch  # noqa: F401 (the point: imported before the job)
    except Exception as e:   # the run itself will say what is wrong
        sys.stderr.write("kb_ready: import torch: %s\n" % e)


def take_child():
    """Our harness's child, started before the job: (Popen, socket,
    the child's descriptor number of its socket), once; None when there
    is none. The caller sends it start_child()'s message."""
    global _child
    c, _child = _child, None
    return c


def start_child(sock, argv):
    """Tells the child taken with take_child() to run argv (a script and
    its arguments)."""
    sock.send("\0".join(argv).encode())


def _spawn_child():
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    fd = theirs.fileno()   # the same number in the child (pass_fds)
    env = {k: v for k, v in os.environ.items()
           if k not in ("POPCORN_FD", "POPCORN_SEED", "KBH_CASES_UNLINK",
                        "KB_READY_FD")}
    env["PYTHONUNBUFFERED"] = "1"
    try:
        proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--child",
             str(fd), str(os.getpid())],
            stdin=subprocess.DEVNULL, close_fds=True, pass_fds=(fd,), start_new_session=True, env=env)
    except OSError as e:
        sys.stderr.write("kb_ready: the child did not start: %s\n" % e)
        return None
    finally:
        theirs.close()
    return proc, ours, fd


def _read_go(f):
    args = []
    for line in f:
        line = line.rstrip("\n")
        if line == "go":
            return args
        if not line.startswith("arg "):
            _fail("bad line from the worker: %r" % line[:80])
        args.append(line[4:])
    return None   # the worker went away: no job for this run


def _parent():
    global _child
    try:
        sock = socket.socket(fileno=int(os.environ.pop("KB_READY_FD")))
    except (KeyError, ValueError, OSError) as e:
        _fail("no socket to the worker: %s" % e)
    child = _spawn_child()
    _import_torch()
    if child is not None:
        try:
            child[1].settimeout(120)
            if child[1].recv(16) != b"ready":
                raise OSError("it ended")
            child[1].settimeout(None)
        except OSError as e:
            sys.stderr.write("kb_ready: the child is not ready: %s\n" % e)
            child[0].kill()
            child[0].wait()
            child = None
    sock.sendall(b"ready\n")
    f = sock.makefile("r", encoding="utf-8", newline="\n")
    args = _read_go(f)
    f.close()
    sock.close()
    if not args:
        if child is not None:
            child[0].kill()
            child[0].wait()
        sys.exit(0 if args is None else EXIT_OURS)
    if child is not None and os.path.basename(args[0]) != "kbh_eval.py":
        child[0].kill()
        child[0].wait()
        child[1].close()
        child = None
    _child = child
    # Our harness imports this module by name to take the child.
    sys.modules["kb_ready"] = sys.modules[__name__]
    _run(args[0], args[1:])


def _child_main(fd, parent):
    import ctypes
    import signal
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL, 0, 0, 0)   # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(1)
    sock = socket.socket(fileno=fd)
    _import_torch()
    sock.send(b"ready")
    msg = sock.recv(65536)
    if not msg:
        os._exit(0)   # not taken
    argv = msg.decode().split("\0")
    sock.detach()     # the script takes the descriptor by number
    _run(argv[0], argv[1:])


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        _child_main(int(sys.argv[2]), int(sys.argv[3]))
    else:
        _parent()
