"""hostile_cases: what each hostile submission (hostile/*.py) must come
to, and which defence it covers, as a patch that removes that defence
from a copy of the harness (ablate.py checks that the expectation then
fails: the test catches what it claims to).

Every entry: the hostile file, the mode and case(s) it runs on
(vectoradd unless `problem` says otherwise; gpu_only ones only where a GPU
is), the expectation (a function of the
result and a context, returning the list of what is wrong: [] means
contained), and ablations: (name, [(harness file, old text, new text)]).
`alone` marks the cases judged by time or by a race (shaved claims, head
starts, work after "done"): run_all() runs them one at a time, after the
others, which it runs two at a time.
Each old text must occur exactly once in the harness file (ablate.py
stops when one drifts).
"""

import os
import re

import pyh_lib as L

PROBLEM = "pmpp_py/vectoradd"
# One timed case, 20 samples: the CPU-sized benchmark (n = 2^20 fp16).
ONE = ["size: 268435456; seed: 54352; min_runs: 20; max_runs: 20; "
       "max_ms: 20000"]
# The head-start attacks (precompute_thread, grandchild): four times the
# work, so that what a head start saves (the sum, 8 ms on the CPU) stands
# well clear of the slack (at most 1 ms on the CPU) under any load.
HEAD_START = ["size: 1073741824; seed: 54352; min_runs: 20; max_runs: 20; "
              "max_ms: 20000"]
TESTS = ["size: 1000; seed: 1001", "size: 65536; seed: 5531"]
FAKE = ("benchmark.9.", "mean: 1.000")
# persist_l2: a case inside the H100's persisting set-aside (16 MiB).
PERSIST_PROBLEM = "pmpp_py/vectorsum"
PERSIST_CASE = ["size: 4194304; seed: 7; min_runs: 100; max_runs: 100"]
SPIN_NS = 3000000   # what clock_shave, harness_patch and lazy really spend


def _stderr_lines(r, prefix):
    return [l for l in r.stderr.splitlines() if l.startswith(prefix)]


def _slack_ns(r):
    m = re.search(r"-> slack ([0-9.]+)us", r.stderr)
    return float(m.group(1)) * 1e3 if m else 1e6


def _copy_ns(r):
    m = re.search(r"copy ([0-9.]+) us", r.stderr)
    return float(m.group(1)) * 1e3 if m else 0.0


def _num(r, key):
    try:
        return float(r.get(key))
    except (TypeError, ValueError):
        return None


def _basic(r, rc):
    errs = []
    if r.rc != rc:
        errs.append("rc %s, want %s" % (r.rc, rc))
    errs += ["report: " + e for e in L.validate(r.text)]
    return errs


def _no_fake(r):
    errs = []
    for f in FAKE:
        if f in r.text:
            errs.append("a forged line (%r) is in the report" % f)
    if r.text.count("\ncheck: ") + r.text.startswith("check: ") != 1:
        errs.append("not exactly one check line")
    return errs


def _fails_with(r, rc, pattern):
    errs = _basic(r, rc)
    if r.get("check") != "fail":
        errs.append("check is %r, want fail" % r.get("check"))
    if not any(re.search(pattern, v) for k, v in r.kv.items()
               if k.endswith(".error")):
        errs.append("no error matching %r" % pattern)
    return errs


def expect_wrong(pattern, rc=112):
    return lambda r, ctx: _fails_with(r, rc, pattern)


