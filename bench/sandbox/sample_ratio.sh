#!/usr/bin/env bash
# Does the sandbox slow an honest CPU submission down? A finer instrument
# than score_ratio.sh. A ranked CPU score is the mean of 20-40 calls whose
# times have a heavy tail (OpenMP wake-ups, the host's interrupts), so two
# identical runs' scores land several per cent apart and the sandbox's own
# effect drowns in that. Here the same eval.out (the problem's
# submission_ok.c with the current harness, patched to print every timed
# sample) runs REPS times in the worker's sandbox (kb-sandbox-exec:
# namespaces, new root, per-run uid, seccomp, cgroups) and REPS times as a
# plain child, alternating, in leaderboard mode with CAP_MS per case, and
# every timed sample is kept. Per benchmark case and side it pools the
# samples of all runs and prints the mean (what the score averages), the
# median and the 10 % trimmed mean, then the ratios sandboxed /
# unsandboxed, combined over the cases by geometric mean (as the task's
# ranking_by: geom), each with a 95 % bootstrap interval that resamples
# whole runs (samples of one run are not independent).
#
# usage: sample_ratio.sh [-x KB_SANDBOX_EXEC] [-r REPS] [-c CAP_MS] PROBLEM
#   PROBLEM          a CPU problem under problems/ (vectorsum_cpu, matmul_cpu)
#   KB_SANDBOX_EXEC  default build/tests/hostile/bench-sandbox/kb-sandbox-exec
#                    (dist/bin/kb-sandbox-exec from scripts/bundle.sh)
#   REPS             runs per side (default 6)
#   CAP_MS           leaderboard time cap per case (default 2000)
# Both sides get OMP_WAIT_POLICY=passive, as the worker gives CPU harness
# runs (worker/eval.c). Needs root (or user namespaces), like the worker.
# Exit status: 0 when every run passed its checks, 1 otherwise; the ratios
# are reported, not judged.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
X=$ROOT/build/tests/hostile/bench-sandbox/kb-sandbox-exec
REPS=6
CAP=2000
while getopts x:r:c: o; do
	case $o in
	x) X=$OPTARG ;;
	r) REPS=$OPTARG ;;
	c) CAP=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || { sed -n 2,27p "$0" >&2; exit 2; }
P=$1
[ -x "$X" ] || { echo "sample_ratio: no kb-sandbox-exec at $X" >&2; exit 2; }

# shellcheck source=../../tests/problems/harness_pair.sh
. "$ROOT/tests/problems/harness_pair.sh"
# shellcheck source=cap.sh
. "$ROOT/bench/sandbox/cap.sh"
W=$(mktemp -d "${TMPDIR:-/tmp}/kb-sample-ratio.XXXXXX")
trap '[ -n "${KEEP:-}" ] || rm -rf "$W"' EXIT
D=$W/run
harness_pair_stage "$ROOT" HEAD "$P" "$D" new
cap_problem "$D/problem.c" "$CAP"
harness_pair_build "$D"
chmod 0777 "$D" # the sandboxed run writes its report there as its own uid

run='OMP_WAIT_POLICY=passive POPCORN_FD=5 ./eval.out leaderboard cases.txt 5> rep.txt 2> samples.txt; echo "exit: $?" >> rep.txt'
for ((r = 0; r < REPS; r++)); do
	for iso in 1 0; do
		rm -f "$D/rep.txt" "$D/samples.txt"
		if [ $iso = 1 ]; then
			"$X" --timeout 600 "$D" /bin/sh -c "$run" > /dev/null 2>&1 || true
		else
			(cd "$D" && /bin/sh -c "$run") || true
		fi
		cp "$D/rep.txt" "$W/$iso.$r.rep" 2> /dev/null || : > "$W/$iso.$r.rep"
		cp "$D/samples.txt" "$W/$iso.$r.samples" 2> /dev/null || : > "$W/$iso.$r.samples"
	done
