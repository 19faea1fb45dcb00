#!/bin/sh
# gpu-smoke.sh: runs every CUDA problem's examples in every mode through
# the worker (`kb-worker eval ... --json`) on this machine's GPU and prints
# one table: problem, example, mode, verdict, score, achieved GB/s, the
# worker's build and harness seconds, and whether the verdict is the
# expected one. Run scripts/gpu-smoke-raw.sh first: it checks the harness
# without the worker.
#
#   scripts/gpu-smoke.sh [-A] [-g GPU] [-o OUTDIR] [-p PROBLEMS] [-w KB_WORKER]
#
#   -A         every example in every mode (default: the correct example in
#              every mode, the wrong one and the template in test and
#              leaderboard mode -- they fail at their first check, and each
#              worker job pays a submission compile: this keeps the whole
#              run near 5 minutes on an H100)
#   GPU        the worker's device type (default H100)
#   OUTDIR     JSON results and logs (default /tmp/kb-gpu-smoke-worker);
#              with $OUT set (the device tool) smoke-worker-table.txt and
#              smoke-worker-results.tgz are copied there
#   -B DIR     (on the build machine) bundle kb-worker and the shared
#              libraries it needs beyond glibc into DIR, to carry to a GPU
#              host that lacks them; run there with -w DIR/kb-worker (a
#              lib/ next to the binary is put on LD_LIBRARY_PATH)
#   PROBLEMS   space-separated subset of problems/pmpp (default: all)
#   KB_WORKER  the kb-worker binary (default: $KB_WORKER, PATH, then
#              build*/worker/kb-worker under the repository)
#
# Expected: the correct example passes every mode (VERDICT_PASSED; a
# leaderboard run also gets a score); the wrong one and the template fail
# (VERDICT_FAILED). The last line reads "N passed, M failed"
# (expectations met / not met); exit 0 when all were met.
set -u

here=$(cd "$(dirname "$0")/.." && pwd)
gpu=H100
out=/tmp/kb-gpu-smoke-worker
bundle=
problems="vectoradd vectorsum grayscale histogram prefixsum sort conv2d matmul"
worker=${KB_WORKER:-}
all=0
while getopts AB:g:o:p:w: opt; do
	case $opt in
	A) all=1 ;;
	B) bundle=$OPTARG ;;
	g) gpu=$OPTARG ;;
	o) out=$OPTARG ;;
	p) problems=$OPTARG ;;
	w) worker=$OPTARG ;;
	*) exit 2 ;;
	esac
done
if [ -z "$worker" ]; then
	worker=$(command -v kb-worker 2>/dev/null || true)
fi
if [ -z "$worker" ]; then
	for c in "$here"/build/worker/kb-worker "$here"/build*/worker/kb-worker; do
		[ -x "$c" ] && worker=$c && break
	done
fi
[ -n "$worker" ] && [ -x "$worker" ] || {
	echo "gpu-smoke: kb-worker not found (set KB_WORKER or -w)" >&2
	exit 2
}
if [ -n "$bundle" ]; then
	mkdir -p "$bundle/lib"
	cp "$worker" "$bundle/kb-worker"
	ldd "$worker" | awk '/=> \// { print $3 }' | while read -r lib; do
		case $(basename "$lib") in
		libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.* | \
			ld-linux*.so.* | libresolv.so.*) ;;
		*) cp -L "$lib" "$bundle/lib/" ;;
		esac
	done
	echo "bundled $worker into $bundle ($(du -sh "$bundle" | cut -f1)); on the GPU host:"
	echo "  scripts/gpu-smoke.sh -w $bundle/kb-worker"
	exit 0
fi
if [ -d "$(dirname "$worker")/lib" ]; then
	LD_LIBRARY_PATH=$(cd "$(dirname "$worker")/lib" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	export LD_LIBRARY_PATH
fi
case ":$PATH:" in
*:/usr/local/cuda/bin:*) ;;
*) PATH=$PATH:/usr/local/cuda/bin ;;
esac
export PATH
mkdir -p "$out"
command -v python3 >/dev/null || { echo "gpu-smoke: python3 needed to read JSON" >&2; exit 2; }
t_start=$(date +%s)

# summarize JSON EXIT: "verdict score gbps build_s harness_s error"
summarize() {
	python3 "$here/scripts/eval-summary.py" "$1" "$2"
}

table=$out/table.txt
printf '%-10s %-7s %-11s %-13s %-11s %-14s %7s %7s %s\n' problem example mode \
	verdict score_s GB/s build_s run_s expect >"$table"
met=0
missed=0
for p in $problems; do
	for e in submission_ok submission_wrong template; do
		modes="test benchmark profile leaderboard"
		[ "$e" != submission_ok ] && [ "$all" = 0 ] && modes="test leaderboard"
		for mode in $modes; do
			j=$out/$p-$e-$mode.json
			"$worker" eval "$here/problems/pmpp/$p" "$here/problems/pmpp/$p/$e.cu" \
				--mode "$mode" --gpu "$gpu" --json >"$j" 2>"$out/$p-$e-$mode.err"
			rc=$?
			set -- $(summarize "$j" "$rc")
			verdict=$1 score=$2 gbps=$3 bs=$4 hs=$5 why=$6
			if [ "$e" = submission_ok ]; then want=passed; else want=failed; fi
			if [ "$verdict" = "$want" ]; then
				ok=OK
				met=$((met + 1))
			else
				ok="BAD(want $want; $why)"
				missed=$((missed + 1))
			fi
			short=$(echo "$e" | sed 's/submission_//')
			printf '%-10s %-7s %-11s %-13s %-11s %-14s %7s %7s %s\n' "$p" "$short" \
				"$mode" "$verdict" "$score" "$gbps" "$bs" "$hs" "$ok" | tee -a "$table"
		done
	done
done
echo
echo "== table ($table), total $(( $(date +%s) - t_start )) s"
cat "$table"
echo "$met passed, $missed failed"
if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then
	cp "$table" "$OUT/smoke-worker-table.txt"
	(cd "$out" && tar czf "$OUT/smoke-worker-results.tgz" ./*.json ./*.err 2>/dev/null)
fi
[ "$missed" = 0 ]
