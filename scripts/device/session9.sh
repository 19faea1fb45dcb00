#!/bin/bash
# Device run 9 (H100), one part per call (each within the 10-minute cap):
#
#   bash scripts/device/session9.sh py       Python: test-mode turnaround
#        of vectoradd_py with the child spawned first against the harness
#        before (dist/old: a copy of it), alternating; the Python hostile
#        suite (GPU cases included); vectoradd_py's examples in every mode
#   bash scripts/device/session9.sh smoke1   the CUDA smoke (every mode of
#        the correct example, the others in test and leaderboard mode) of
#        vectoradd matmul conv2d sort, after the kbg_main.cu split
#   bash scripts/device/session9.sh smoke2   the smoke of vectorsum
#        grayscale histogram prefixsum, then the honest-patterns suite in
#        test, benchmark and leaderboard mode
#
# Run from the repository root with dist/ built (scripts/bundle.sh). Output
# on stdout; tables to $OUT.
set -u
export PATH=/usr/local/cuda/bin:$PWD/dist/bin:$PATH
export KB_GPU=${KB_GPU:-H100}
PY=/opt/torch/.venv/bin/python3
W=$PWD/dist/bin/kb-worker
R=/tmp/s9
mkdir -p "$R"
say() { printf '\n==== %s\n' "$*"; }

py_turn() {
	local i t s e n=${PYN:-4}
	say "Python turnaround, vectoradd_py submission_ok.py, test mode, kb-worker eval (old = before the early spawn)"
	for i in $(seq "$n"); do
		for t in dist/old "$PWD"; do
			s=$(date +%s%N)
			KB_PYTHON=$PY KB_WORKDIR=$R/w KB_CACHE_DIR=$R/c timeout 120 "$W" eval \
				"$t/problems/pmpp_py/vectoradd" "$t/problems/pmpp_py/vectoradd/submission_ok.py" \
				--mode test --json >"$R/py.json" 2>"$R/py.err"
			e=$(date +%s%N)
			$PY -c '
import json, sys
r = json.load(open(sys.argv[1]))
runs = r.get("runs") or [{}]
print("%-8s wall %6.2f s  harness %5.2f s  %s %s" % (sys.argv[2], int(sys.argv[3]) / 1e9,
      runs[0].get("duration_s") or 0, r.get("verdict"), (r.get("error") or "")[:100]))
' "$R/py.json" "$([ "$t" = dist/old ] && echo old || echo new)" "$((e - s))"
		done
	done
}

py() {
	py_turn
	say "the same with nothing else: python -c 'import torch' x3, and with torch.cuda.init()"
	for i in 1 2 3; do /usr/bin/time -f "%e s import torch" $PY -c 'import torch' ; done 2>&1
	for i in 1 2 3; do /usr/bin/time -f "%e s import torch + cuda init" $PY -c 'import torch; torch.cuda.init(); torch.zeros(1, device="cuda")' ; done 2>&1
	say "Python hostile suite (GPU cases included)"
	(cd tests/pyharness && KB_PYTHON=$PY timeout 300 $PY gpu_run.py hostile 2>&1 | tail -30)
	say "vectoradd_py, every example, every mode"
	(cd tests/pyharness && KB_PYTHON=$PY timeout 200 $PY gpu_run.py problems vectoradd 2>&1 | tail -30)
}

smoke() { # problems, seconds
	timeout "$2" sh scripts/gpu-smoke.sh -w "$W" -p "$1" 2>&1 | tail -45
	cp /tmp/kb-gpu-smoke-worker/smoke-worker-table.txt "$OUT/smoke-$3.txt" 2>/dev/null
}

case ${1:-} in
py) py ;;
pyturn) py_turn ;;
smoke1) smoke "vectoradd matmul conv2d sort" 540 1 ;;
smoke2)
	smoke "vectorsum grayscale histogram prefixsum" 300 2
	say "honest patterns, test benchmark leaderboard"
	HONEST_MODES="test benchmark leaderboard" timeout 270 sh tests/honest/cuda/honest.sh run "$W" H100 2>&1 | tail -40
	;;
*) echo "usage: session9.sh py|smoke1|smoke2" >&2; exit 2 ;;
esac
