"""kbh_eval.py: the harness of our Python problems (main).

    POPCORN_FD=<fd> [POPCORN_SEED=<u64>] python kbh_eval.py \\
        test|benchmark|profile|leaderboard <cases file>

Theory of operation
-------------------
Two processes (kbh_guard, kbh_child). This one, the trusted parent, owns
everything that decides a result: the report, the cases, the inputs and
their pristine copies, the expected outputs, the clock that bounds every
timing, the verdicts. It never imports submission.py nor anything else of
the user's. The child, started with a fresh interpreter, confined by its
own seccomp filter, in a process group of its own that it cannot leave,
is the only process that imports the submission and calls custom_kernel.
It sees nothing of the parent's but the work slots (kbh_slots: a memfd on
the CPU, CUDA IPC buffers of their own on a GPU) and the requests the
parent sends it; what it sends back is a fixed-format claim (kbh_wire).

Start: parse the mode (else exit 2), take the report descriptor from
POPCORN_FD (else 111), make this process non-dumpable (so the child can
neither ptrace it nor open its /proc/<pid>/{mem,fd,environ}), then spawn
the child, so that the two interpreters import torch and make their CUDA
contexts at the same time (the longest part of a short run). It gets
neither the report descriptor nor POPCORN_SEED, and no user code runs in
it before LOAD, below. Then import the problem (problem.py, a trusted
task file), read every case and have the problem validate it (else 113),
combine the secret seed into the case seeds (POPCORN_SEED: a + (a+b)(a+b
+1)/2 mod 2^64), remove the cases file when the worker asks
(KBH_CASES_UNLINK=1), open the device (CUDA when torch sees one, else the
CPU; KBH_DEVICE overrides; failure: 110) with one torch CPU thread,
allocate the flush buffer, start the watchdog thread (exit 114 with the
report so far), then HELLO: the child must have picked the same device,
and its filter, which refused signals to this process's threads of the
spawn, adds every thread made since (torch's, CUDA's, the watchdog). A
child that fails before user code is ours (110). The run key, 64 bits
from getrandom(), is drawn after HELLO.

Timed modes then calibrate the handoff (kbh_run.Run.calibrate: 100 empty
requests, before any user code), write system.guard, write
"user-code: started" and have the child import the submission (LOAD).

One call (kbh_run.CaseRun.call), the child stopped (SIGSTOP to its whole
process group) throughout 1-3 and 5-6:
  1. inputs: the case seed alone for a case's first call (failures replay
     from the cases file), else a seed derived from the case seed, the
     run key and the call's index: fresh data every call that nothing the
     child can read predicts. They are generated in the parent's memory
     (pristine; never shared) and copied into the call's slot set; calls
     alternate between two sets (consecutive calls see other addresses);
  2. outputs poisoned (0xFF bytes: NaN), so an unwritten output fails;
  3. timed calls only: caches flushed (GPU: persisting L2 lines made
     normal, then a read of 4 x L2, at least 64 MiB, in the parent's
     context, synchronised; L2 is physical, so it holds for the child's
     context; CPU: a read of 2 x the last-level cache);
  4. CALL: t_go, SIGCONT, the child's timed region (kbh_child.py), its
     reply, the device probe (GPU: a tiny op of the parent's own,
     synchronised: it completes only once the device has drained what the
     child left on it), t_seen, SIGSTOP, wait until every process of the
     group is stopped;
  5. the claim is checked against the window (kbh_timing): outside it is
     forged, shorter than the window less the calibrated slack and the
     parent's own measure of the copy-out is clamped to that bound;
  6. every input byte must equal the pristine copy, then the problem's
     reference runs on the pristine inputs and its check compares the
     output slot with it, tolerance per dtype. Every call is checked, in
     every mode, warm-up included.

Modes (kbh_run): test runs each case once (one slot set, no flush).
benchmark, leaderboard and profile run per case a quick check, warm-up
calls, then timed calls until the relative standard error is below 0.1%
(after min_runs), or max_runs, or the time cap (limits per mode in
kbh_timing; cases may set min_runs, max_runs, max_ms); profile also runs
the torch profiler around the timed calls in the child. Each benchmark
reports runs, mean, std, err, best, worst (ns), bytes/gbps, flops/gflops,
floor_ns, stop, warmup, window_ns, clamped, status (pass, or suspect with
error: a forged claim, too many gainful unexplained clamps, or a best time
below the physical floor of kbh_peak).

Endings: a failed check, an exception in custom_kernel or an unusable
result: that case fails (status fail, error), check: fail, exit 112. The
child dying or exiting during a request after user code ran: the case
fails with how it ended, "crash: <how>", check: fail, exit 115, nothing
more runs. The child failing before user code ran, or any error of ours:
110. Every exit kills the child's whole process group first and leaves
with os._exit (no exit handlers of anyone run here).
"""

