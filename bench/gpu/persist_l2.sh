#!/bin/sh
# bench/gpu/persist_l2.sh: does a persisting L2 window keep a submission's
# inputs in L2 across the harness's flush? (issue 16.6, pygpubench#49)
#
#   sh bench/gpu/persist_l2.sh [SIZE]
#
# Builds vectorsum's harness twice with kbg_build.sh -- as shipped, and
# with -DKBG_NO_PERSIST_RESET (no cudaCtxResetPersistingL2Cache before the
# flush) -- and times submission_ok.cu and tests/hostile/cuda/persist_l2.cu
# with each in benchmark mode on one case of SIZE floats (default 4 Mi: 16
# MiB, inside the H100's persisting set-aside). Prints the mean per call
# of each pair; the hostile one must not beat the honest one with the
# reset. Run on a GPU host; raw results in ${OUT:-/tmp}/persist_l2.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
size=${1:-4194304}
out=${OUT:-/tmp}/persist_l2
mkdir -p "$out"
nvcc=$(command -v nvcc)
printf '#!/bin/sh\nexec %s -DKBG_NO_PERSIST_RESET "$@"\n' "$nvcc" >"$out/nvcc-noreset"
chmod +x "$out/nvcc-noreset"
printf 'size: %s; seed: 7; min_runs: 200; max_runs: 200\n' "$size" >"$out/case.txt"
for variant in reset noreset; do
	cc=$nvcc
	[ $variant = noreset ] && cc=$out/nvcc-noreset
	for sub in "$root/problems/pmpp/vectorsum/submission_ok.cu" \
		"$root/tests/hostile/cuda/persist_l2.cu"; do
		name=$(basename "$sub" .cu)
		w=$out/$variant-$name
		rm -rf "$w"
		NVCC=$cc sh "$root/problems/harness/cuda/kbg_build.sh" \
			-c "$out/cache-$variant" -w "$w" \
			"$root/problems/pmpp/vectorsum" "$sub" >/dev/null 2>"$w.log"
		(cd "$w" && KBH_SUBMISSION=$w/submission.so POPCORN_FD=3 \
			./eval.out benchmark "$out/case.txt" 3>report.txt \
			2>stderr.txt) || true
		mean=$(sed -n 's/^benchmark\.0\.mean: //p' "$w/report.txt")
		st=$(sed -n 's/^benchmark\.0\.status: //p' "$w/report.txt")
		echo "$variant $name: mean ${mean:-?} ns ${st:-}"
	done
done
