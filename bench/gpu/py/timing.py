"""On a GPU host: the Python harness's timing with and without the
sentinel (issue 29; kbh_sentinel.py). For each problem, leaderboard runs of
its honest example (spread over RUNS runs), and on vectoradd the claim
attacks (claim_scale.py: every claim x 0.6; claim_shift.py: 30 us less),
each with the sentinel
(KBH_SENTINEL=1) and with the slack rule alone (the default).
VARIANTS (environment) picks the variants: sent (KBH_SENTINEL=1), slack,
sent-spin (the armed handshake: KBH_SENT_SPIN=1),
sent-lN (the hold released N us after "started" at most), sent-wN
(N us after an empty call's p90 "started", if not started).
Prints per run each benchmark's mean, the sentinel's measured and claimed
medians, host-path and outside counts, status; then system.sentinel.

    cd tests/pyharness && KB_PYTHON=python3 python3 \\
        ../../bench/gpu/py/timing.py [RUNS] [PROBLEM...]
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "tests", "pyharness"))
import pyh_lib as L  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
# sent: KBH_SENTINEL=1; slack: the default; sent-spin: the armed
# handshake (KBH_SENT_SPIN=1); sent-lN: the hold released
# N us after "started" at most (KBH_SENT_LAUNCH_US); sent-wN: N us after
# an empty call's p90 "started" (KBH_SENT_WAKE_US)
VARIANTS = os.environ.get("VARIANTS", "sent slack").split()


def variant_env(v):
    """The harness's environment for a variant."""
    if v == "slack":
        return {}
    env = {"KBH_SENTINEL": "1"}
    if v == "sent-spin":
        env["KBH_SENT_SPIN"] = "1"
    elif v.startswith("sent-l"):
        env["KBH_SENT_LAUNCH_US"] = v[6:]
    elif v.startswith("sent-w"):
        env["KBH_SENT_WAKE_US"] = v[6:]
    return env


def row(what, r, nb):
    cols = []
    for i in range(nb):
        g = lambda k: r.get("benchmark.%d.%s" % (i, k))  # noqa: E731
        def us(k):
            v = g(k)
            return "%.2f" % (float(v) / 1e3) if v else "-"
        cols.append("[mean %s meas %s claim %s runs %s host %s out %s "
                    "low %s %s]" % (
            us("mean"), us("measured_ns"), us("claim_ns"), g("runs"),
            g("host_path") or "-", g("outside") or "-",
            g("low_claims") or "-", g("status")))
    print("%-34s rc=%s %s" % (what, r.rc, " ".join(cols)))
    sys.stdout.flush()


def main(argv):
    runs = int(argv[1]) if len(argv) > 1 else 3
    probs = argv[2:] or ["vectoradd", "vectorsum", "grayscale", "matmul"]
    for p in probs:
        pd = "pmpp_py/" + p
        subs = [("ok", os.path.join(L.PROBLEMS, pd, "submission_ok.py"))]
        if p == "vectoradd":
            subs.append(("claim0.6", os.path.join(HERE, "claim_scale.py")))
            subs.append(("claim-30us", os.path.join(HERE, "claim_shift.py")))
        for name, path in subs:
            t = L.stage(pd, path, name=name)
            cache = os.path.join(os.path.dirname(t.dir), "cache")
            L.compile_step(t, cache, timeout=300)
            nb = len(t.yml["benchmarks"])
            cases = t.cases("benchmarks", "")
            for k in range(runs):
                for variant in VARIANTS:
                    env = variant_env(variant)
                    if os.environ.get("KBH_SENT_LOG"):
                        env["KBH_SENT_LOG"] = os.environ["KBH_SENT_LOG"]
                    t0 = time.monotonic()
                    r = L.run(t, "leaderboard", cases, env=env, cache=cache)
                    row("%s %s %s #%d %.0fs" % (p, name, variant, k,
                                               time.monotonic() - t0),
                        r, nb)
                    if r.rc != 0 or (k == 0 and name == "ok"):
                        print("--- report\n%s\n--- output tail\n%s" % (
                            "\n".join(x for x in r.text.splitlines()
                                      if x.startswith("system.")
                                      or "error" in x),
                            r.stderr[-4000:]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