import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# Every module of the harness is imported now: the task directory leaves
# sys.path once problem.py is in (see _load_problem).
import kbh_device  # noqa: E402
import kbh_guard  # noqa: E402
import kbh_report  # noqa: E402
import kbh_run  # noqa: E402
import kbh_sentinel  # noqa: E402
import kbh_timing  # noqa: E402
import kbh_wire  # noqa: E402
from kbh_report import (EXIT_BAD_SPEC, EXIT_CRASHED, EXIT_DEVICE,  # noqa
                        EXIT_FAILED, EXIT_NO_FD, EXIT_OK, EXIT_TIMEOUT,
                        EXIT_USAGE)


def log(msg):
    sys.stderr.write("harness: %s\n" % msg)
    sys.stderr.flush()


class Watchdog:
    """A thread (made before the child, like every thread of ours) that
    ends the run with 114 at its deadline: kills the child's group, leaves
    the report as it is."""

    def __init__(self):
        self.deadline = None
        self.child_pgrp = 0
        self.cond = threading.Condition()
        threading.Thread(target=self._main, name="kbh-watchdog",
                         daemon=True).start()

    def arm(self, seconds):
        with self.cond:
            self.deadline = time.monotonic() + seconds
            self.cond.notify()

    def _main(self):
        with self.cond:
            while self.deadline is None or time.monotonic() < self.deadline:
                self.cond.wait(None if self.deadline is None else
                               max(0.01, self.deadline - time.monotonic()))
        log("watchdog: the run took too long; exit %d" % EXIT_TIMEOUT)
        if self.child_pgrp:
            try:
                os.killpg(self.child_pgrp, 9)
            except OSError:
                pass
        os._exit(EXIT_TIMEOUT)


class Exit(Exception):
    def __init__(self, code, msg=None):
        Exception.__init__(self, msg)
        self.code = code
        self.msg = msg


def _nondumpable():
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(4, 0, 0, 0, 0) != 0:   # PR_SET_DUMPABLE
        raise Exit(EXIT_DEVICE, "prctl(PR_SET_DUMPABLE): %s"
                   % os.strerror(ctypes.get_errno()))


def _load_problem():
    """problem.py of the task (a trusted file beside this one). The task
    directory then leaves sys.path: nothing imported later (torch imports
    lazily) may come from a directory a submission's files share."""
    import importlib
    try:
        problem = importlib.import_module("problem")
    except Exception as e:
        raise Exit(EXIT_DEVICE, "cannot import problem.py: %s: %s"
                   % (type(e).__name__, e))
    for name in ("KEYS", "generate", "outputs", "reference", "check",
                 "cost"):
        if not hasattr(problem, name):
            raise Exit(EXIT_DEVICE, "problem.py defines no %s" % name)
    return problem


def _cases(path, mode, problem, device_kind):
    try:
        cases = kbh_report.load_cases(path)
    except kbh_report.CaseError as e:
        raise Exit(EXIT_BAD_SPEC, str(e))
    secret = os.environ.pop("POPCORN_SEED", None)
    if secret is not None:
        if not secret.isdigit() or int(secret) > kbh_report.U64:
            raise Exit(EXIT_BAD_SPEC, "POPCORN_SEED is not an unsigned "
                       "64-bit integer")
    preps = []
    for n, c in enumerate(cases, 1):
        try:
            if secret is not None and "seed" in c.kv:
                a = c.u64("seed")
                c.kv["seed"] = str(kbh_report.combine_seed(a, int(secret)))
            preps.append(kbh_run.Prepared(problem, c, mode, device_kind))
        except kbh_report.CaseError as e:
            raise Exit(EXIT_BAD_SPEC, "case %d (%s): %s" % (n, c.spec, e))
    want = os.environ.pop("KBH_CASES_UNLINK", "")
    if want == "1":
        try:
            os.unlink(path)
        except OSError as e:
            log("could not remove %s: %s" % (path, e.strerror))
    return preps


def run(argv):
    if len(argv) != 3 or argv[1] not in kbh_report.MODES:
        raise Exit(EXIT_USAGE, "usage: POPCORN_FD=<fd> %s "
                   "test|benchmark|profile|leaderboard <cases file>"
                   % (argv[0] if argv else "kbh_eval.py"))
    mode, path = argv[1], argv[2]
    try:
        rep = kbh_report.Report.from_env()
    except kbh_report.ReportError as e:
        raise Exit(EXIT_NO_FD, str(e))
    state = {"rep": rep, "guard": None, "run": None}
    try:
        return _run(mode, path, rep, state)
    except kbh_report.ReportError as e:
        raise Exit(EXIT_NO_FD, str(e)) from None
    except Exception as e:
        if not isinstance(e, Exit):
            # a bug of ours or of the problem's code: the platform's fault
            import traceback
            traceback.print_exc()
            e = Exit(EXIT_DEVICE, "%s: %s" % (type(e).__name__, e))
        if e.code in (EXIT_DEVICE, EXIT_CRASHED):
            try:
                rep.kv("check", "fail")
            except kbh_report.ReportError:
                pass
        raise e
    finally:
        if state["guard"] is not None:
            state["guard"].kill()


