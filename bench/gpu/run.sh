#!/bin/sh
# bench/gpu/run.sh: the GPU harness's own figures, measured on this
# machine's GPU (about 2-3 minutes on an H100).
#
#   bench/gpu/run.sh [-a ARCH] [-o OUTDIR] [-w KB_WORKER]
#
#   ARCH       90a (H100, default), 80, 89, 75
#   OUTDIR     builds, reports and logs (default /tmp/kb-bench-gpu); with
#              $OUT set (the device tool) bench-figures.txt and
#              bench-reports.tgz are copied there
#   KB_WORKER  for (d); default $KB_WORKER, PATH, then build*/worker/kb-worker
#
# (a) accuracy: vectoradd (fp16, n = 2^28, 1.61 GB moved) as the harness
#     measures it (benchmark mode, mean), for a bandwidth-oriented
#     submission and the naive example, against a device-to-device
#     cudaMemcpy moving the same bytes measured in the same run the same
#     way (copybw.cu); ratio = harness mean / copy median (1.0 = the
#     submission runs at copy speed and the harness adds nothing).
# (b) reproducibility: 10 ranked (leaderboard-mode) runs of the same
#     submission; spread = max/min - 1 of the scores (target <= 0.5%).
# (c) overhead: the noop fixture (bench/gpu/noop) with an empty kernel and
#     with no launch at all: the timing floor (mean device time) and the
#     harness's wall time per sample (staging, L2 flush, sync, check).
# (d) test-mode turnaround: build + `eval.out test` with a cold and a warm
#     object cache, and `kb-worker eval --mode test` twice, wall seconds.
# The figures are printed last, one per line.
set -u

here=$(cd "$(dirname "$0")/../.." && pwd)
arch=90a
out=/tmp/kb-bench-gpu
worker=${KB_WORKER:-}
while getopts a:o:w: opt; do
	case $opt in
	a) arch=$OPTARG ;;
	o) out=$OPTARG ;;
	w) worker=$OPTARG ;;
	*) exit 2 ;;
	esac
done
case ":$PATH:" in
*:/usr/local/cuda/bin:*) ;;
*) PATH=$PATH:/usr/local/cuda/bin ;;
esac
export PATH
mkdir -p "$out"
out=$(cd "$out" && pwd)
build=$here/problems/harness/cuda/kbg_build.sh
cache=$out/objcache
va=$here/problems/pmpp/vectoradd
noop=$here/bench/gpu/noop
t_start=$(date +%s)

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
key() { sed -n "s/^$2: //p" "$1" | head -n 1; }
# runh DIR MODE CASES REPORT: eval.out in DIR; the exit code
runh() {
	(cd "$1" && KBH_SUBMISSION="$1/submission.so" POPCORN_FD=3 timeout 300 \
		./eval.out "$2" "$3" 3>"$4" \
		>"$4.out" 2>"$4.err")
}
bld() { # bld WORKDIR PROBLEM SUBMISSION
	sh "$build" -a "$arch" -c "$cache" -w "$1" "$2" "$3" >"$1.log" 2>&1 ||
		{ echo "build failed: $1 (see $1.log)"; return 1; }
}

echo "== building"
rm -rf "$out/va_fast" "$out/va_naive" "$out/noop_empty" "$out/noop_none"
bld "$out/va_fast" "$va" "$here/bench/gpu/vectoradd_fast.cu" &
bld "$out/noop_empty" "$noop" "$noop/submission_empty.cu" &
nvcc -O3 -gencode=arch=compute_${arch},code=sm_${arch} -o "$out/copybw" \
	"$here/bench/gpu/copybw.cu" >"$out/copybw.log" 2>&1 &
wait
bld "$out/va_naive" "$va" "$va/submission_ok.cu" &
bld "$out/noop_none" "$noop" "$noop/submission_none.cu" &
wait

# ---- (a) ----
echo "== (a) vectoradd vs device copy"
n=268435456
echo "size: $n; seed: 777" >"$out/va_case.txt"
runh "$out/va_fast" benchmark "$out/va_case.txt" "$out/a_fast.txt"
runh "$out/va_naive" benchmark "$out/va_case.txt" "$out/a_naive.txt"
"$out/copybw" $((3 * n)) >"$out/a_copy.txt" 2>&1
cat "$out/a_copy.txt"
fast_ns=$(key "$out/a_fast.txt" benchmark.0.mean)
naive_ns=$(key "$out/a_naive.txt" benchmark.0.mean)
copy_ns=$(awk '{ for (i = 1; i < NF; i++) if ($i == "copy_ns") print $(i + 1) }' "$out/a_copy.txt")
fig_a=$(awk -v f="${fast_ns:-0}" -v s="${naive_ns:-0}" -v c="${copy_ns:-0}" -v b=$((6 * n)) 'BEGIN {
	if (f > 0 && c > 0)
		printf "fast %.1f us (%.0f GB/s), naive %.1f us (%.0f GB/s), copy %.1f us (%.0f GB/s): ratio fast/copy %.3f, naive/copy %.3f",
		       f / 1e3, b / f, s / 1e3, (s > 0 ? b / s : 0), c / 1e3, b / c, f / c, s / c
	else print "n/a (see a_*.txt)" }')
