#!/usr/bin/env bash
# How far apart do identical runs of a CPU problem land, under different
# OpenMP settings or harness builds? Builds PROBLEM's submission_ok.c (or
# SUBMISSION) with the working tree's harness (patched to print every
# timed sample, as tests/problems/harness_pair.sh does), then runs
# leaderboard mode REPS times per variant, the variants interleaved, as
# plain processes. A variant is a set of environment entries; the first is
# what the worker gives CPU runs today (OMP_WAIT_POLICY=passive,
# worker/run/eval.c). A variant whose first word is "watcher" runs a build
# that keeps the guard's watcher thread (guard.c: a parent thread that
# spins, at SCHED_IDLE, while a request runs; the CPU driver turns it off
# since 2026-11-26), with the rest of its entries; one whose first word is
# "sweep=N" a build whose flush sweeps with N threads instead of one per
# CPU (harness_cpu.c, kbh__flush_init). Prints per run each case's sample count, mean and median, then
# per variant and case the spread across runs: coefficient of variation
# and max/min of the run means and of the run medians, and the median of
# the runs' calibrated handoff (the minimum of the calibration made before
# loading). Measures; does not judge.
#
# usage: bench/cpu/reproducibility.sh [-r REPS] [-c CAP_MS] [-s SUBMISSION]
#            PROBLEM ["VAR=V VAR=V" ...]
#   default variants: "OMP_WAIT_POLICY=passive" and
#   "OMP_WAIT_POLICY=passive OMP_PROC_BIND=close OMP_PLACES=cores"
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
REPS=6
CAP=1000
SUB=
while getopts r:c:s: o; do
	case $o in
	r) REPS=$OPTARG ;;
	c) CAP=$OPTARG ;;
	s) SUB=$(realpath "$OPTARG") ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { sed -n 2,22p "$0" >&2; exit 2; }
P=$1
shift
if [ $# -eq 0 ]; then
	set -- "OMP_WAIT_POLICY=passive" \
		"OMP_WAIT_POLICY=passive OMP_PROC_BIND=close OMP_PLACES=cores"
fi
# shellcheck source=../../tests/problems/harness_pair.sh
. "$ROOT/tests/problems/harness_pair.sh"
# shellcheck source=../sandbox/cap.sh
. "$ROOT/bench/sandbox/cap.sh"
W=$(mktemp -d "${TMPDIR:-/tmp}/kb-repro.XXXXXX")
trap 'rm -rf "$W"' EXIT
harness_pair_stage "$ROOT" HEAD "$P" "$W/b" new ${SUB:+"$SUB"}
cap_problem "$W/b/problem.c" "$CAP"
# variant_build NAME SED_EXPR MARK: a copy of the build with harness_cpu.c
# edited by SED_EXPR, which must leave MARK in it
variant_build() {
	[ -d "$W/$1" ] && return 0
	cp -r "$W/b" "$W/$1"
	sed -i "$2" "$W/$1/harness_cpu.c"
	grep -q "$3" "$W/$1/harness_cpu.c" ||
		{ echo "reproducibility: could not patch harness_cpu.c for $1" >&2; exit 2; }
	harness_pair_build "$W/$1"
}
for e in "$@"; do
	case $e in
	watcher*) variant_build wa 's|^\tkbh_guard_unwatch(r.g);$|\t/* watcher kept */|' 'watcher kept' ;;
	sweep=*)
		k=${e%% *} k=${k#sweep=}
		case $k in *[!0-9]* | '' | 0) echo "reproducibility: bad $e" >&2; exit 2 ;; esac
		variant_build "sw$k" "s|^\tunsigned n = kbh__ncpu();\$|\tunsigned n = $k; /* sweep threads */|" 'sweep threads' ;;
	esac
done
harness_pair_build "$W/b"
nv=$#
for ((r = 0; r < REPS; r++)); do
	v=0
	for e in "$@"; do
		bin=b
		case $e in
		watcher*) bin=wa e=${e#watcher} ;;
		sweep=*) k=${e%% *} bin=sw${k#sweep=} e=${e#"$k"} ;;
		esac
		# shellcheck disable=SC2086
		(cd "$W/$bin" && env $e POPCORN_FD=3 ./eval.out leaderboard cases.txt \
			3> "$W/$v.$r.rep" 2> "$W/$v.$r.samples") || true
		v=$((v + 1))
	done
done
printf '%s\n' "$@" > "$W/variants"
python3 - "$W" "$REPS" "$P" "$CAP" "$nv" <<'PY'
import os, statistics as st, sys
w, reps, prob, cap, nv = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
names = open(os.path.join(w, "variants")).read().splitlines()
res = [[] for _ in range(nv)]
slack = [[] for _ in range(nv)]
for r in range(reps):
    for v in range(nv):
        rep = dict(l.rstrip("\n").split(": ", 1)
                   for l in open(os.path.join(w, f"{v}.{r}.rep")) if ": " in l)
        s = {}
        for l in open(os.path.join(w, f"{v}.{r}.samples")):
            f = l.split()
            if len(f) == 3 and f[0] == "sample":
                s.setdefault(int(f[1]), []).append(float(f[2]))
            elif "handoff min=" in l:
                slack[v].append(float(l.split("handoff min=")[1].split("us")[0]))
        if rep.get("check") != "pass" or not s:
            print(f"run {r} v{v}: check {rep.get('check')} (left out)")
            continue
        res[v].append(s)
        flags = [rep.get(f"benchmark.{i}.status", "") for i in range(len(s))]
        print(f"run {r} v{v} " + "  ".join(
            f"b{i} n {len(x):4d} mean {st.fmean(x):8.1f} med {st.median(x):8.1f}"
            for i, x in sorted(s.items())) + ("  " + " ".join(x for x in flags if x)))
print(f"\n{prob}: spread across runs (leaderboard cap {cap} ms per case, us)")
for v in range(nv):
    sl = f", median handoff {st.median(slack[v]):.1f} us" if slack[v] else ""
    print(f"v{v}: {names[v]}{sl}")
print(f"{'var':<4} {'case':<4} {'runs':>4} {'n/run':>6} {'mean of means':>13} "
      f"{'cv means':>9} {'max/min':>8} {'med of meds':>11} {'cv medians':>10} {'max/min':>8}")
for v, runs in enumerate(res):
    if len(runs) < 2:
        continue
    for c in sorted(set.intersection(*(set(x) for x in runs))):
        means = [st.fmean(x[c]) for x in runs]
        meds = [st.median(x[c]) for x in runs]
        n = st.fmean(len(x[c]) for x in runs)
        print(f"v{v:<3} b{c:<3} {len(runs):4d} {n:6.0f} {st.fmean(means):13.1f} "
              f"{st.stdev(means) / st.fmean(means):9.4f} "
              f"{max(means) / min(means):8.3f} {st.median(meds):11.1f} "
              f"{st.stdev(meds) / st.fmean(meds):10.4f} "
              f"{max(meds) / min(meds):8.3f}")
PY
