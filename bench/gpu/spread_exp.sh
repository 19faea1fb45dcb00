#!/bin/sh
# bench/gpu/spread_exp.sh: experiments behind the ranked-score spread
# (bench/gpu/run.sh (b)); a diagnostic, run on a GPU host.
#
#   bench/gpu/spread_exp.sh [-o OUTDIR] [-p PROBES] [-r RUNS] [VARIANT=FLAGS ...]
#
# 1. spread_probe.cu, PROBES processes (default 4): per-slot means, mixed
#    buffers, offsets (see its header);
# 2. vectoradd_fast through eval.out in leaderboard mode, RUNS processes
#    (default 8) per harness variant, the variants interleaved; each
#    VARIANT is the driver's own sources (kbg_main.cu, kbg_child.cpp,
#    kbg_parent.cpp, kbg_case.cpp) rebuilt with extra nvcc FLAGS (e.g.
#    "nohold=-DKBG_NO_HOLD"), always with -DKBG_SAMPLE_LOG (per-sample
#    times on stderr); default: "nohold=-DKBG_NO_HOLD" (the timed call
#    not held: the start event runs as soon as it is enqueued) and
#    "hold=" (the harness as built).
# 3. nvidia-smi read-only telemetry (clocks, temperatures, power) every
#    200 ms throughout.
# Summaries on stdout; with $OUT set, logs in $OUT/spread-exp.tgz.
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
out=/tmp/kb-spread
probes=4
runs=8
while getopts o:p:r: opt; do
	case $opt in
	o) out=$OPTARG ;;
	p) probes=$OPTARG ;;
	r) runs=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || set -- "nohold=-DKBG_NO_HOLD" "hold="
PATH=$PATH:/usr/local/cuda/bin
export PATH
rm -rf "$out"
mkdir -p "$out"
gen="-gencode=arch=compute_90a,code=sm_90a"
n=268435456

echo "== build"
nvcc -O3 $gen -o "$out/probe" "$here/bench/gpu/spread_probe.cu" &
pids=$!
sh "$here/problems/harness/cuda/kbg_build.sh" -c "$out/cache" -w "$out/va" \
	"$here/problems/pmpp/vectoradd" "$here/bench/gpu/vectoradd_fast.cu" >"$out/build.log" 2>&1 ||
	{ echo "build failed"; cat "$out/build.log"; }
objdir=$(dirname "$(ls "$out"/cache/*/kbg_dev.o | head -n 1)")
names=
for v in "$@"; do
	name=${v%%=*}
	flags=${v#*=}
	names="$names $name"
	(
		mkdir -p "$out/v_$name"
		cd "$out/va" || exit 1
		for s in kbg_main kbg_child kbg_parent kbg_case; do
			nvcc -O3 -std=c++17 -lineinfo $gen -Xcompiler -fvisibility=hidden \
				-DKBG_SAMPLE_LOG $flags -c "$s.cu" -o "$out/v_$name/$s.o" || exit 1
		done
		nvcc $gen -o "$out/v_$name/eval.out" "$out/v_$name/kbg_main.o" \
			"$out/v_$name/kbg_child.o" "$out/v_$name/kbg_parent.o" "$out/v_$name/kbg_case.o" \
			"$objdir/kbg_dev.o" "$objdir/kbg_model.o" "$objdir/kbg_sys.o" \
			"$objdir/harness.o" "$objdir/guard.o" "$objdir/reference.o" submission.o -lcuda -ldl
	) || echo "variant $name failed to build" &
	pids="$pids $!"
done
# shellcheck disable=SC2086
wait $pids
timeout 600 nvidia-smi --query-gpu=timestamp,temperature.gpu,temperature.memory,power.draw,clocks.sm,clocks.mem,clocks_event_reasons.active \
	--format=csv,noheader -lms 200 >"$out/smi.csv" 2>/dev/null &
smi=$!
echo "size: $n; seed: 777" >"$out/case.txt"

echo "== probe"
i=1
while [ "$i" -le "$probes" ]; do
	echo "-- probe process $i"
	"$out/probe" $n 12 20 "$out/probe.csv" | sed "s/^/p$i /" | tee -a "$out/probe.txt"
	i=$((i + 1))
done

echo "== harness variants:$names"
i=1
while [ "$i" -le "$runs" ]; do
	for name in $names; do
		r=$out/r_${name}_$i
		(cd "$out/va" && POPCORN_FD=3 timeout 120 "$out/v_$name/eval.out" \
			leaderboard "$out/case.txt" 3>"$r.txt" 2>"$r.log" >/dev/null)
		k() { sed -n "s/^benchmark.0.$1: //p" "$r.txt"; }
		echo "$name run $i: mean $(k mean) runs $(k runs) std $(k std) best $(k best) gap $(k gap_ns | cut -d" " -f1) hold $(k hold)/$(k hold_timeouts) stop $(k stop) temp $(sed -n 's/^system.temp_start: //p' "$r.txt")-$(sed -n 's/^system.temp_end: //p' "$r.txt")" |
			tee -a "$out/harness.txt"
	done
	i=$((i + 1))
done
for name in $names; do
	grep "^$name " "$out/harness.txt" | awk -v nm="$name" '{ m = $5; if (lo == "" || m < lo) lo = m; if (m > hi) hi = m }
		END { printf "%s: spread %.3f%% (min %.0f, max %.0f)\n", nm, (hi / lo - 1) * 100, lo, hi }'
done | tee -a "$out/harness.txt"
kill "$smi" 2>/dev/null
if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then
	(cd "$out" && tar czf "$OUT/spread-exp.tgz" $(ls probe.csv probe.txt harness.txt smi.csv r_*.txt r_*.log case.txt build.log 2>/dev/null))
fi