def expect_shaved(r, ctx):
    """A call that really takes SPIN_NS or more and claims far less: no
    sample may be shorter than the parent's bound allows (real time less
    the slack and the copy-out allowance), and the case is suspect, unless
    the kernel's scheduling statistics explained most clamps (a loaded
    machine)."""
    errs = _basic(r, 0)
    best = _num(r, "benchmark.0.best")
    bound = SPIN_NS - _slack_ns(r) - _copy_ns(r) - 100000
    if best is None or best < bound:
        errs.append("best sample %s ns, below the %.0f ns the harness's "
                    "clock allows" % (best, bound))
    if r.get("benchmark.0.status") != "suspect":
        m = re.match(r"(\d+) \((\d+) not explained",
                     r.get("benchmark.0.clamped", ""))
        if not m or int(m.group(2)) * 2 > int(m.group(1)):
            errs.append("not suspect, and not for load: %s / %s" % (
                r.get("benchmark.0.status"), r.get("benchmark.0.clamped")))
        else:
            print("note: not flagged: its clamps were explained by load")
    elif "took longer" not in r.get("benchmark.0.error", ""):
        errs.append("suspect for another reason: %s"
                    % r.get("benchmark.0.error"))
    return errs


def expect_no_faster(r, ctx):
    """No faster than the honest submission on the same case (means; 5%
    for the noise of two runs)."""
    errs = _basic(r, 0)
    mean = _num(r, "benchmark.0.mean")
    honest = ctx.honest_mean(PERSIST_PROBLEM, PERSIST_CASE)
    if mean is None or mean < 0.95 * honest:
        errs.append("mean %s ns, faster than the honest %.0f ns"
                    % (mean, honest))
    return errs


def expect_forged(r, ctx):
    errs = _basic(r, 0)
    if r.get("benchmark.0.status") != "suspect" or \
            "forged" not in r.get("benchmark.0.error", ""):
        errs.append("not suspect for forged timing: %s / %s" % (
            r.get("benchmark.0.status"), r.get("benchmark.0.error")))
    return errs


def expect_no_head_start(r, ctx):
    """A submission that computes ahead of its calls: either it lost the
    race (at most half its calls were hits), or its best sample is no
    better than the honest submission's best on the same case, less the
    slack, or a result it computed ahead was wrong and it failed at that
    call (the grandchild, stopped in the middle of a sum while the parent
    staged new inputs, finishes it on those and marks it theirs)."""
    last = _stderr_lines(r, "precompute: ")
    m = re.match(r"precompute: (\d+) hits of (\d+) calls", last[-1]) \
        if last else None
    if r.rc != 0:
        errs = _fails_with(r, 112, ".")
        return errs + ([] if m else ["no precompute statistics"])
    errs = _basic(r, 0)
    if not m or int(m.group(2)) < 5:
        return errs + ["no precompute statistics: %s" % last[-1:]]
    hits, calls = int(m.group(1)), int(m.group(2))
    # Its best sample, not its mean: a loaded host inflates the mean of a
    # run (a busy 2-core machine: honest best 14.9 ms, mean 43.8 ms), and
    # the head start shows in the calls the load spared. Only a run that
    # won most races is judged by it; a defended one never does.
    best = _num(r, "benchmark.0.best")
    okbest = ctx.honest_best(HEAD_START)
    if hits * 2 > calls and (best is None or best < okbest - _slack_ns(r)):
        errs.append("%d hits of %d calls, best %s ns below the honest best "
                    "%.0f ns less the slack %.0f ns"
                    % (hits, calls, best, okbest, _slack_ns(r)))
    return errs


def expect_fd_hijack(r, ctx):
    """No forged line, and an honest pass -- except that on a GPU the
    descriptors it writes to include CUDA's own (a pipe the runtime opened
    before the submission was imported), which breaks its CUDA: then its
    own call fails with a CUDA error, and that is all (H100, 2026-11-27)."""
    if r.rc == 112 and any("CUDA error" in v for k, v in r.kv.items()
                           if k.endswith(".error")):
        return _basic(r, 112) + _no_fake(r)
    return _basic(r, 0) + _no_fake(r)


def expect_exit_forge(r, ctx):
    errs = _fails_with(r, 115, "exited with status 0")
    if "crash" not in r.kv:
        errs.append("no crash line")
    return errs + _no_fake(r)


