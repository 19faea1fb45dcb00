"""The Python harness end to end on the CPU, staged and run as the worker
runs it (pyh_lib): the protocol (usage, report descriptor, cases, exit
codes), every example of every Python problem in every mode, the secret
seed and fresh inputs as the child sees them, where the submission is
imported, and how failures and crashes end. Run by CTest
(pyharness_e2e_protocol, pyharness_e2e_problems, pyharness_e2e_subs:
`test_e2e.py protocol|problems|subs`)."""
import os
import re
import sys

import pyh_lib as L

VA = "pmpp_py/vectoradd"
# Per problem: the error every failing case of submission_wrong.py must
# show; modes: the ok example's timed runs. The harness's own paths are
# covered in full by vectoradd and vectorsum (every mode, the wrong
# example ranked too); the others run what is theirs, to keep CI short:
# the tests, one ranked run with the secret seed (generation, reference,
# check and cost on every call), the template, and the wrong example,
# which must fail every test case (wrong_all).
FULL = (("leaderboard", None), ("leaderboard", L.SECRET),
        ("benchmark", None), ("profile", None))
RANKED = (("leaderboard", L.SECRET),)
DIFFER = "differ from the expected result"
PROBLEMS = {
    VA: dict(wrong=DIFFER, modes=FULL),
    "pmpp_py/vectorsum": dict(wrong="^sum .*, expected .*tolerance",
                              modes=FULL),
}
for _p in ("grayscale", "histogram", "prefixsum", "sort", "conv2d",
           "matmul", "rmsnorm", "grouped_gemm"):
    PROBLEMS["pmpp_py/" + _p] = dict(wrong=DIFFER, modes=RANKED,
                                     wrong_all=True)
SUBS = os.path.join(L.HERE, "subs")
# Timed modes on the real benchmark shapes (CPU-sized by the problem),
# with a short time cap per case to keep CI quick.
CAP = "max_ms: 800"
# The clamp rule's reason (kbh_run), the one timing flag an honest CPU
# run may get here.
CLAMP_FLAG = "took longer by the harness's clock than the submission's"


def example(problem, name):
    return os.path.join(L.PROBLEMS, problem, name)


def check_bench(c, r, n, what):
    c.eq(r.get("benchmark-count"), str(n), what + " benchmark-count", r)
    for i in range(n):
        get = lambda k: r.get("benchmark.%d.%s" % (i, k))  # noqa: E731
        try:
            runs, mean, best, worst, std = (float(get(k)) for k in
                                            ("runs", "mean", "best",
                                             "worst", "std"))
            sane = runs >= 2 and 0 < best <= mean <= worst and std >= 0
        except (TypeError, ValueError):
            sane = False
        c.ok(sane, "%s benchmark %d: runs/mean/best/worst/std %s" % (
            what, i, [get(k) for k in ("runs", "mean", "best", "worst",
                                       "std")]), r)
        for k in ("spec", "err", "stop", "warmup", "bytes", "gbps",
                  "floor_ns", "window_ns", "clamped"):
            c.ok(get(k) is not None, "%s benchmark %d: no %s" % (what, i, k),
                 r)
        # An honest run passes, except that the clamp rule may flag it on
        # a loaded or idling VM (a wake-up the run-queue waits do not
        # show): a judgment of timing, which the GPU runs and benchmarks
        # hold (tests/pyharness/gpu_run.py), not this test. Every other
        # reason (forged, below the floor) still fails it.
        clamp = get("status") == "suspect" and \
            CLAMP_FLAG in (get("error") or "")
        if clamp:
            print("note: %s benchmark %d flagged by the clamp rule on this "
                  "host: %s" % (what, i, get("error")))
        c.ok(get("status") == "pass" or clamp, "%s benchmark %d status %s "
             "(%s)" % (what, i, get("status"), get("error")), r)


def expect(c, r, rc, check, what):
    c.eq(r.rc, rc, what + " rc", r)
    c.eq(r.get("check"), check, what + " check", r)
    c.eq(L.validate(r.text), [], what + " report")


def fails_with(c, r, rc, pattern, what):
    expect(c, r, rc, "fail", what)
    errs = [v for k, v in r.kv.items() if k.endswith(".error")]
    c.ok(any(re.search(pattern, e) for e in errs),
         "%s: no error matching %r in %s" % (what, pattern, errs), r)


# ---- protocol ---------------------------------------------------------------

