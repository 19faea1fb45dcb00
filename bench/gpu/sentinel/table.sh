#!/bin/sh
# bench/gpu/sentinel/table.sh: issue 29's honest figures in one device
# call: the per-call log of four PMPP examples (outside.sh: the parent's
# measurement and the score against the child's claim, per path) and the
# ranked spread of every PMPP example, 3 runs each, with the sentinel
# (the default build) and with the claim (-DKBG_NO_SENTINEL). The attacks:
# `bench/gpu/timing.sh hostile`. Results under $OUT (default
# /tmp/kb-table).
set -u
here=$(cd "$(dirname "$0")/../../.." && pwd)
o=${OUT:-/tmp/kb-table}
mkdir -p "$o"
case ":$PATH:" in *:/usr/local/cuda/bin:*) ;; *) PATH=$PATH:/usr/local/cuda/bin ;; esac
export PATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$o/gpu.txt" 2>&1
KBG_TIMEOUT=120 sh "$here/bench/gpu/sentinel/outside.sh" -o /tmp/tv \
	vectoradd grayscale histogram prefixsum 2>&1 | grep -v "^G watch" >"$o/diag.txt"
VARIANTS=${VARIANTS:-"sent claim"} KBG_TIMEOUT=150 \
	sh "$here/bench/gpu/timing.sh" -r "${RUNS:-3}" -o /tmp/ts spread >"$o/spread.txt" 2>&1
for f in /tmp/ts/rep-sent-*-1; do
	echo "## $f"
	grep -E "sentinel|outside|host_path|error|status|mean|claim_ns|measured_ns|low_claims" "$f"
done >"$o/cases.txt"
cat "$o/gpu.txt"
tail -20 "$o/spread.txt"
cat "$o/diag.txt"
