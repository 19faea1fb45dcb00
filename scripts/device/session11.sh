#!/bin/bash
# Device run 11 (H100): Python jobs with held runs (worker/run/ready.h), one
# part per call (each within the 10-minute cap):
#
#   bash scripts/device/session11.sh turn   test-mode turnaround of
#        vectoradd_py's PyTorch example through `kb-worker eval --repeat`,
#        KB_PYTHON_READY=0 and 1 alternating; then every example of
#        vectoradd_py in test mode, held
#   bash scripts/device/session11.sh modes   the PyTorch and Triton
#        examples in benchmark and leaderboard mode, and the upstream-shaped
#        fixture, held (the first run of each job)
#   bash scripts/device/session11.sh inline   the newer problems'
#        inline-CUDA examples in test mode (INLINE names some)
#   bash scripts/device/session11.sh hostile   the Python hostile suite,
#        GPU cases included, each case's harness started as a held run
#        (KBH_TEST_HELD=1)
#   bash scripts/device/session11.sh platform   a ranked Python submission
#        through the platform (scripts/run.sh dist, the kb client)
#
# Run from the repository root with dist/ built (scripts/bundle.sh).
# Output on stdout, copies under $OUT.
set -u
export PATH=/usr/local/cuda/bin:$PWD/dist/bin:$PATH
export KB_GPU=H100 KB_PYTHON=/opt/torch/.venv/bin/python3
export KB_WORKDIR=/tmp/s11/w KB_CACHE_DIR=/tmp/s11/c
W=$PWD/dist/bin/kb-worker
P=$PWD/problems/pmpp_py/vectoradd
U=$PWD/tests/worker/data/upstream_py/vectoradd
mkdir -p /tmp/s11 "$OUT"
say() { printf '\n==== %s\n' "$*"; }

turn() {
	local i
	nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
	say "turnaround, vectoradd_py submission_ok.py, test mode, --repeat 4 (ready 0 / 1 alternating, 3 rounds)"
	for i in 1 2 3; do
		for r in 0 1; do
			KB_PYTHON_READY=$r timeout 200 "$W" eval "$P" "$P/submission_ok.py" \
				--mode test --repeat 4 2>&1 >/dev/null | grep "job " | sed "s/^/ready=$r /"
		done
	done | tee "$OUT/turn.txt"
	say "every example in test mode (--repeat 2: the second job's line; the inline one builds first: no held run)"
	for f in submission_ok submission_triton submission_inline template submission_wrong; do
		printf '%-20s test         ' "$f"
		timeout 280 "$W" eval "$P" "$P/$f.py" --mode test --repeat 2 2>&1 >/dev/null |
			grep "job 2/2" || echo "(no line)"
	done | tee "$OUT/examples.txt"
}

modes() {
	say "the PyTorch and Triton examples in the timed modes (held first run), and the upstream fixture"
	for f in submission_ok submission_triton; do
		for m in benchmark leaderboard; do
			printf '%-20s %-12s ' "$f" "$m"
			timeout 280 "$W" eval "$P" "$P/$f.py" --mode $m --repeat 2 2>&1 >/dev/null |
				grep "job 2/2" || echo "(no line)"
		done
	done | tee "$OUT/modes.txt"
	for f in submission_ok submission_wrong; do
		for m in test leaderboard; do
			printf 'upstream %-15s %-12s ' "$f" "$m"
			timeout 120 "$W" eval "$U" "$U/$f.py" --mode $m --repeat 2 2>&1 >/dev/null |
				grep "job 2/2" || echo "(no line)"
		done
	done | tee -a "$OUT/modes.txt"
}

hostile() {
	say "Python hostile suite, held runs, GPU cases included"
	(cd tests/pyharness && KBH_TEST_HELD=1 timeout 560 $KB_PYTHON gpu_run.py hostile 2>&1 | tail -30) |
		tee "$OUT/hostile-held.txt"
}

platform() {
	local R=/tmp/s11/p api cli runpid
	rm -rf $R; mkdir -p $R
	export KB_PROBLEMS=$PWD/problems/cpu.yaml:$PWD/problems/pmpp.yaml:$PWD/problems/pmpp_py.yaml
	KB_HTTP_PORT=0 KB_RUN_DIR=$R/run bash scripts/run.sh dist >$R/run.txt 2>&1 &
	runpid=$!
	for _ in $(seq 1 400); do grep -q 'KernelBot is up' $R/run.txt && break; sleep 0.5; done
	api=$(sed -n 's/^ *API *\(http[^ ]*\).*/\1/p' $R/run.txt | head -1)
	cli=$(sed -n 's/^ *CLI id *\([^ ]*\).*/\1/p' $R/run.txt | head -1)
	echo "api=$api cli=$cli"
	printf 'cli_id: %s\n' "$cli" >$R/popcorn.yaml
	for m in test leaderboard; do
		( time kb --api-url "$api" --config $R/popcorn.yaml submit --timeout 400 -l vectoradd_py \
			-g H100 -m $m problems/pmpp_py/vectoradd/submission_ok.py ) >$R/kb-$m.txt 2>&1
		tail -12 $R/kb-$m.txt
	done
	curl -s "$api/submissions/vectoradd_py/H100"; echo
	grep -i "held\|ready" $R/run/worker-H100-0.log | tail -5
	kill -INT $runpid; sleep 15; kill -KILL $runpid 2>/dev/null
	cp $R/kb-*.txt $R/run/worker-H100-0.log "$OUT/" 2>/dev/null
}

# The inline-CUDA examples of the newer problems in test mode (each
# builds its extension with load_inline in the compile step first).
inline() {
	local p
	say "inline-CUDA examples, test mode (compile step, then the run)"
	for p in ${INLINE:-grayscale histogram prefixsum sort conv2d matmul rmsnorm grouped_gemm}; do
		printf '%-13s ' "$p"
		timeout 170 "$W" eval "$PWD/problems/pmpp_py/$p" "$PWD/problems/pmpp_py/$p/submission_inline.py" \
			--mode test --json >/tmp/s11/inline.json 2>/tmp/s11/inline.err
		$KB_PYTHON -c 'import json, sys
try:
    r = json.load(open(sys.argv[1]))
    print(r.get("verdict"), "build_s=%.1f harness_s=%.1f" % (r.get("build_s", 0), r.get("harness_s", 0)),
          (r.get("error") or "")[:150])
except Exception as e:
    print("no result:", e)' /tmp/s11/inline.json
	done | tee "$OUT/inline.txt"
}

case ${1:-} in
turn) turn ;;
modes) modes ;;
inline) inline ;;
hostile) hostile ;;
platform) platform ;;
*) echo "usage: session11.sh turn|modes|inline|hostile|platform" >&2; exit 2 ;;
esac