def protocol(c):
    t = L.stage(VA, example(VA, "submission_ok.py"), name="protocol")
    tests = t.cases("tests")[:2]
    r = L.run(t, None, tests, args=[])
    c.eq(r.rc, 2, "no arguments rc", r)
    r = L.run(t, None, tests, args=["fast", "cases.txt"])
    c.eq(r.rc, 2, "unknown mode rc", r)
    c.eq(L.run(t, "test", tests, fd=None).rc, 111, "no POPCORN_FD rc")
    r = L.run(t, "test", tests, fd=None, env={"POPCORN_FD": "57"})
    c.eq(r.rc, 111, "closed POPCORN_FD rc", r)
    r = L.run(t, "test", tests, fd=None, env={"POPCORN_FD": "abc"})
    c.eq(r.rc, 111, "non-numeric POPCORN_FD rc", r)
    for bad in ("size: abc; seed: 1", "size 10; seed: 1", "size: 0; seed: 1",
                "size: 10", "size: 10; seed: 1; color: red",
                "size: 10; size: 11; seed: 1", "size: 99999999999; seed: 1",
                "seed: 18446744073709551616; size: 1",
                "size: 10; seed: 1; min_runs: 50; max_runs: 2"):
        r = L.run(t, "leaderboard", [bad])
        c.eq(r.rc, 113, "bad case %r rc" % bad, r)
    c.eq(L.run(t, "test", [], cases_text="").rc, 113, "empty cases file rc")
    r = L.run(t, "test", [], args=["test", "no-such-file.txt"])
    c.eq(r.rc, 113, "missing cases file rc", r)
    r = L.run(t, "test", tests, secret="xyz")
    c.eq(r.rc, 113, "bad POPCORN_SEED rc", r)
    r = L.run(t, "test", [], cases_text="# comment\n\nsize: 5; seed: 9;\r\n"
              "  size: 6 ;seed:10\n")
    expect(c, r, 0, "pass", "tolerant cases file")
    c.eq(r.get("test-count"), "2", "tolerant cases test-count", r)
    c.ok(not os.path.exists(os.path.join(r.scratch, "cases.txt")),
         "KBH_CASES_UNLINK=1: the cases file is still there")
    c.ok("system.guard" in r.kv and "confined" in r.get("system.guard")
         and "NOT" not in r.get("system.guard"),
         "the child is not confined: %s" % r.get("system.guard"), r)
    r = L.run(t, "test", tests, env={"KBH_DEVICE": "cuda"})
    import torch
    if not torch.cuda.is_available():
        c.eq(r.rc, 110, "KBH_DEVICE=cuda without a GPU rc", r)


# ---- the problems' examples -------------------------------------------------

def problems(c, only=None):
    for p, want in PROBLEMS.items():
        if only is not None and (want["modes"] is FULL) != (only == "full"):
            continue
        t = L.stage(p, example(p, "submission_ok.py"), name="ok")
        n = len(t.yml["tests"])
        r = L.run(t, "test", t.cases("tests"))
        expect(c, r, 0, "pass", p + " ok test")
        c.eq(r.get("test-count"), str(n), p + " ok test-count", r)
        c.eq(len(re.findall(r"^test\.\d+\.status: pass$", r.text, re.M)), n,
             p + " ok test statuses", r)
        nb = len(t.yml["benchmarks"])
        for mode, secret in want["modes"]:
            what = "%s ok %s%s" % (p, mode, " (secret)" if secret else "")
            r = L.run(t, mode, t.cases("benchmarks", CAP), secret=secret)
            expect(c, r, 0, "pass", what)
            check_bench(c, r, nb, what)
            if mode == "profile":
                c.ok(r.get("benchmark.0.report"), what + ": no report", r)
        print("--- %s: leaderboard report of submission_ok.py\n%s"
              % (p, r.text))

        t = L.stage(p, example(p, "template.py"), name="template")
        expect(c, L.run(t, "test", t.cases("tests")), 0, "pass",
               p + " template test")
        t = L.stage(p, example(p, "submission_wrong.py"), name="wrong")
        r = L.run(t, "test", t.cases("tests"))
        fails_with(c, r, 112, want["wrong"], p + " wrong test")
        if want.get("wrong_all"):
            c.eq(len(re.findall(r"^test\.\d+\.status: fail$", r.text, re.M)),
                 n, p + " wrong: failed tests", r)
        if want["modes"] is FULL:
            fails_with(c, L.run(t, "leaderboard",
                                t.cases("benchmarks", CAP)),
                       112, want["wrong"], p + " wrong leaderboard")
        # The GPU examples cannot run here; they must at least compile.
        for name in ("submission_triton.py", "submission_inline.py"):
            with open(example(p, name)) as f:
                try:
                    compile(f.read(), name, "exec")
                    c.ok(True, "")
                except SyntaxError as e:
                    c.ok(False, "%s %s: %s" % (p, name, e))


