#!/bin/sh
# bench/gpu/hold/check.sh: the timing hold's edge cases on a GPU host.
#
#   bench/gpu/hold/check.sh [-a ARCH] [-c CACHE] [-o OUTDIR]
#
# vectoradd (n = 2^28) in benchmark mode with bench/gpu/vectoradd_fast.cu
# and the fixtures here; one line each: mean, status, error, hold,
# hold_timeouts. Expected:
#   fast       pass, no timeouts
#   sync       pass, every call's hold timed out (it synchronises inside
#              custom_kernel), mean about fast's
#   side       suspect (outlives-timing)
#   sidesync   pass, every hold timed out, mean about fast's (not ~0)
#   sidesleep  suspect (outlives-timing), or a mean about fast's
set -u
here=$(cd "$(dirname "$0")/../../.." && pwd)
arch=90a
out=/tmp/kb-hold-check
cache=
while getopts a:c:o: opt; do
	case $opt in
	a) arch=$OPTARG ;;
	c) cache=$OPTARG ;;
	o) out=$OPTARG ;;
	*) exit 2 ;;
	esac
done
PATH=$PATH:/usr/local/cuda/bin
export PATH
mkdir -p "$out"
va=$here/problems/pmpp/vectoradd
fx=$here/bench/gpu/hold
echo "size: 268435456; seed: 777" >"$out/case.txt"
[ -n "$cache" ] || cache=$out/cache
all="fast sync side sidesync sidesleep"
for v in $all; do
	sub=$fx/submission_$v.cu
	[ "$v" = fast ] && sub=$here/bench/gpu/vectoradd_fast.cu
	rm -rf "$out/$v"
	sh "$here/problems/harness/cuda/kbg_build.sh" -a "$arch" -c "$cache" \
		-w "$out/$v" "$va" "$sub" >"$out/$v.log" 2>&1 &
done
wait
for v in $all; do
	[ -x "$out/$v/eval.out" ] || { echo "$v: build failed (see $out/$v.log)"; continue; }
	(cd "$out/$v" && POPCORN_FD=3 timeout 120 ./eval.out benchmark "$out/case.txt" \
		3>"$out/$v.txt" >/dev/null 2>"$out/$v.err")
	rc=$?
	k() { sed -n "s/^benchmark.0.$1: //p" "$out/$v.txt"; }
	echo "$v: exit $rc mean $(k mean) runs $(k runs) status $(k status) hold $(k hold) timeouts $(k hold_timeouts) gap $(k gap_ns) wall $(k sample_wall_ns) error $(k error)"
done
