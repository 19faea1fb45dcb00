#!/bin/bash
# `make bench`: starts the platform (scripts/run.sh) on a free port (the
# gateway picks it: KB_BENCH_PORT=0, unless set), pushes N submissions
# through it with bench/pipeline.py, prints the overhead, and stops the
# platform.   bench/pipeline.sh [BUILD] [N]
set -euo pipefail
BUILD=${1:-build}
N=${2:-200}
PORT=${KB_BENCH_PORT:-0}
LOG=$(mktemp /tmp/kb-bench.XXXXXX)
KB_PROBLEMS=${KB_PROBLEMS:-$PWD/problems/cpu.yaml} KB_HTTP_PORT=$PORT \
	scripts/run.sh "$BUILD" >"$LOG" 2>&1 &
RUN=$!
trap 'kill -INT $RUN 2>/dev/null; wait $RUN 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
	grep -q 'CLI id' "$LOG" && break
	kill -0 $RUN 2>/dev/null || { cat "$LOG"; exit 1; }
	sleep 0.1
done
CLI=$(grep -o 'CLI id  *[0-9a-f]*' "$LOG" | awk '{print $3}')
API=$(grep -o 'API  *http://[^ ]*' "$LOG" | awk '{print $2}')
RP=$(grep -o 'redis://127.0.0.1:[0-9]*' "$LOG" | head -1 | cut -d: -f3)
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%F)"
python3 bench/pipeline.py --api "$API" --cli-id "$CLI" \
	--redis-port "$RP" -n "$N"
