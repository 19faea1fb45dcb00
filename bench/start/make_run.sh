#!/bin/bash
# Time to ready of `make run`: from a fresh clone (deps present, nothing
# built), then a second `make run` with nothing to rebuild. Prints, for each,
# the seconds to the banner ("KernelBot is up") and to the CPU worker
# consuming ("consuming kb.submissions.CPU" in its log).
#
#   bench/start/make_run.sh [REPO]     (REPO: a clone source; this tree's)
set -euo pipefail
REPO=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
T=$(mktemp -d /tmp/kb-start.XXXXXX)
git clone -q "$REPO" "$T/src"
cd "$T/src"

# once LABEL: one `make run` in a foreground-like process group; waits for
# the worker to consume, then stops it with SIGINT as Ctrl-C would.
once() {
	local label=$1 t0 pg banner="" ready=""
	rm -rf "$T/run"
	t0=$(date +%s.%N)
	KB_HTTP_PORT=0 KB_RUN_DIR="$T/run" python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.setsid()
os.execvp("make", ["make", "run"])' >"$T/$label.out" 2>&1 &
	pg=$!
	while kill -0 "$pg" 2>/dev/null; do
		now=$(date +%s.%N)
		[ -z "$banner" ] && grep -q 'KernelBot is up' "$T/$label.out" &&
			banner=$(echo "$now - $t0" | bc)
		[ -z "$ready" ] && grep -qs 'consuming kb.submissions.CPU' "$T/run/worker-cpu.log" &&
			ready=$(echo "$now - $t0" | bc)
		[ -n "$banner" ] && [ -n "$ready" ] && break
		sleep 0.5
	done
	kill -INT -- "-$pg" 2>/dev/null || true
	wait "$pg" 2>/dev/null || true
	printf '%s: banner %.0f s, worker consuming %.0f s\n' "$label" \
		"${banner:-0}" "${ready:-0}"
}
once fresh
once second
rm -rf "$T"
