#!/usr/bin/env bash
# OpenMP wait policy and the CPU harness (problems/harness/guard.h): builds
# vectorsum_cpu's submission_ok.c with the current (split) harness and with
# the one-process harness of a git revision (default 8a6b7fe, the last
# before the split), both patched here to print every timed sample, and
# runs leaderboard mode twice per variant: libgomp's defaults, passive
# waits, bound threads, a short spin. Prints per run the p10/p50/p90 of all
# timed samples and each benchmark's mean and best (us). Measures; does not
# judge. The worker runs CPU harnesses with OMP_WAIT_POLICY=passive
# (worker/run/eval.c) because of what this shows on many-core hosts.
#
# usage: bench/cpu/omp_wait.sh [REV]
set -eu
REV=${1:-8a6b7fe}
ROOT=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kb-omp-wait.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
# shellcheck source=../../tests/problems/harness_pair.sh
. "$ROOT/tests/problems/harness_pair.sh"
for v in old new; do
	harness_pair "$ROOT" "$REV" vectorsum_cpu "$WORK/$v" $v
done

run() { # label old|new VAR=value...
	local label=$1 d=$WORK/$2
	shift 2
	for r in 1 2; do
		env "$@" POPCORN_FD=3 "$d/eval.out" leaderboard "$d/cases.txt" \
			3> "$WORK/rep" 2> "$WORK/samples" || true
		printf '%-26s r%d ' "$label" $r
		python3 - "$WORK/rep" "$WORK/samples" <<'PY'
import sys
rep = dict(l.split(": ", 1) for l in open(sys.argv[1]).read().splitlines() if ": " in l)
v = sorted(float(l.split()[-1]) for l in open(sys.argv[2]) if l.startswith("sample "))
q = lambda f: v[min(len(v) - 1, int(f * len(v)))] if v else float("nan")
b = "  ".join("b%d mean %8.1f best %7.1f n %3s %s" % (
    i, float(rep.get("benchmark.%d.mean" % i, "nan")) / 1e3,
    float(rep.get("benchmark.%d.best" % i, "nan")) / 1e3,
    rep.get("benchmark.%d.runs" % i, "?"), rep.get("benchmark.%d.status" % i, ""))
    for i in range(int(rep.get("benchmark-count", "0"))))
print("samples n %3d p10 %8.1f p50 %8.1f p90 %8.1f | %s" % (len(v), q(.1), q(.5), q(.9), b))
PY
	done
}
N=$(nproc)
echo "vectorsum_cpu, $N CPUs, one-process harness = $REV, split = working tree"
run "one-process default" old
run "one-process passive" old OMP_WAIT_POLICY=passive
run "split default" new
run "split passive" new OMP_WAIT_POLICY=passive
run "split bind" new OMP_PROC_BIND=close OMP_PLACES=cores
run "split spin 10k" new GOMP_SPINCOUNT=10000
