#!/bin/sh
# bench/gpu/persist_l2.sh: does a persisting L2 window keep a submission's
# inputs in L2 across the harness's flush? (issue 16.6, pygpubench#49)
#
#   sh bench/gpu/persist_l2.sh [SIZE]
#
# Builds vectorsum's harness twice with kbg_build.sh -- as shipped, and
# with -DKBG_NO_PERSIST_RESET (no cudaCtxResetPersistingL2Cache before the
# flush) -- and times, with each, in benchmark mode on one case of SIZE
# floats (default 4 Mi: 16 MiB, inside the H100's persisting set-aside):
#   submission_ok   vectorsum's example (for scale only: another algorithm)
#   persist_l2      tests/hostile/cuda/persist_l2.cu: its sum on a stream
#                   whose access-policy window marks the input persisting
#   nowindow        the same file with KBH_NO_WINDOW defined: the same
#                   kernel and stream, no window -- the control
# The window's gain is nowindow / persist_l2 (above 1: the window made the
# sum faster). The last lines print it for each harness; with the reset it
# must stay within 5 % of 1 (exit 1 otherwise). Run on a GPU host; raw
# results in ${OUT:-/tmp}/persist_l2.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
size=${1:-4194304}
out=${OUT:-/tmp}/persist_l2
mkdir -p "$out"
nvcc=$(command -v nvcc)
printf '#!/bin/sh\nexec %s -DKBG_NO_PERSIST_RESET "$@"\n' "$nvcc" >"$out/nvcc-noreset"
chmod +x "$out/nvcc-noreset"
printf 'size: %s; seed: 7; min_runs: 200; max_runs: 200\n' "$size" >"$out/case.txt"
mkdir -p "$out/src"
cp "$root/problems/pmpp/vectorsum/submission_ok.cu" "$out/src/submission_ok.cu"
cp "$root/tests/hostile/cuda/persist_l2.cu" "$out/src/persist_l2.cu"
{ echo '#define KBH_NO_WINDOW 1'; cat "$root/tests/hostile/cuda/persist_l2.cu"; } \
	>"$out/src/nowindow.cu"
for variant in reset noreset; do
	cc=$nvcc
	[ $variant = noreset ] && cc=$out/nvcc-noreset
	for name in submission_ok persist_l2 nowindow; do
		w=$out/$variant-$name
		rm -rf "$w"
		NVCC=$cc sh "$root/problems/harness/cuda/kbg_build.sh" \
			-c "$out/cache-$variant" -w "$w" \
			"$root/problems/pmpp/vectorsum" "$out/src/$name.cu" >/dev/null 2>"$w.log"
		(cd "$w" && KBH_SUBMISSION=$w/submission.so POPCORN_FD=3 \
			./eval.out benchmark "$out/case.txt" 3>report.txt \
			2>stderr.txt) || true
		mean=$(sed -n 's/^benchmark\.0\.mean: //p' "$w/report.txt")
		st=$(sed -n 's/^benchmark\.0\.status: //p' "$w/report.txt")
		echo "$variant $name: mean ${mean:-?} ns ${st:-}"
		echo "${mean:-0}" >"$out/$variant-$name.mean"
	done
done
bad=0
for variant in reset noreset; do
	g=$(awk -v a="$(cat "$out/$variant-nowindow.mean")" \
		-v b="$(cat "$out/$variant-persist_l2.mean")" \
		'BEGIN { if (a > 0 && b > 0) printf "%.3f", a / b; else print "?" }')
	echo "window gain, harness $variant: $g (nowindow / persist_l2)"
	if [ $variant = reset ]; then
		awk -v g="$g" 'BEGIN { exit !(g != "?" && g <= 1.05) }' || bad=1
	fi
done
exit $bad
