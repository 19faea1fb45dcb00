"""On a GPU host: every example of every Python problem in every mode, the
upstream compile step first, as the worker runs them (pyh_lib), and a table
of the results; then the hostile suite, GPU-only cases included. Not run by
CTest (CI has no GPU).

    cd tests/pyharness
    KB_PYTHON=python3 python3 gpu_run.py problems [vectoradd|vectorsum]
    KB_PYTHON=python3 python3 gpu_run.py hostile [NAME...]

Prints FAIL lines and exits 1 on any unexpected result. One problem takes
about five minutes on an H100 (21 runs), the hostile suite about four."""
import os
import sys

import hostile_cases as H
import pyh_lib as L

EXAMPLES = (("submission_ok.py", 0), ("submission_triton.py", 0),
            ("submission_inline.py", 0), ("template.py", 0),
            ("submission_wrong.py", 112))
MODES = (("test", None), ("benchmark", None), ("leaderboard", None),
         ("leaderboard", L.SECRET), ("profile", None))


def problems(c, names):
    rows = []
    for p in ("pmpp_py/vectoradd", "pmpp_py/vectorsum"):
        if names and os.path.basename(p) not in names:
            continue
        for name, rc in EXAMPLES:
            t = L.stage(p, os.path.join(L.PROBLEMS, p, name),
                        name=name.split(".")[0])
            cache = os.path.join(os.path.dirname(t.dir), "cache")
            crc, out = L.compile_step(t, cache)
            c.eq(crc, 0, "%s %s compile step" % (p, name), out[-3000:])
            for mode, secret in MODES:
                if name == "template.py" and mode != "test":
                    continue
                cases = t.cases("tests" if mode == "test" else "benchmarks")
                r = L.run(t, mode, cases, secret=secret, cache=cache)
                what = "%s %s %s%s" % (p, name, mode,
                                       " (secret)" if secret else "")
                c.eq(r.rc, rc, what + " rc", r)
                c.eq(L.validate(r.text), [], what + " report", r)
                means = [r.get("benchmark.%d.mean" % i, "-")
                         for i in range(len(t.yml["benchmarks"]))]
                stats = [r.get("benchmark.%d.status" % i, "-")
                         for i in range(len(t.yml["benchmarks"]))]
                if rc == 0 and mode != "test":
                    c.ok(all(s == "pass" for s in stats),
                         "%s statuses %s" % (what, stats), r)
                rows.append("%-20s %-22s %-20s rc=%-4s %s %s" % (
                    p, name, mode + ("+secret" if secret else ""), r.rc,
                    " ".join(means), " ".join(stats)))
                if mode == "leaderboard" and not secret and rc == 0:
                    print("--- %s\n%s" % (what, r.text))
    print("\n".join(rows))


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
