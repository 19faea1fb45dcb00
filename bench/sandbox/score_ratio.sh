#!/usr/bin/env bash
# Does the sandbox change an honest submission's score? Runs
# `kb-worker eval ... --mode leaderboard` on one submission REPS times with
# isolation (KB_SANDBOX_ISOLATE=1: namespaces, new root, per-run uid,
# seccomp, cgroup) and REPS times without (KB_SANDBOX_ISOLATE=0: the same
# worker, build, harness and cases, run as a plain child), alternating, and
# prints per run the ranked score and each benchmark's mean and best, then
# per quantity the median over the runs of each side and the ratio
# sandboxed / unsandboxed, and an A/A ratio (two halves of one side's runs)
# that shows how far identical runs land apart here. Target (issue 4): the
# score within 1 %.
#
# usage: score_ratio.sh [-w KB_WORKER] [-r REPS] [-g GPU] [-c CAP_MS]
#                       PROBLEM_DIR SUBMISSION
#   KB_WORKER  default: build/worker/kb-worker
#   GPU        --gpu of eval (default: the worker's default, CPU)
#   CAP_MS     (CPU problems in problems/<name>/ with a problem.c) run a
#              copy of the problem whose leaderboard time cap per case is
#              CAP_MS instead of the harness default (300 ms), so that each
#              score averages more calls; both sides run the same copy
# Exit status: 0 when every run passed, 1 otherwise (the ratio is reported,
# not judged: this machine decides how noisy it is).
set -eu
W=build/worker/kb-worker
REPS=5
GPU=
CAP=
while getopts w:r:g:c: o; do
	case $o in
	w) W=$OPTARG ;;
	r) REPS=$OPTARG ;;
	g) GPU=$OPTARG ;;
	c) CAP=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 2 ] || { sed -n 2,24p "$0" >&2; exit 2; }
PROB=$1
SUB=$2
# shellcheck source=cap.sh
. "$(dirname "$0")/cap.sh"
OUT=$(mktemp -d "${TMPDIR:-/tmp}/kb-score-ratio.XXXXXX")
trap 'rm -rf "$OUT"' EXIT

if [ -n "$CAP" ]; then
	# The copy keeps the problems/<name> + problems/harness layout that the
	# task's relative sources need.
	name=$(basename "$PROB")
	mkdir -p "$OUT/problems"
	cp -r "$PROB" "$OUT/problems/$name"
	cp -r "$PROB/../harness" "$OUT/problems/harness"
	cap_problem "$OUT/problems/$name/problem.c" "$CAP" || exit 2
	PROB=$OUT/problems/$name
fi

for ((r = 0; r < REPS; r++)); do
	for iso in 1 0; do
		KB_SANDBOX_ISOLATE=$iso "$W" eval "$PROB" "$SUB" --mode leaderboard \
			${GPU:+--gpu "$GPU"} --json > "$OUT/$iso.$r.json" 2> "$OUT/$iso.$r.err" || true
	done
done

python3 - "$OUT" "$REPS" "$PROB" <<'PY'
import json, os, statistics, sys
out, reps, prob = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ok = True
rows = {"1": [], "0": []}
for iso in ("1", "0"):
    for r in range(reps):
        path = os.path.join(out, f"{iso}.{r}.json")
        try:
            d = json.load(open(path))
        except (OSError, ValueError):
            print(f"run {r} isolate={iso}: no JSON (see the worker's stderr)")
            ok = False
            continue
        if d.get("verdict") != "VERDICT_PASSED" or not d.get("has_score"):
            print(f"run {r} isolate={iso}: {d.get('verdict')} {d.get('error')}")
            ok = False
            continue
        res = next((x["result"] for x in d["runs"] if x["key"] == "leaderboard"), {})
        q = {"score": d["score"] * 1e6}
        for i in range(int(res.get("benchmark-count", 0))):
            q[f"b{i}.mean"] = float(res[f"benchmark.{i}.mean"]) / 1e3
            q[f"b{i}.best"] = float(res[f"benchmark.{i}.best"]) / 1e3
        rows[iso].append(q)
        n = "/".join(res.get(f"benchmark.{i}.runs", "?")
                     for i in range(int(res.get("benchmark-count", 0))))
        print(f"run {r} {'sandboxed  ' if iso == '1' else 'unsandboxed'} "
              + "  ".join(f"{k} {v:.3f}" for k, v in q.items())
              + f"  calls {n}")
if not rows["1"] or not rows["0"]:
    sys.exit(1)
print(f"\n{prob}: medians over {len(rows['1'])} sandboxed / {len(rows['0'])} "
      "unsandboxed runs (us)")
print(f"{'quantity':<10} {'sandboxed':>12} {'unsandboxed':>12} {'ratio':>8}")
for k in rows["1"][0]:
    a = statistics.median(x[k] for x in rows["1"])
    b = statistics.median(x[k] for x in rows["0"])
    print(f"{k:<10} {a:12.3f} {b:12.3f} {a / b:8.4f}")
# The same comparison between two halves of one side (runs 0, 2, 4, ...
# against 1, 3, 5, ...): how far apart scores of identical runs land on
# this machine, i.e. the resolution of the ratio above.
for iso, name in (("1", "sandboxed"), ("0", "unsandboxed")):
    ev, od = rows[iso][0::2], rows[iso][1::2]
    if ev and od:
        a = statistics.median(x["score"] for x in ev)
        b = statistics.median(x["score"] for x in od)
        print(f"A/A {name}: score median of runs 0,2,.. / runs 1,3,.. "
              f"= {a:.3f} / {b:.3f} = {a / b:.4f}")
sys.exit(0 if ok else 1)
PY
