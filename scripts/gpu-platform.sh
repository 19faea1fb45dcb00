#!/bin/bash
# gpu-platform.sh: one submission through the whole platform on this
# machine: scripts/run.sh starts it (the dev broker, Redis, the ranker,
# the gateway, a CPU worker and one worker per NVIDIA GPU), `kb submit`
# sends FILE in each mode and waits for its result, then the board's
# ranking and the worker's last log lines are printed and the platform is
# stopped. bench/gpu/upstream/platform.sh does the same for an upstream
# problem set synced into the platform.
#
#   scripts/gpu-platform.sh [-d DIST] [-l BOARD] [-g GPU] [-m MODES]
#                           [-o OUTDIR] [FILE]
#
#   DIST     scripts/bundle.sh's output or a build directory (default:
#            dist when it exists, else build)
#   BOARD    default vectoradd_py
#   GPU      default H100
#   MODES    default "test leaderboard"
#   OUTDIR   the platform's logs and each submission's output (default
#            /tmp/kb-gpu-platform); with $OUT set (the device tool) the
#            submissions' output and the worker's log are copied there
#   FILE     default problems/pmpp_py/vectoradd/submission_ok.py
#
# KB_PROBLEMS defaults to the CPU, PMPP and PMPP Python sets; KB_PYTHON
# to /opt/torch/.venv/bin/python3 where it exists (else run.sh looks for
# one with torch). Exit 0 when every submission's `kb submit` succeeded
# (for a ranked one: passed and ranked).
set -u

here=$(cd "$(dirname "$0")/.." && pwd)
dist=
board=vectoradd_py
gpu=H100
modes="test leaderboard"
out=/tmp/kb-gpu-platform
while getopts d:l:g:m:o: opt; do
	case $opt in
	d) dist=$OPTARG ;;
	l) board=$OPTARG ;;
	g) gpu=$OPTARG ;;
	m) modes=$OPTARG ;;
	o) out=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
file=${1:-$here/problems/pmpp_py/vectoradd/submission_ok.py}
if [ -z "$dist" ]; then
	dist=$here/build
	[ -d "$here/dist/bin" ] && dist=$here/dist
fi
dist=$(cd "$dist" && pwd) || exit 2
kb=$dist/bin/kb
[ -x "$kb" ] || kb=$dist/client/kb
[ -x "$kb" ] || { echo "gpu-platform: no kb client in $dist" >&2; exit 2; }
export KB_PROBLEMS=${KB_PROBLEMS:-$here/problems/cpu.yaml:$here/problems/pmpp.yaml:$here/problems/pmpp_py.yaml}
if [ -z "${KB_PYTHON:-}" ] && [ -x /opt/torch/.venv/bin/python3 ]; then
	export KB_PYTHON=/opt/torch/.venv/bin/python3
fi
case ":$PATH:" in
*:/usr/local/cuda/bin:*) ;;
*) export PATH=$PATH:/usr/local/cuda/bin ;;
esac
rm -rf "${out:?}"
mkdir -p "$out"

KB_HTTP_PORT=0 KB_RUN_DIR=$out/run bash "$here/scripts/run.sh" "$dist" \
	>"$out/run.txt" 2>&1 &
runpid=$!
stop() {
	kill -INT "$runpid" 2>/dev/null
	for _ in $(seq 1 60); do
		kill -0 "$runpid" 2>/dev/null || return
		sleep 0.5
	done
	kill -KILL "$runpid" 2>/dev/null
}
trap stop EXIT
# The workers' start-up checks build every harness first: minutes on a
# GPU host.
for _ in $(seq 1 600); do
	grep -q 'KernelBot is up' "$out/run.txt" && break
	kill -0 "$runpid" 2>/dev/null || break
	sleep 0.5
done
grep -q 'KernelBot is up' "$out/run.txt" || {
	echo "gpu-platform: the platform did not come up:" >&2
	tail -20 "$out/run.txt" >&2
	exit 1
}
api=$(sed -n 's/^ *API *\(http[^ ]*\).*/\1/p' "$out/run.txt" | head -1)
cli=$(sed -n 's/^ *CLI id *\([^ ]*\).*/\1/p' "$out/run.txt" | head -1)
echo "platform up: api=$api"

rc=0
for m in $modes; do
	echo "== kb submit -l $board -g $gpu -m $m $(basename "$file")"
	s=$(date +%s.%N)
	KB_CLI_ID=$cli POPCORN_API_URL=$api "$kb" submit --timeout 400 -l "$board" \
		-g "$gpu" -m "$m" "$file" >"$out/kb-$m.txt" 2>&1 || rc=1
	e=$(date +%s.%N)
	tail -15 "$out/kb-$m.txt"
	awk -v s="$s" -v e="$e" 'BEGIN { printf "(%.1f s from submit to result)\n", e - s }'
done
echo "== GET /submissions/$board/$gpu"
curl -s "$api/submissions/$board/$gpu"
echo
# run.sh names the logs worker-cpu.log and worker-<gpu>-<index>.log.
worker_log=
for f in "$out/run/worker-$gpu-"*.log "$out/run/worker-$(echo "$gpu" | tr '[:upper:]' '[:lower:]').log"; do
	[ -f "$f" ] && worker_log=$f && break
done
if [ -n "$worker_log" ]; then
	echo "== $(basename "$worker_log"), last lines"
	tail -5 "$worker_log"
fi
if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then
	cp "$out"/kb-*.txt "$OUT/" 2>/dev/null
	[ -n "$worker_log" ] && cp "$worker_log" "$OUT/"
fi
exit $rc
