#!/usr/bin/env bash
# OpenMP wait policy and the CPU harness (problems/harness/guard.h): builds
# vectorsum_cpu's submission_ok.c with the current (split) harness and with
# the one-process harness of a git revision (default 8a6b7fe, the last
# before the split), both patched here to print every timed sample, and
# runs leaderboard mode twice per variant: libgomp's defaults, passive
# waits, bound threads, a short spin. Prints per run the p10/p50/p90 of all
# timed samples and each benchmark's mean and best (us). Measures; does not
# judge. The worker runs CPU harnesses with OMP_WAIT_POLICY=passive
# (worker/eval.c) because of what this shows on many-core hosts.
#
# usage: bench/cpu/omp_wait.sh [REV]
set -eu
REV=${1:-8a6b7fe}
ROOT=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kb-omp-wait.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
for v in old new; do
	d=$WORK/$v
	mkdir -p "$d"
	cp "$ROOT/problems/vectorsum_cpu/problem.c" "$d/"
	cp "$ROOT/problems/vectorsum_cpu/submission_ok.c" "$d/submission.c"
	if [ $v = old ]; then
		for f in harness.h harness.c harness_cpu.h harness_cpu.c; do
			git -C "$ROOT" show "$REV:problems/harness/$f" > "$d/$f"
		done
	else
		cp "$ROOT"/problems/harness/{harness,harness_cpu,guard}.[ch] "$d/"
	fi
	grep -q 'kbh_stats_add(&st, (double)ns);' "$d/harness_cpu.c"
	sed -i 's|^\(\t*\)kbh_stats_add(&st, (double)ns);|&\n\1fprintf(stderr, "sample %.1f\\n", (double)ns / 1e3);|' \
		"$d/harness_cpu.c"
	(cd "$d" && cc -O3 -march=native -fopenmp ./*.c -o eval.out -lm)
done
awk '/^benchmarks:/ { on = 1; next } /^[a-z_]+:/ { on = 0 }
	on && /^ *- *\{/ { l = $0; sub(/^ *- *\{ */, "", l); sub(/ *\} *$/, "", l);
		gsub(/"/, "", l); gsub(/ *, */, "; ", l); print l }' \
	"$ROOT/problems/vectorsum_cpu/task.yml" > "$WORK/cases.txt"

run() { # label old|new VAR=value...
	local label=$1 d=$WORK/$2
	shift 2
	for r in 1 2; do
		env "$@" POPCORN_FD=3 "$d/eval.out" leaderboard "$WORK/cases.txt" \
			3> "$WORK/rep" 2> "$WORK/samples" || true
		printf '%-26s r%d ' "$label" $r
		python3 - "$WORK/rep" "$WORK/samples" <<'PY'
import sys
rep = dict(l.split(": ", 1) for l in open(sys.argv[1]).read().splitlines() if ": " in l)
v = sorted(float(l.split()[1]) for l in open(sys.argv[2]) if l.startswith("sample "))
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
