#!/bin/sh
# gpu-smoke-raw.sh: runs every CUDA problem's examples in every mode on
# this machine's GPU without kb-worker -- nvcc through kbg_build.sh (the
# worker's exact commands), then ./eval.out with POPCORN_FD -- and prints
# one table. The first thing to run on a new GPU host: it validates the
# harness independently of the worker.
#
#   scripts/gpu-smoke-raw.sh [-a ARCH] [-o OUTDIR] [-p PROBLEMS] [-j JOBS]
#
#   ARCH      90a (H100, default), 80 (A100), 89 (L4), 75 (T4)
#   OUTDIR    where builds, reports and logs go (default
#             /tmp/kb-gpu-smoke-raw); the table is OUTDIR/table.txt. When
#             $OUT is set (the device tool), only two files are copied
#             there: smoke-raw-table.txt and smoke-raw-reports.tgz (every
#             report, stderr and build log)
#   PROBLEMS  space-separated subset of problems/pmpp (default: all)
#   JOBS      parallel builds (default: nproc)
#
# Every example runs in test, benchmark, profile and leaderboard modes
# (tests.txt for test, benchmarks.txt for the others). Expected: the
# correct example (ok) passes every mode; the wrong one and the template
# fail every mode (exit 112). Columns: verdict (passed / failed /
# suspect / timeout / infra / error), score (geometric mean of the
# benchmark means, seconds), achieved GB/s per benchmark, wall seconds,
# and OK/BAD against the expectation. The last line reads
# "N passed, M failed" (expectations met / not met). Exit 0 when all met.
set -u

here=$(cd "$(dirname "$0")/.." && pwd)
arch=90a
out=/tmp/kb-gpu-smoke-raw
problems="vectoradd vectorsum grayscale histogram prefixsum sort conv2d matmul"
jobs=$(nproc 2>/dev/null || echo 4)
while getopts a:o:p:j: opt; do
	case $opt in
	a) arch=$OPTARG ;;
	o) out=$OPTARG ;;
	p) problems=$OPTARG ;;
	j) jobs=$OPTARG ;;
	*) exit 2 ;;
	esac
done
case ":$PATH:" in
*:/usr/local/cuda/bin:*) ;;
*) PATH=$PATH:/usr/local/cuda/bin ;;
esac
export PATH
command -v nvcc >/dev/null || { echo "gpu-smoke-raw: nvcc not found" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
build=$here/problems/harness/cuda/kbg_build.sh
examples="submission_ok submission_wrong template"
t_start=$(date +%s)

echo "== device"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
	--format=csv 2>/dev/null || echo "(nvidia-smi not available)"
nvcc --version | tail -n 2

# ---- builds: the correct examples first (they fill the harness object
# cache per problem), then the rest; each batch in parallel ----
echo "== building (arch sm_$arch, $jobs jobs)"
# One build job: $1 problem, $2 example.
job='w=$OUT_DIR/build/$1-$2; rm -rf "$w"
if sh "$BUILD" -a "$ARCH" -c "$OUT_DIR/objcache" -w "$w" \
	"$HERE/problems/pmpp/$1" "$HERE/problems/pmpp/$1/$2.cu" \
	>"$OUT_DIR/build-$1-$2.log" 2>&1; then echo "built $1 $2"
else echo "BUILD FAILED $1 $2 (see $OUT_DIR/build-$1-$2.log)"; fi'
OUT_DIR=$out ARCH=$arch HERE=$here BUILD=$build
export OUT_DIR ARCH HERE BUILD
build_list() { for p in $problems; do for e in $1; do echo "$p $e"; done; done; }
build_list submission_ok | xargs -P "$jobs" -n 2 sh -c "$job" _
build_list "submission_wrong template" | xargs -P "$jobs" -n 2 sh -c "$job" _
t_built=$(date +%s)
echo "== builds took $((t_built - t_start)) s"

# ---- runs ----
# summarize REPORT EXIT: prints "verdict score gbps check"
summarize() {
	awk -v rc="$2" '
	{
		k = $0; sub(/: .*/, "", k); v = $0; sub(/^[^:]*: /, "", v)
		kv[k] = v
		if (k ~ /^benchmark\.[0-9]+\.mean$/) { n++; lsum += log(v / 1e9) }
		if (k ~ /^benchmark\.[0-9]+\.gbps$/) gb = gb (gb == "" ? "" : "/") int(v + 0.5)
		if (k ~ /^benchmark\.[0-9]+\.status$/ && v == "suspect") sus = 1
	}
	END {
		if (rc == 0 && kv["check"] == "pass") verdict = sus ? "suspect" : "passed"
		else if (rc == 112 || (rc == 0 && kv["check"] == "fail")) verdict = "failed"
		else if (rc == 114 || rc == 124 || rc == 137) verdict = "timeout"
		else if (rc == 110) verdict = "infra"
		else verdict = "error(" rc ")"
		score = n ? sprintf("%.6g", exp(lsum / n)) : "-"
		if (gb == "") gb = "-"
		printf "%s %s %s\n", verdict, score, gb
	}' "$1"
}

table=$out/table.txt
printf '%-10s %-17s %-11s %-8s %-12s %-16s %6s %s\n' problem example mode \
	verdict score_s GB/s wall_s expect >"$table"
met=0
missed=0
for p in $problems; do
	for e in $examples; do
		w=$out/build/$p-$e
		for mode in test benchmark profile leaderboard; do
			cases=benchmarks.txt
			[ "$mode" = test ] && cases=tests.txt
			rep=$out/report-$p-$e-$mode.txt
			err=$out/stderr-$p-$e-$mode.txt
			t0=$(date +%s.%N)
			if [ -x "$w/eval.out" ]; then
				(cd "$w" && POPCORN_FD=3 timeout 300 ./eval.out "$mode" "$cases" \
					3>"$rep" >"$err" 2>&1)
				rc=$?
			else
				: >"$rep"
				rc=127
			fi
			t1=$(date +%s.%N)
			wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
			set -- $(summarize "$rep" "$rc")
			verdict=$1 score=$2 gbps=$3
			if [ "$e" = submission_ok ]; then want=passed; else want=failed; fi
			if [ "$verdict" = "$want" ]; then
				ok=OK
				met=$((met + 1))
			else
				ok="BAD(want $want)"
				missed=$((missed + 1))
			fi
			short=$(echo "$e" | sed 's/submission_//')
			printf '%-10s %-17s %-11s %-8s %-12s %-16s %6s %s\n' "$p" "$short" \
				"$mode" "$verdict" "$score" "$gbps" "$wall" "$ok" | tee -a "$table"
		done
	done
done

echo
echo "== system (from the first report)"
first=$(ls "$out"/report-*-test.txt 2>/dev/null | head -n 1)
[ -n "$first" ] && grep '^system\.' "$first"
echo "== suspect or failed benchmarks (reasons)"
grep -H 'benchmark\.[0-9]*\.error' "$out"/report-*-submission_ok-*.txt 2>/dev/null | head -n 20
grep -H 'test\.[0-9]*\.error' "$out"/report-*-submission_ok-*.txt 2>/dev/null | head -n 20
echo
echo "== table ($table), total $(( $(date +%s) - t_start )) s"
cat "$table"
echo "$met passed, $missed failed"
if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then
	cp "$table" "$OUT/smoke-raw-table.txt"
	(cd "$out" && tar czf "$OUT/smoke-raw-reports.tgz" report-*.txt stderr-*.txt \
		build-*.log 2>/dev/null)
fi
[ "$missed" = 0 ]
