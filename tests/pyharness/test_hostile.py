"""The Python harness's hostile suite on the CPU: every submission in
hostile/ (but those marked gpu-only) must be contained as hostile_cases.py
says. Run by CTest (pyharness_hostile; pyharness_hostile_held: the same
with KBH_TEST_HELD=1, the harness started by worker/run/ready.py before its
job as the worker starts a Python job's first run); `test_hostile.py
NAME...` runs some."""
import sys

import hostile_cases as H
import pyh_lib as L


def main(names):
    c = L.Checker()
    ctx = H.Context()
    gpu = H.have_gpu()
    jobs = []
    for case in H.CASES:
        if not H.selected(case, names):
            continue
        if case.get("gpu_only") and not gpu:
            print("skipped (no GPU): %s" % case["name"])
            continue
        jobs.append((case, lambda case=case: H.run_case(case, ctx)))
    for (case, _), (r, errs) in zip(jobs, H.run_all(jobs)):
        c.ok(not errs, "%s: %s" % (case["name"], "; ".join(errs)), r)
        if not errs:
            print("ok: %s" % case["name"])
    c.done("pyharness hostile")


if __name__ == "__main__":
    main(sys.argv[1:])