def _run(mode, path, rep, state):
    _nondumpable()
    # The child first: it imports torch and makes its CUDA context while
    # this process does the same (the theory's start).
    guard = kbh_guard.Guard(os.path.join(HERE, "kbh_child.py"), rep.fd)
    state["guard"] = guard
    try:
        guard.spawn(kbh_device.threads())
    except OSError as e:
        raise Exit(EXIT_DEVICE, "the child process failed to start: %s" % e)
    problem = _load_problem()
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
    sys.dont_write_bytecode = True

    import torch
    torch.set_num_threads(1)
    try:
        want = os.environ.get("KBH_DEVICE", "")
        kind = "cuda" if want == "cuda" or (
            want == "" and torch.cuda.is_available()) else "cpu"
    except Exception as e:
        raise Exit(EXIT_DEVICE, "device: %s" % e)
    preps = _cases(path, mode, problem, kind)
    try:
        device = kbh_device.open_device(torch)
        device.setup()
    except Exception as e:
        raise Exit(EXIT_DEVICE, "device: %s: %s" % (type(e).__name__, e))

    # KBH_SENTINEL=1: the sentinel times benchmark and leaderboard runs on
    # NVIDIA GPUs (kbh_sentinel; not yet the default: README.md, "The
    # sentinel, not yet the default"). Made before HELLO, so that the
    # driver threads its module and stream start are in the child's
    # filter.
    timer, page_fd = None, None
    if device.kind == "cuda" and mode in ("benchmark", "leaderboard") and \
            os.environ.get("KBH_SENTINEL") == "1":
        try:
            timer, page_fd = kbh_sentinel.open_timer(
                device.drv, os.path.join(HERE, "kbh_sentinel.ptx"))
        except Exception as e:
            raise Exit(EXIT_DEVICE, "the sentinel: %s: %s"
                       % (type(e).__name__, e))
        device.timer = timer
        # an experiment's knob (bench/gpu/py/timing.py): how long after
        # "started" the hold is released without "launched"
        if os.environ.get("KBH_SENT_LAUNCH_US"):
            timer.launch_ns = float(os.environ["KBH_SENT_LAUNCH_US"]) * 1e3
        if os.environ.get("KBH_SENT_WAKE_US"):
            timer.margin = float(os.environ["KBH_SENT_WAKE_US"]) * 1e3
        timer.spin = os.environ.get("KBH_SENT_SPIN") == "1"

    dog = Watchdog()
    watchdog_s = dict(kbh_timing.DEFAULT_WATCHDOG_S,
                      **getattr(problem, "WATCHDOG_S", {}))
    dog.child_pgrp = guard.pid
    dog.arm(watchdog_s[mode])

    try:
        hello = guard.hello(kbh_device.threads(), device.kind,
                            getattr(device, "ordinal", 0), page_fd)
    except (kbh_guard.ChildDied, kbh_wire.Malformed) as e:
        raise Exit(EXIT_DEVICE, "the child process failed to start: %s" % e)
    if page_fd is not None:
        os.close(page_fd)
    if hello.status != kbh_wire.ST_OK:
        raise Exit(EXIT_DEVICE, hello.msg)
    run_key = int.from_bytes(os.getrandom(8), "little")
    log("mode=%s device=%s %s parent=%d child=%d%s" % (
        mode, device.kind, device.describe(), os.getpid(), guard.pid,
        "" if guard.confined else " NOT confined: " + guard.confine_msg))

    for k, v in device.system():
        rep.kv(k, v)
    r = kbh_run.Run(mode, problem, preps, rep, torch, device, guard, run_key)
    r.timer = timer
    state["run"] = r
    guard_text = "child %d %s" % (
        guard.pid, "confined" if guard.confined else
        "NOT confined (%s)" % guard.confine_msg)
    try:
        if mode != "test":
            guard_text += "; " + r.calibrate()
        if timer is not None:
            rep.kv("system.sentinel", r.calibrate_sentinel())
    except (kbh_guard.ChildDied, kbh_wire.Malformed,
            kbh_run.HarnessError, kbh_sentinel.SentinelStuck) as e:
        raise Exit(EXIT_DEVICE, "calibration: %s" % e)
    rep.kv("system.guard", guard_text)

    try:
        if mode == "test":
            r.run_test()
        else:
            r.run_bench()
    except (kbh_run.HarnessError, kbh_sentinel.SentinelStuck) as e:
        raise Exit(EXIT_DEVICE, str(e))
    late = set(kbh_device.threads()) - set(guard.parent_tids)
    if late:
        # Not in the child's filter: it could have signalled them.
        log("warning: threads made after the child started: %s"
            % sorted(late))
    if r.crash is not None:
        rep.kv("crash", r.crash)
        rep.kv("check", "fail")
        return EXIT_CRASHED
    rep.kv("check", "fail" if r.failed else "pass")
    return EXIT_FAILED if r.failed else EXIT_OK


def main():
    try:
        code = run(sys.argv)
    except Exit as e:
        if e.msg:
            log(e.msg)
        code = e.code
    except BaseException:
        import traceback
        traceback.print_exc()
        code = EXIT_DEVICE
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