done

python3 - "$W" "$REPS" "$P" "$CAP" <<'PY'
import math, os, random, statistics, sys
w, reps, prob, cap = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
ok = True
# runs[side] = list of {case: [samples us]}
runs = {"1": [], "0": []}
for iso in ("1", "0"):
    for r in range(reps):
        rep = {}
        for l in open(os.path.join(w, f"{iso}.{r}.rep")):
            if ": " in l:
                k, v = l.rstrip("\n").split(": ", 1)
                rep[k] = v
        if rep.get("check") != "pass":
            print(f"run {r} {'sandboxed' if iso == '1' else 'unsandboxed'}: "
                  f"check {rep.get('check')}, exit {rep.get('exit')} "
                  "(no samples used)")
            ok = False
            continue
        s = {}
        for l in open(os.path.join(w, f"{iso}.{r}.samples")):
            f = l.split()
            if len(f) == 3 and f[0] == "sample":
                s.setdefault(int(f[1]), []).append(float(f[2]))
        flags = [rep.get(f"benchmark.{i}.status", "") for i in range(len(s))]
        # by call parity mod 3 too: calls rotate through up to 3 work
        # slots, so a slot whose pages sit badly shows up as one column
        print(f"run {r} {'sandboxed  ' if iso == '1' else 'unsandboxed'} "
              + "  ".join(f"b{i} n {len(v):4d} mean {statistics.fmean(v):8.1f}"
                          f" med {statistics.median(v):8.1f} ["
                          + "/".join(f"{statistics.median(v[k::3]):.0f}"
                                     for k in range(3)) + "]"
                          for i, v in sorted(s.items()))
              + ("  " + " ".join(x for x in flags if x) if any(flags) else ""))
        runs[iso].append(s)
if not runs["1"] or not runs["0"]:
    sys.exit(1)
cases = sorted(set.intersection(*(set(x) for x in runs["1"] + runs["0"])))

def trimmed(v, f=0.10):
    v = sorted(v)
    k = int(len(v) * f)
    return statistics.fmean(v[k:len(v) - k] if len(v) > 2 * k else v)

stats = {"mean": statistics.fmean, "median": statistics.median, "trim10": trimmed}

def pooled(side_runs, case):
    return [x for run in side_runs for x in run[case]]

def geo_ratio(a_runs, b_runs, fn):
    return math.exp(statistics.fmean(
        math.log(fn(pooled(a_runs, c)) / fn(pooled(b_runs, c))) for c in cases))

print(f"\n{prob}: {len(runs['1'])} sandboxed / {len(runs['0'])} unsandboxed "
      f"runs, leaderboard cap {cap} ms per case; pooled timed samples (us)")
print(f"{'case':<5} {'n sb/un':>11} " + " ".join(
    f"{s + ' sb':>10} {s + ' un':>10} {'ratio':>7}" for s in stats))
for c in cases:
    a, b = pooled(runs["1"], c), pooled(runs["0"], c)
    print(f"b{c:<4} {len(a):5d}/{len(b):<5d} " + " ".join(
        f"{fn(a):10.1f} {fn(b):10.1f} {fn(a) / fn(b):7.4f}" for fn in stats.values()))
rng = random.Random(1)
for name, fn in stats.items():
    point = geo_ratio(runs["1"], runs["0"], fn)
    boot = sorted(
        geo_ratio([rng.choice(runs["1"]) for _ in runs["1"]],
                  [rng.choice(runs["0"]) for _ in runs["0"]], fn)
        for _ in range(400))
    lo, hi = boot[int(0.025 * len(boot))], boot[int(0.975 * len(boot)) - 1]
    print(f"geomean ratio sandboxed/unsandboxed of the {name:<6}: {point:.4f} "
          f"(95% bootstrap over runs {lo:.4f} .. {hi:.4f})")
sys.exit(0 if ok else 1)
PY
