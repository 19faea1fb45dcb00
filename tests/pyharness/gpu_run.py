"""On a GPU host: every example of every Python problem in every mode, the
upstream compile step first, as the worker runs them (pyh_lib), and a table
of the results; then the hostile suite, GPU-only cases included. Not run by
CTest (CI has no GPU).

    cd tests/pyharness
    KB_PYTHON=python3 python3 gpu_run.py problems [--full] [NAME...]
    KB_PYTHON=python3 python3 gpu_run.py hostile [NAME...]

NAME: a directory of problems/pmpp_py (vectoradd, vectorsum, grayscale,
histogram, prefixsum, sort, conv2d, matmul, rmsnorm, grouped_gemm); none:
all of them. Each problem's examples run in test, benchmark, leaderboard,
leaderboard with a secret seed and profile mode (the template in test
mode only); the timed modes stop each case after CAP_MS of sampling
unless --full gives the task's own limits (the sample counts the ranked
scores use). One problem takes three to five minutes on an H100, most of
it the interpreter's start-up and the inline example's build; --full adds
about two.

Prints a line per run (example, mode, exit code and the one expected, each
benchmark's mean and the physical floor in us, achieved GB/s or TFLOP/s,
status) and FAIL lines with the report for anything unexpected; exits 1 on
any. The hostile suite takes about four minutes."""
import os
import sys
import time

import hostile_cases as H
import pyh_lib as L

ALL = ("vectoradd", "vectorsum", "grayscale", "histogram", "prefixsum",
       "sort", "conv2d", "matmul", "rmsnorm", "grouped_gemm")
EXAMPLES = (("submission_ok.py", 0), ("submission_triton.py", 0),
            ("submission_inline.py", 0), ("template.py", 0),
            ("submission_wrong.py", 112))
MODES = (("test", None), ("benchmark", None), ("leaderboard", None),
         ("leaderboard", L.SECRET), ("profile", None))
CAP_MS = 1000


def bench_cols(r, n):
    """One benchmark's figures: mean/floor in us, rate, status."""
    out = []
    for i in range(n):
        g = lambda k: r.get("benchmark.%d.%s" % (i, k))  # noqa: E731
        try:
            mean = "%.1f" % (float(g("mean")) / 1e3)
        except (TypeError, ValueError):
            mean = "-"
        floor = g("floor_ns")
        floor = "%.1f" % (float(floor) / 1e3) if floor else "-"
        rate = ("%.0fGB/s" % float(g("gbps"))) if g("gbps") else ""
        if g("gflops"):
            rate += " %.0fTF/s" % (float(g("gflops")) / 1e3)
        out.append("[%s us floor %s %s %s]" % (mean, floor, rate.strip(),
                                             g("status") or "-"))
    return " ".join(out)


def problem(c, p, full, rows):
    t_start = time.monotonic()
    for name, rc in EXAMPLES:
        t = L.stage(p, os.path.join(L.PROBLEMS, p, name),
                    name=name.split(".")[0])
        cache = os.path.join(os.path.dirname(t.dir), "cache")
        t0 = time.monotonic()
        crc, out = L.compile_step(t, cache, timeout=300)
        c.eq(crc, 0, "%s %s compile step" % (p, name), out[-3000:])
        rows.append("%-22s %-22s %-18s rc=%-3s %5.1fs" % (
            p, name, "compile", crc, time.monotonic() - t0))
        nb = len(t.yml["benchmarks"])
        for mode, secret in MODES:
            if name == "template.py" and mode != "test":
                continue
            extra = "" if full or mode == "test" else "max_ms: %d" % CAP_MS
            cases = t.cases("tests" if mode == "test" else "benchmarks",
                            extra)
            t0 = time.monotonic()
            r = L.run(t, mode, cases, secret=secret, cache=cache)
            what = "%s %s %s%s" % (p, name, mode,
                                   " (secret)" if secret else "")
            c.eq(r.rc, rc, what + " rc", r)
            c.eq(L.validate(r.text), [], what + " report", r)
            if rc == 0 and mode != "test":
                stats = [r.get("benchmark.%d.status" % i)
                         for i in range(nb)]
                c.ok(all(s == "pass" for s in stats),
                     "%s statuses %s" % (what, stats), r)
            rows.append("%-22s %-22s %-18s rc=%-3s(want %d) %5.1fs %s" % (
                p, name, mode + ("+secret" if secret else ""), r.rc, rc,
                time.monotonic() - t0,
                bench_cols(r, nb) if mode != "test" else
                "tests: %s" % r.get("check")))
            print(rows[-1])
            sys.stdout.flush()
            if mode == "leaderboard" and not secret and rc == 0 and \
                    name == "submission_ok.py":
                print("--- %s\n%s" % (what, r.text))
    rows.append("%-22s took %.0f s" % (p, time.monotonic() - t_start))
    print(rows[-1])


def problems(c, argv):
    full = "--full" in argv
    names = [a for a in argv if a != "--full"]
    for n in names:
        if n not in ALL:
            sys.exit("unknown problem %r (one of %s)" % (n, ", ".join(ALL)))
    rows = []
    for n in names or ALL:
        problem(c, "pmpp_py/" + n, full, rows)
    print("\n=== summary (times in us; floor: the physical floor of the "
          "declared work)\n" + "\n".join(rows))


def hostile(c, names):
    ctx = H.Context()
    for case in H.CASES:
        if names and case["name"] not in names:
            continue
        r, errs = H.run_case(case, ctx)
        c.ok(not errs, "%s: %s" % (case["name"], "; ".join(errs)), r)
        print("%-18s %s rc=%s %s" % (case["name"],
                                     "ok  " if not errs else "FAIL",
                                     r.rc, r.get("benchmark.0.status", "")))


def main(argv):
    c = L.Checker()
    if not argv or argv[0] not in ("problems", "hostile"):
        sys.exit(__doc__)
    {"problems": problems, "hostile": hostile}[argv[0]](c, argv[1:])
    c.done("pyharness gpu " + " ".join(argv))


if __name__ == "__main__":
    main(sys.argv[1:])
