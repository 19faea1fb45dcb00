#!/bin/sh
# bench/gpu/build_time.sh: how long a new CUDA submission takes to build,
# a small kernel against cub- and thrust-heavy ones (issue 16.5), and the
# floor: a file holding only the task's header and an empty
# custom_kernel, which is nvcc's own cost of any new file. The
# harness comes from a warm cache, so each figure is the submission's own
# build into submission.so, as the worker makes it for new code (the
# worker's flags, through problems/harness/cuda/kbg_build.sh). Needs nvcc,
# no GPU.
#
#   bench/gpu/build_time.sh [-n RUNS] [-a ARCH]
#
# RUNS per submission (default 3), interleaved so that load affects all
# alike; prints each build's wall time, then per submission the median and
# its ratio to the small kernel's. With -t, also `nvcc --time` of the
# empty file's build: the time per nvcc phase (cudafe++, the host
# compiler, cicc, ptxas, the link).
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
runs=3
arch=90a
phases=0
while getopts n:a:t opt; do
	case $opt in
	n) runs=$OPTARG ;;
	a) arch=$OPTARG ;;
	t) phases=1 ;;
	*) echo "usage: build_time.sh [-n RUNS] [-a ARCH] [-t]" >&2; exit 2 ;;
	esac
done
work=$(mktemp -d "${TMPDIR:-/tmp}/kb-buildtime.XXXXXX")
trap 'rm -rf "$work"' EXIT
build="$here/problems/harness/cuda/kbg_build.sh"
printf '%s\n' '#include "task.h"' \
	'extern "C" void custom_kernel(const __half *, const __half *, __half *, size_t) {}' \
	>"$work/empty.cu"
# name problem submission
set -- \
	empty vectoradd "$work/empty.cu" \
	small vectoradd "$here/problems/pmpp/vectoradd/submission_ok.cu" \
	cub vectorsum "$here/tests/honest/cuda/cub_sum.cu" \
	thrust vectorsum "$here/tests/honest/cuda/thrust_sum.cu"
subs="$*"

# Warm the harness cache and the page cache: one build of each, untimed.
while [ $# -ge 3 ]; do
	sh "$build" -a "$arch" -c "$work/cache" -w "$work/warm-$1" \
		"$here/problems/pmpp/$2" "$3" >"$work/log" 2>&1 ||
		{ cat "$work/log"; echo "$1 does not build" >&2; exit 1; }
	shift 3
done

i=0
while [ $i -lt "$runs" ]; do
	i=$((i + 1))
	set -- $subs
	while [ $# -ge 3 ]; do
		s=$(date +%s.%N)
		sh "$build" -a "$arch" -c "$work/cache" -w "$work/$1-$i" \
			"$here/problems/pmpp/$2" "$3" >/dev/null 2>&1
		e=$(date +%s.%N)
		echo "$1 $e $s" | awk '{ printf "%s %.3f\n", $1, $2 - $3 }' \
			>>"$work/times"
		tail -n 1 "$work/times"
		shift 3
	done
done
if [ "$phases" = 1 ]; then
	# kbg_build.sh runs "$NVCC" with its own arguments: a wrapper adds
	# --time (the harness comes from the cache, so only the submission's
	# build goes through it).
	printf '#!/bin/sh\nexec nvcc --time "%s" "$@"\n' "$work/phases.csv" \
		>"$work/nvcc-time"
	chmod +x "$work/nvcc-time"
	NVCC=$work/nvcc-time sh "$build" -a "$arch" -c "$work/cache" \
		-w "$work/phases" "$here/problems/pmpp/vectoradd" "$work/empty.cu" \
		>/dev/null 2>&1
	echo "nvcc --time of the empty file's build, per phase:"
	awk -F ' *, *' 'NR > 1 { printf "  %-24s %9.1f ms\n", $2, $7 }' "$work/phases.csv"
fi
sort -k1,1 -k2,2n "$work/times" | awk -v runs="$runs" '
	{ t[$1, ++n[$1]] = $2 }
	END {
		m = int((runs + 1) / 2)
		base = t["small", m]
		split("empty small cub thrust", order, " ")
		for (k = 1; k <= 4; k++) {
			x = order[k]
			printf "%-6s median %.3f s (%.3f-%.3f), %.2fx the small kernel\n",
				x, t[x, m], t[x, 1], t[x, runs], t[x, m] / base
		}
	}'
