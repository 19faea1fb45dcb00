#!/bin/sh
# gpu-upstream.sh: runs an upstream KernelBot problem set (a local copy of
# reference-kernels' problems/<set>, never committed here: it carries a
# licence of its own) through the worker on this machine's GPU: every
# problem's example (submission.py) and every solutions/ entry, in each
# mode, sealed and unsealed, and prints one table: problem, submission,
# mode, sealed, verdict, score, the worker's build and harness seconds,
# error.
#
#   scripts/gpu-upstream.sh [-g GPU] [-m MODES] [-s SEALS] [-o OUTDIR]
#                           [-w KB_WORKER] [-H DIR] [-E] SET_DIR [PROBLEM...]
#
#   GPU      the worker's device type (default H100)
#   MODES    default "test leaderboard"
#   SEALS    KB_SEAL_UPSTREAM values to run with (default "1 0": sealed
#            by our harness where the loader can, then upstream's eval.py)
#   OUTDIR   JSON results and logs (default /tmp/kb-gpu-upstream); with
#            $OUT set (the device tool) the table and a tarball of the
#            results are copied there
#   -E       the example (submission.py) alone, not solutions/
#   DIR      more submissions: every DIR/*.py, run on each PROBLEM after
#            its own (bench/gpu/upstream: hostile ones for vectoradd_py)
#   PROBLEM  problem directories of SET_DIR (default: every one with a
#            task.yml)
#
# The last line reads "N runs, M passed"; exit 0 (the table is the
# result: which upstream examples fail their own checks is a finding, not
# a failure of this script).
set -u

here=$(cd "$(dirname "$0")/.." && pwd)
gpu=H100
modes="test leaderboard"
seals="1 0"
out=/tmp/kb-gpu-upstream
worker=${KB_WORKER:-}
extra=
solutions=1
while getopts g:m:s:o:w:H:E opt; do
	case $opt in
	g) gpu=$OPTARG ;;
	m) modes=$OPTARG ;;
	s) seals=$OPTARG ;;
	o) out=$OPTARG ;;
	w) worker=$OPTARG ;;
	H) extra=$(cd "$OPTARG" && pwd) ;;
	E) solutions=0 ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] && [ -d "$1" ] || {
	echo "gpu-upstream: usage: gpu-upstream.sh [options] SET_DIR [PROBLEM...]" >&2
	exit 2
}
set_dir=$(cd "$1" && pwd)
shift
problems=$*
if [ -z "$problems" ]; then
	for d in "$set_dir"/*/; do
		[ -f "$d/task.yml" ] && problems="$problems $(basename "$d")"
	done
fi
[ -n "$worker" ] || worker=$(command -v kb-worker 2>/dev/null || true)
[ -n "$worker" ] || worker=$here/build/worker/kb-worker
[ -x "$worker" ] || {
	echo "gpu-upstream: kb-worker not found (set KB_WORKER or -w)" >&2
	exit 2
}
mkdir -p "$out"
table=$out/table.txt
printf '%-14s %-34s %-11s %-6s %-9s %-11s %7s %7s %s\n' problem submission \
	mode sealed verdict score_s build_s run_s error >"$table"
runs=0
passed=0
t_start=$(date +%s)
for p in $problems; do
	subs=$(cd "$set_dir/$p" && {
		ls submission.py 2>/dev/null
		[ $solutions = 0 ] || find solutions -name '*.py' 2>/dev/null | sort
	})
	[ -n "$extra" ] && subs="$subs $(ls "$extra"/*.py)"
	for s in $subs; do
		case $s in
		/*) path=$s s=$(basename "$s") ;;
		*) path=$set_dir/$p/$s ;;
		esac
		for mode in $modes; do
			for seal in $seals; do
				tag=$(echo "$p-$s-$mode-$seal" | tr '/' '_')
				KB_SEAL_UPSTREAM=$seal "$worker" eval "$set_dir/$p" "$path" \
					--mode "$mode" --gpu "$gpu" --json >"$out/$tag.json" 2>"$out/$tag.err"
				set -- $(python3 "$here/scripts/eval-summary.py" "$out/$tag.json" $?)
				runs=$((runs + 1))
				[ "$1" = passed ] && passed=$((passed + 1))
				printf '%-14s %-34s %-11s %-6s %-9s %-11s %7s %7s %s\n' "$p" "$s" \
					"$mode" "$seal" "$1" "$2" "$4" "$5" "$6" | tee -a "$table"
			done
		done
	done
done
echo
echo "== $table, total $(($(date +%s) - t_start)) s"
echo "$runs runs, $passed passed"
if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then
	cp "$table" "$OUT/upstream-table.txt"
	(cd "$out" && tar czf "$OUT/upstream-results.tgz" ./*.json ./*.err 2>/dev/null)
fi
exit 0