echo "$fig_a"
grep -h 'benchmark.0.\(status\|error\|stop\|runs\|gap_ns\)' "$out/a_fast.txt" "$out/a_naive.txt"

# ---- (b) ----
echo "== (b) 10 ranked runs"
scores=
for i in 1 2 3 4 5 6 7 8 9 10; do
	runh "$out/va_fast" leaderboard "$out/va_case.txt" "$out/b_$i.txt"
	m=$(key "$out/b_$i.txt" benchmark.0.mean)
	echo "run $i: mean ${m:-?} ns ($(key "$out/b_$i.txt" benchmark.0.runs) samples, $(key "$out/b_$i.txt" benchmark.0.stop), hold $(key "$out/b_$i.txt" benchmark.0.hold), $(key "$out/b_$i.txt" benchmark.0.hold_timeouts) timeouts)"
	scores="$scores ${m:-0}"
done
fig_b=$(echo "$scores" | awk '{ lo = 1e300; hi = 0; for (i = 1; i <= NF; i++) { if ($i <= 0) bad = 1; if ($i < lo) lo = $i; if ($i > hi) hi = $i }
	if (bad || NF == 0) print "n/a"; else printf "spread %.3f%% (min %.1f us, max %.1f us; target <= 0.5%%)", (hi / lo - 1) * 100, lo / 1e3, hi / 1e3 }')
echo "$fig_b"

# ---- (c) ----
echo "== (c) harness overhead"
echo "seed: 1; min_runs: 2000; max_runs: 2000" >"$out/noop_case.txt"
runh "$out/noop_empty" benchmark "$out/noop_case.txt" "$out/c_empty.txt"
runh "$out/noop_none" benchmark "$out/noop_case.txt" "$out/c_none.txt"
fig_c=$(awk -v e="$(key "$out/c_empty.txt" benchmark.0.mean)" \
	-v eb="$(key "$out/c_empty.txt" benchmark.0.best)" \
	-v n="$(key "$out/c_none.txt" benchmark.0.mean)" \
	-v w="$(key "$out/c_empty.txt" benchmark.0.sample_wall_ns)" 'BEGIN {
	printf "empty kernel %.2f us (best %.2f), no launch %.2f us, wall per sample %.1f us", e / 1e3, eb / 1e3, n / 1e3, w / 1e3 }')
echo "$fig_c"

# ---- (d) ----
echo "== (d) test-mode turnaround"
rm -rf "$out/tcache" "$out/t_cold" "$out/t_warm"
t0=$(now)
sh "$build" -a "$arch" -c "$out/tcache" -w "$out/t_cold" "$va" "$va/submission_ok.cu" >/dev/null 2>&1 &&
	runh "$out/t_cold" test tests.txt "$out/d_cold.txt"
cold=$(since "$t0")
t0=$(now)
sh "$build" -a "$arch" -c "$out/tcache" -w "$out/t_warm" "$va" "$va/submission_ok.cu" >/dev/null 2>&1 &&
	runh "$out/t_warm" test tests.txt "$out/d_warm.txt"
warm=$(since "$t0")
fig_d="raw: cold cache ${cold} s ($(key "$out/d_cold.txt" check)), warm cache ${warm} s ($(key "$out/d_warm.txt" check))"
if [ -z "$worker" ]; then
	worker=$(command -v kb-worker 2>/dev/null || true)
fi
if [ -z "$worker" ]; then
	for c in "$here"/build/worker/kb-worker "$here"/build*/worker/kb-worker; do
		[ -x "$c" ] && worker=$c && break
	done
fi
if [ -n "$worker" ] && [ -x "$worker" ]; then
	for i in 1 2; do
		t0=$(now)
		"$worker" eval "$va" "$va/submission_ok.cu" --mode test --gpu H100 \
			--json >"$out/d_worker_$i.json" 2>"$out/d_worker_$i.err"
		rc=$?
		fig_d="$fig_d; kb-worker run $i $(since "$t0") s (exit $rc)"
	done
else
	fig_d="$fig_d; kb-worker: not found, skipped"
fi
echo "$fig_d"

echo
echo "== figures ($(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1), total $(( $(date +%s) - t_start )) s)"
echo "(a) $fig_a"
echo "(b) $fig_b"
echo "(c) $fig_c"
echo "(d) $fig_d"
{
	echo "(a) $fig_a"
	echo "(b) $fig_b"
	echo "(c) $fig_c"
	echo "(d) $fig_d"
} >"$out/figures.txt"
if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then
	cp "$out/figures.txt" "$OUT/bench-figures.txt"
	(cd "$out" && tar czf "$OUT/bench-reports.tgz" ./*.txt ./*.log ./*.err ./*.json 2>/dev/null)
fi
