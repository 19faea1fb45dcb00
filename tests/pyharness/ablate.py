"""Evidence that each hostile test catches what it claims to: for every
ablation in hostile_cases.py, a copy of the harness with that defence
removed (a textual patch; each anchor must occur exactly once), the hostile
submission run against it, and its expectation must now FAIL (the attack
gets through). Run by CTest (pyharness_ablation); `ablate.py NAME...`
runs some."""
import os
import shutil
import sys

import hostile_cases as H
import pyh_lib as L


# Exit codes of a harness that failed on its own (usage, device, report
# descriptor, cases, watchdog).
BROKEN = (2, 110, 111, 113, 114)


def patched_harness(name, patches):
    d = os.path.join(L.work_dir(), "harness." + name.replace(" ", "_"))
    if os.path.exists(d):
        shutil.rmtree(d)
    shutil.copytree(L.HARNESS, d)
    for f, old, new in patches:
        p = os.path.join(d, f)
        with open(p) as fh:
            s = fh.read()
        if s.count(old) != 1:
            raise SystemExit("ablation %r: the anchor occurs %d times in "
                             "%s:\n%s" % (name, s.count(old), f, old))
        with open(p, "w") as fh:
            fh.write(s.replace(old, new))
    return d


def attack(case, ctx, h):
    """The case against the ablated harness h: (result, errors)."""
    # Some attacks are races (a background thread against the staging):
    # a second try before calling them contained.
    for _ in range(2):
        r, errs = H.run_case(case, ctx, harness=h, tag=".ablated")
        if errs or r.rc in BROKEN:
            break
    return r, errs


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
        for what, patches in case["ablations"]:
            h = patched_harness("%s.%s" % (case["name"], what), patches)
            jobs.append((case, what,
                         lambda case=case, h=h: attack(case, ctx, h)))
    results = H.run_all([(case, fn) for case, _, fn in jobs])
    for (case, what, _), (r, errs) in zip(jobs, results):
        # The harness's own failures are no evidence of anything.
        if not c.ok(r.rc not in BROKEN, "%s without '%s': the ablated "
                    "harness failed (rc %s)" % (case["name"], what, r.rc),
                    r):
            continue
        c.ok(bool(errs), "%s without '%s': the attack was still "
             "contained" % (case["name"], what), r)
        if errs:
            print("ok: %s without '%s' gets through: %s"
                  % (case["name"], what, "; ".join(errs)[:300]))
    c.done("pyharness ablation")


if __name__ == "__main__":
    main(sys.argv[1:])
