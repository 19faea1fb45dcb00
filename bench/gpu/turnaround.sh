#!/bin/sh
# bench/gpu/turnaround.sh: what a user waits for a test-mode submission of
# a small cu problem, `kb-worker eval --mode test` from start to report,
# with the worker's harness object cache cold (first submission of a
# problem on a worker) and warm (every later one). Run on the GPU host.
#
#   bench/gpu/turnaround.sh [-w KB_WORKER] [-p PROBLEM_DIR] [-s SUBMISSION]
#                           [-g GPU] [-n WARM_RUNS] [-o OUTDIR] [-u]
#
#   KB_WORKER    default: $KB_WORKER, dist/bin/kb-worker, PATH,
#                build*/worker/kb-worker
#   PROBLEM_DIR  default problems/pmpp/vectoradd
#   SUBMISSION   default <PROBLEM_DIR>/submission_ok.cu
#   GPU          KB_GPU of the worker (default H100)
#   WARM_RUNS    default 3 (the median is reported)
#   OUTDIR       JSON results and logs (default: a new mktemp -d)
#   -u           every run submits new code (the submission with a comment
#                line of its own appended), so no run finds its build in
#                the worker's cache of submission builds; without -u the
#                warm runs resubmit the same file (a user's test, then
#                benchmark, then leaderboard run) and take the first build
#
# Prints one line per run (wall, the worker's build_s and harness_s from
# the Result, verdict) and last the figures:
#   turnaround: cold <s> s (build <s>), warm <s> s (build <s>) median of N
# Exit 0 when every run passed, 1 otherwise.
set -u

here=$(cd "$(dirname "$0")/../.." && pwd)
worker=${KB_WORKER:-}
problem=$here/problems/pmpp/vectoradd
sub=
gpu=H100
runs=3
out=
unique=0
while getopts w:p:s:g:n:o:u opt; do
	case $opt in
	w) worker=$OPTARG ;;
	p) problem=$OPTARG ;;
	s) sub=$OPTARG ;;
	g) gpu=$OPTARG ;;
	n) runs=$OPTARG ;;
	o) out=$OPTARG ;;
	u) unique=1 ;;
	*) exit 2 ;;
	esac
done
[ -n "$sub" ] || sub=$problem/submission_ok.cu
if [ -z "$worker" ]; then
	for c in "$here/dist/bin/kb-worker" "$(command -v kb-worker 2>/dev/null)" \
		"$here"/build/worker/kb-worker "$here"/build*/worker/kb-worker; do
		[ -n "$c" ] && [ -x "$c" ] && worker=$c && break
	done
fi
[ -n "$worker" ] && [ -x "$worker" ] || { echo "turnaround: no kb-worker (-w)" >&2; exit 2; }
[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/kb-turnaround.XXXXXX")
mkdir -p "$out"
export KB_WORKDIR="$out/work" KB_CACHE_DIR="$out/cache"
rm -rf "$KB_WORKDIR" "$KB_CACHE_DIR"

now() { date +%s.%N; }
# field FILE KEY: a top-level number or string of the Result JSON (the
# worker indents by two spaces, so a top-level key is a line of its own)
field() {
	sed -n "s/^  \"$2\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}\$/\1/p" "$1" 2>/dev/null |
		head -n 1 | awk '{ if ($0 ~ /^[0-9.]+$/) printf "%.2f\n", $0; else print }'
}
fail=0
# one NAME: one evaluation; prints its line, sets $wall and $build
one() {
	file=$sub
	if [ "$unique" = 1 ]; then
		file=$out/$1-$(basename "$sub")
		cp "$sub" "$file"
		case $sub in
		*.py) echo "# turnaround run $1 $$" >>"$file" ;;
		*) echo "// turnaround run $1 $$" >>"$file" ;;
		esac
	fi
	t0=$(now)
	"$worker" eval "$problem" "$file" --mode test --gpu "$gpu" --json \
		>"$out/$1.json" 2>"$out/$1.err"
	rc=$?
	wall=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')
	build=$(field "$out/$1.json" build_s)
	verdict=$(field "$out/$1.json" verdict)
	echo "$1: wall $wall s, build ${build:-?} s, harness $(field "$out/$1.json" harness_s) s, $verdict (exit $rc)"
	[ "$verdict" = VERDICT_PASSED ] || { fail=1; tail -n 5 "$out/$1.err"; }
}

echo "turnaround: $worker, $problem, $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)"
one cold
cold=$wall cold_build=$build
warms= builds=
i=1
while [ "$i" -le "$runs" ]; do
	one "warm$i"
	warms="$warms $wall"
	builds="$builds $build"
	i=$((i + 1))
done
median() { echo "$@" | tr ' ' '\n' | sed '/^$/d' | sort -n | awk '{ v[NR] = $1 } END { print (NR ? v[int((NR + 1) / 2)] : "?") }'; }
echo "turnaround: cold $cold s (build $cold_build s), warm $(median $warms) s (build $(median $builds) s) median of $runs"
echo "results in $out"
exit $fail