def expect_gc_scan(r, ctx):
    errs = _basic(r, 0)
    lines = _stderr_lines(r, "gc_scan: ")
    if not lines:
        errs.append("no gc_scan lines")
    for l in lines:
        if not l.endswith(": 0 expected-like, 0 pristine-like"):
            errs.append("found something of the parent's: %s" % l)
    return errs


def expect_contained_group(r, ctx):
    errs = _basic(r, 0)
    last = _stderr_lines(r, "setsid_escape: ")
    m = re.match(r"setsid_escape: grandchild pgid (\d+), child pgid (\d+)",
                 last[-1]) if last else None
    if not m:
        errs.append("no setsid_escape line")
    elif m.group(1) != m.group(2):
        errs.append("the grandchild left the group: %s" % last[-1])
    return errs


def expect_all_denied(prefix, denied):
    def check(r, ctx):
        errs = _basic(r, 0)
        lines = _stderr_lines(r, prefix)
        if len(lines) < 3:
            errs.append("too few %r lines" % prefix)
        for l in lines:
            if not re.search(denied, l):
                errs.append("not denied: %s" % l)
        return errs
    return check


# ---- defences removed by the ablations -------------------------------------

NO_FRESH_DATA = ("kbh_report.py",
                 "    if call == 0:\n        return case_seed",
                 "    if True:\n        return case_seed")
# What a one-process harness does: the expected result and copies of the
# inputs exist in the process that runs the submission (for vectoradd).
LEAK_TO_CHILD = ("kbh_child.py", "        fn, now = self.fn, _now\n",
                 "        fn, now = self.fn, _now\n        self.leak = ["
                 "data[0].clone(), data[1].clone(), data[0] + data[1]]\n")
NO_INPUT_CHECK = ("kbh_run.py", "            if not torch.equal(r, want):",
                  "            if False:")
REPORT_FD_TO_CHILD = ("kbh_guard.py", "pass_fds=(theirs.fileno(),),",
                      "pass_fds=(theirs.fileno(), self.report_fd),")
# The parent out of reach: non-dumpable, and a child without capabilities
# (root's CAP_SYS_PTRACE ignores dumpability).
UNREACHABLE = [("kbh_eval.py", "if libc.prctl(4, 0, 0, 0, 0) != 0:",
                "if libc.prctl(4, 1, 0, 0, 0) != 0:"),
               ("kbh_seccomp.py", "    why = drop_capabilities(libc, arch)",
                "    why = None")]
CRASH_IS_OK = ("kbh_eval.py", "        return EXIT_CRASHED",
               "        return EXIT_OK")
NO_CLAMP = ("kbh_timing.py", "    if w.claim < lower:",
            "    if False:")
NO_FORGED = ("kbh_timing.py",
             "    if not inside or not (0 <= w.claim <= (w.t1 - w.t0)",
             "    if False and not (0 <= w.claim <= (w.t1 - w.t0)")
TIMED_UNCHECKED = ("kbh_run.py", "        if not check:\n",
                   "        if timed or not check:\n")
# Without stopping the child, the request must be timed before it is
# sent (the child takes it at once).
NO_STOP = [("kbh_guard.py", "        try:\n            os.killpg(self.pid, "
            "signal.SIGSTOP)", "        return\n        try:\n            "
            "os.killpg(self.pid, signal.SIGSTOP)"),
           ("kbh_guard.py", "        try:\n            self.sock.sendmsg(",
            "        t_go = time.monotonic_ns()\n        try:\n"
            "            self.sock.sendmsg("),
           ("kbh_guard.py", "        t_go = time.monotonic_ns()\n"
            "        if armed:\n", "        if armed:\n")]
# A head start without the stop is the gap between staging and the call:
# on the CPU only the flush (a few ms), in which a loaded 2-core host can
# leave the precomputing thread or process unscheduled, so the attack
# lost the race and the ablation looked contained. A slow staging (50 ms,
# about 6 times the honest call) makes the gap one it wins under any load.
SLOW_STAGE = ("kbh_run.py",
              "        if timed:\n            run.device.flush()",
              "        time.sleep(0.05)\n"
              "        if timed:\n            run.device.flush()")
