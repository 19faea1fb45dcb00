#!/usr/bin/env bash
# How reproducible is a CPU problem's score from one run to the next, with
# and without fresh physical pages for every call's work slot? The CPU
# harness gives each call's slot new pages (problems/harness/harness_cpu.c,
# kbh__replace); built with -DKBH_KEEP_PAGES it keeps the pages a slot got
# at the start of the case, as it did before. With kept pages a run's
# few slots keep one physical placement for all their calls, and where the
# kernel is sensitive to it (matmul_cpu's power-of-two rows meet the
# physically indexed caches) whole runs land high or low together.
#
# Builds PROBLEM's submission_ok.c both ways (harness of the working tree,
# patched to print every timed sample), runs each REPS times in
# leaderboard mode with CAP_MS per case, alternating, as plain processes
# with OMP_WAIT_POLICY=passive (as the worker runs them), and prints per
# run each case's mean and median, then per variant and case the spread
# of the run means and run medians across runs (coefficient of variation,
# and max/min). Measures; does not judge.
#
# usage: bench/cpu/placement.sh [-r REPS] [-c CAP_MS] PROBLEM
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
REPS=6
CAP=1000
while getopts r:c: o; do
	case $o in
	r) REPS=$OPTARG ;;
	c) CAP=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || { sed -n 2,19p "$0" >&2; exit 2; }
P=$1
# shellcheck source=../../tests/problems/harness_pair.sh
. "$ROOT/tests/problems/harness_pair.sh"
# shellcheck source=../sandbox/cap.sh
. "$ROOT/bench/sandbox/cap.sh"
W=$(mktemp -d "${TMPDIR:-/tmp}/kb-placement.XXXXXX")
trap 'rm -rf "$W"' EXIT
for v in fresh kept; do
	harness_pair "$ROOT" HEAD "$P" "$W/$v" new > /dev/null
	cap_problem "$W/$v/problem.c" "$CAP"
	flags=
	[ $v = kept ] && flags=-DKBH_KEEP_PAGES
	(cd "$W/$v" && cc -O3 -march=native -fopenmp $flags ./*.c -o eval.out -lm)
done
for ((r = 0; r < REPS; r++)); do
	for v in fresh kept; do
		(cd "$W/$v" && OMP_WAIT_POLICY=passive POPCORN_FD=3 ./eval.out \
			leaderboard cases.txt 3> "$W/$v.$r.rep" 2> "$W/$v.$r.samples") || true
	done
done

python3 - "$W" "$REPS" "$P" "$CAP" <<'PY'
import os, statistics as st, sys
w, reps, prob, cap = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
res = {"fresh": [], "kept": []}
for r in range(reps):
    for v in res:
        rep = dict(l.rstrip("\n").split(": ", 1)
                   for l in open(os.path.join(w, f"{v}.{r}.rep")) if ": " in l)
        s = {}
        for l in open(os.path.join(w, f"{v}.{r}.samples")):
            f = l.split()
            if len(f) == 3 and f[0] == "sample":
                s.setdefault(int(f[1]), []).append(float(f[2]))
        if rep.get("check") != "pass" or not s:
            print(f"run {r} {v}: check {rep.get('check')} (left out)")
            continue
        res[v].append(s)
        print(f"run {r} {v:<5} " + "  ".join(
            f"b{i} n {len(x):4d} mean {st.fmean(x):8.1f} med {st.median(x):8.1f}"
            for i, x in sorted(s.items())))
print(f"\n{prob}: spread across runs (leaderboard cap {cap} ms per case, us)")
print(f"{'variant':<7} {'case':<4} {'runs':>4} {'mean of means':>13} "
      f"{'cv means':>9} {'max/min':>8} {'cv medians':>10} {'max/min':>8}")
for v, runs in res.items():
    if len(runs) < 2:
        continue
    for c in sorted(set.intersection(*(set(x) for x in runs))):
        means = [st.fmean(x[c]) for x in runs]
        meds = [st.median(x[c]) for x in runs]
        print(f"{v:<7} b{c:<3} {len(runs):4d} {st.fmean(means):13.1f} "
              f"{st.stdev(means) / st.fmean(means):9.4f} "
              f"{max(means) / min(means):8.3f} "
              f"{st.stdev(meds) / st.fmean(meds):10.4f} "
              f"{max(meds) / min(meds):8.3f}")
PY
