"""eval-summary.py JSON RC: one line of a `kb-worker eval --json` result:

    verdict score gbps build_s harness_s error

for the GPU scripts' tables (gpu-smoke.sh, gpu-upstream.sh). score is the
ranked score, or "(geomean of the benchmark means)" in parentheses when
the run has none, or "-"; error has its spaces replaced by "_"."""
import json
import math
import re
import sys


def natural(key):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", key)]


def main(path, rc):
    try:
        r = json.load(open(path))
    except Exception as e:
        print("no-json(rc=%s) - - - - %s"
              % (rc, str(e)[:40].replace(" ", "_")))
        return
    verdict = str(r.get("verdict", "?")).replace("VERDICT_", "").lower()
    runs = r.get("runs", []) or []
    pick = None
    for key in ("leaderboard", "benchmark", "profile", "test"):
        pick = next((run for run in runs if run.get("key") == key), None)
        if pick:
            break
    res = (pick or {}).get("result", {}) or {}
    if isinstance(res, list):  # [{"key":..,"value":..}] form
        res = {kv.get("key"): kv.get("value") for kv in res}
    gb = [res[k] for k in sorted(res, key=natural)
          if re.fullmatch(r"benchmark\.\d+\.gbps", k)]
    gbps = "/".join(str(int(float(v) + 0.5)) for v in gb) or "-"
    if r.get("has_score"):
        score = "%.6g" % float(r.get("score", 0))
    else:
        means = [float(v) for k, v in res.items()
                 if re.fullmatch(r"benchmark\.\d+\.mean", k)]
        score = ("(%.6g)" % math.exp(sum(math.log(m / 1e9) for m in means)
                                     / len(means))) if means else "-"
    err = (r.get("error") or "-").replace(" ", "_")[:60]
    print(verdict, score, gbps, "%.1f" % float(r.get("build_s", 0) or 0),
          "%.1f" % float(r.get("harness_s", 0) or 0), err)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