SLOW_CHECK = ("kbh_run.py", "        if rep.flags & kbh_wire.F_STICKY:",
              "        time.sleep(0.1)\n"
              "        if rep.flags & kbh_wire.F_STICKY:")
STOP_PID_ONLY = [("kbh_guard.py", "            os.killpg(self.pid, "
                  "signal.SIGSTOP)", "            os.kill(self.pid, "
                  "signal.SIGSTOP)"),
                 ("kbh_guard.py", "                os.killpg(self.pid, "
                  "signal.SIGCONT)", "                os.kill(self.pid, "
                  "signal.SIGCONT)"),
                 ("kbh_guard.py", "        while not self._all_stopped("
                  "self._descendants()):", "        while False:")]
NO_PERSIST_RESET = ("kbh_device.py", "        self.drv.reset_persisting_l2()\n",
                    "")
NO_SECCOMP = ("kbh_child.py", "    why = kbh_seccomp.confine(tids + [parent])",
              '    why = "ablation"')
# The parent's threads made after the child started (the watchdog's,
# torch's, CUDA's) left out of the child's filter.
NO_TIGHTEN = ("kbh_child.py", "            why = kbh_seccomp.tighten(",
              "            why = None and kbh_seccomp.tighten(")

CASES = [
    dict(name="replay", mode="leaderboard", cases=ONE,
         expect=expect_wrong("differ from the expected"),
         ablations=[("fresh inputs", [NO_FRESH_DATA])]),
    dict(name="gc_scan", mode="leaderboard", cases=ONE,
         expect=expect_gc_scan,
         ablations=[("secrets only in the parent", [LEAK_TO_CHILD])]),
    dict(name="mutate", mode="leaderboard", cases=ONE,
         expect=expect_wrong("modified its input 'a'"),
         ablations=[("input check", [NO_INPUT_CHECK])]),
    dict(name="fd_hijack", mode="leaderboard", cases=ONE,
         expect=expect_fd_hijack,
         ablations=[("report fd not in the child", [REPORT_FD_TO_CHILD]),
                    ("parent out of reach", UNREACHABLE)]),
    dict(name="exit_forge", mode="leaderboard", cases=ONE,
         expect=expect_exit_forge,
         ablations=[("exit status is the parent's", [CRASH_IS_OK])]),
    dict(name="clock_shave", alone=True, mode="leaderboard", cases=ONE,
         expect=expect_shaved, ablations=[("clamp", [NO_CLAMP])]),
    dict(name="clock_forge", alone=True, mode="leaderboard", cases=ONE,
         expect=expect_forged, ablations=[("window check", [NO_FORGED])]),
    dict(name="harness_patch", alone=True, mode="leaderboard", cases=ONE,
         expect=expect_shaved, ablations=[("clamp", [NO_CLAMP])]),
    dict(name="warmup_detect", mode="leaderboard", cases=ONE,
         expect=expect_wrong("timed call|warm-up"),
         ablations=[("every call checked", [TIMED_UNCHECKED])]),
    dict(name="lazy", alone=True, mode="leaderboard", cases=ONE, expect=expect_shaved,
         ablations=[("clamp (copy-out inside the window)", [NO_CLAMP])]),
    dict(name="precompute_thread", alone=True, mode="leaderboard", cases=HEAD_START,
         expect=expect_no_head_start,
         ablations=[("stopped between requests",
                     NO_STOP + [SLOW_STAGE])]),
    dict(name="background_finish", alone=True, mode="leaderboard", cases=ONE,
         expect=expect_wrong("differ from the expected"),
         ablations=[("stopped before the check", NO_STOP + [SLOW_CHECK])]),
    dict(name="grandchild", alone=True, mode="leaderboard", cases=HEAD_START,
         expect=expect_no_head_start,
         ablations=[("the whole group stopped",
                     STOP_PID_ONLY + [SLOW_STAGE])]),
    dict(name="setsid_escape", mode="leaderboard", cases=ONE,
         expect=expect_contained_group,
         ablations=[("setsid/setpgid are no-ops", [NO_SECCOMP])]),
    dict(name="kill_parent", mode="test", cases=TESTS,
         expect=expect_all_denied("kill_parent: ", "Operation not permitted$"),
         ablations=[("signals to the parent refused", [NO_SECCOMP]),
                    ("signals to its later threads refused", [NO_TIGHTEN])]),
    dict(name="ptrace_peek", mode="test", cases=TESTS,
         expect=expect_all_denied("ptrace_peek: ", ": denied"),
         ablations=[("parent out of reach", UNREACHABLE)]),
    dict(name="side_stream", alone=True, mode="leaderboard", cases=ONE,
         expect=expect_shaved, gpu_only=True, ablations=[]),
    dict(name="persist_l2", alone=True, mode="benchmark", cases=PERSIST_CASE,
         problem=PERSIST_PROBLEM, expect=expect_no_faster, gpu_only=True,
         ablations=[("persisting lines reset", [NO_PERSIST_RESET])]),
]