# ---- submissions that fail, crash or watch ---------------------------------

def subs(c):
    def sub(name, mode="test", problem=VA, cases=None, **kw):
        t = L.stage(problem, os.path.join(SUBS, name + ".py"), name=name)
        if cases is None:
            cases = t.cases("tests")[:3] if mode == "test" else \
                t.cases("benchmarks", CAP)[:1]
        return L.run(t, mode, cases, **kw)

    fails_with(c, sub("raises"), 112,
               "^custom_kernel raised ValueError: deliberately broken$",
               "raises")
    for mode in ("test", "leaderboard"):
        r = sub("segfault", mode)
        fails_with(c, r, 115, "killed by signal 11", "segfault " + mode)
        c.ok("killed by signal 11" in r.get("crash", ""),
             "segfault %s: crash line %r" % (mode, r.get("crash")), r)
    fails_with(c, sub("exit_infra"), 115, "exited with status 110",
               "exit_infra")
    fails_with(c, sub("no_kernel"), 112, "defines no function custom_kernel",
               "no_kernel")
    fails_with(c, sub("import_error"), 112,
               "cannot load the submission: .*ModuleNotFoundError",
               "import_error")
    r = sub("import_crash")
    fails_with(c, r, 115, "exited with status 3 while importing",
               "import_crash")
    fails_with(c, sub("bad_shape"), 112, "has shape \\(126,\\), expected",
               "bad_shape")

    # The submission is imported by the child alone.
    r = sub("where")
    expect(c, r, 0, "pass", "where")
    m = re.search(r"parent=(\d+) child=(\d+)", r.stderr)
    w = re.findall(r"where: imported in pid (\d+) \(parent (\d+)\)", r.stderr)
    c.ok(m and w == [(m.group(2), m.group(1))],
         "where: imported in %s, harness %s" % (w, m and m.groups()), r)

    # Seeds as the child sees them: a case's first call replays from the
    # cases file; the secret seed changes it; later calls get fresh data
    # at alternating addresses.
    one = ["size: 65536; seed: 5531"]
    sums = []
    for secret in (None, None, L.SECRET):
        r = sub("checksum", "test", cases=one, secret=secret)
        expect(c, r, 0, "pass", "checksum test")
        sums.append(re.findall(r"checksum: (\S+)", r.stderr))
    c.ok(sums[0] == sums[1] and len(sums[0]) == 1,
         "test mode does not replay: %s" % sums)
    c.ok(sums[2] != sums[0], "the secret seed changed nothing: %s" % sums)
    r = sub("checksum", "leaderboard",
            cases=["size: 65536; seed: 5531; min_runs: 6; max_runs: 6"])
    expect(c, r, 0, "pass", "checksum leaderboard")
    seen = re.findall(r"checksum: (\S+) (\d+) (\d+)", r.stderr)
    c.ok(len(seen) >= 8 and len({s[0] for s in seen}) == len(seen),
         "inputs repeat between calls: %s" % seen)
    c.ok(seen and seen[0][0] == sums[0][0],
         "the first call is not the case seed's: %s vs %s" % (seen[:1], sums))
    c.ok(all(seen[i][1] != seen[i + 1][1] for i in range(len(seen) - 1)),
         "consecutive calls at the same address: %s" % seen)

    # The watchdog: exit 114 with the report so far; the child's group is
    # gone with it.
    r = sub("hang", problem=os.path.join(L.HERE, "slow"),
            cases=["size: 1000; seed: 1"], timeout=120)
    c.eq(r.rc, 114, "hang rc", r)
    c.ok("user-code: started" in r.text, "hang: report so far", r)
    m = re.search(r"child=(\d+)", r.stderr)
    c.ok(m and not alive(int(m.group(1))),
         "hang: the child outlived the watchdog", r)


def alive(pid):
    """Whether pid runs (a zombie waiting for its reaper does not)."""
    import time
    for _ in range(50):
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rpartition(")")[2].split()[0] in "ZX":
                    return False
        except OSError:
            return False
        time.sleep(0.1)
    return True


def problems_full(c):
    """vectoradd and vectorsum, every mode (timed runs: CTest runs this
    alone)."""
    problems(c, "full")


def problems_more(c):
    """The other problems: tests, one ranked run, template, wrong example;
    only their correctness is judged, which holds under any load."""
    problems(c, "more")


def main(which):
    c = L.Checker()
    for name in which or ("protocol", "problems", "subs"):
        globals()[name](c)
    c.done("pyharness e2e " + " ".join(which))


if __name__ == "__main__":
    main(sys.argv[1:])