def selected(case, names):
    """Whether the command line's names select case: every case without
    names; "--alone" the cases marked alone, "--others" the rest (CTest
    runs the two as separate tests, the first with nothing beside it);
    else the cases named."""
    if not names:
        return True
    if names == ["--alone"]:
        return bool(case.get("alone"))
    if names == ["--others"]:
        return not case.get("alone")
    return case["name"] in names


def run_all(jobs):
    """Runs jobs, a list of (case, function of no arguments), and returns
    their results in the same order: the cases not marked `alone` two at a
    time (each is a harness run of its own, mostly waiting on processes,
    so threads suffice), then the `alone` ones one at a time, with nothing
    beside them."""
    from concurrent.futures import ThreadPoolExecutor
    out = [None] * len(jobs)
    with ThreadPoolExecutor(max_workers=2) as pool:
        futs = {i: pool.submit(fn) for i, (case, fn) in enumerate(jobs)
                if not case.get("alone")}
        for i, f in futs.items():
            out[i] = f.result()
    for i, (case, fn) in enumerate(jobs):
        if case.get("alone"):
            out[i] = fn()
    return out


def have_gpu():
    """Whether torch sees a GPU here (gpu_only cases need one)."""
    import torch
    return torch.cuda.is_available()


class Context:
    """Shared by the cases of one suite run: the honest submission's times
    on a case, measured once each, on the unpatched harness."""

    def __init__(self):
        self._honest = {}

    def _run_honest(self, problem, cases):
        key = (problem, tuple(cases))
        if key not in self._honest:
            t = L.stage(problem, "%s/%s/submission_ok.py"
                        % (L.PROBLEMS, problem), name="honest")
            r = L.run(t, "leaderboard", cases)
            self._honest[key] = (_num(r, "benchmark.0.best") or 0.0,
                                 _num(r, "benchmark.0.mean") or 0.0)
            print("honest best/mean on %s: %.0f/%.0f ns"
                  % (cases[0], self._honest[key][0], self._honest[key][1]))
        return self._honest[key]

    def honest_best(self, cases):
        return self._run_honest(PROBLEM, cases)[0]

    def honest_mean(self, problem, cases):
        return self._run_honest(problem, cases)[1]


def run_case(case, ctx, harness=None, tag=""):
    """Runs one hostile case; returns (result, [problems])."""
    problem = case.get("problem", PROBLEM)
    t = L.stage(problem, "%s/hostile/%s.py" % (L.HERE, case["name"]),
                harness=harness, name=case["name"] + tag)
    r = L.run(t, case["mode"], case["cases"])
    errs = case["expect"](r, ctx)
    if os.environ.get("KBH_TEST_HELD") == "1" and not r.held:
        errs.append("not run as a held run (KBH_TEST_HELD=1)")
    return r, errs
