#!/bin/bash
# bench/web/run.sh [BUILD]: the web leaderboard and /metrics under load,
# with wrk and the services on this machine.
#
#   1. pages: GET /web/lb/vectorsum_cpu with 100 ranked users and their
#      history (bench/web/seed.py), served from the page cache (what
#      visitors get between two folds), and once with the cache off
#      (KB_WEB_CACHE_MS=0: every request reads Redis and renders);
#   2. metrics cost: the same API read (GET /submissions/vectorsum_cpu/CPU,
#      a cached ranking, the cheapest request there is, so counting weighs
#      most) on two gateways side by side, KB_METRICS=1 and KB_METRICS=0,
#      in interleaved runs (ABBA, ROUNDS rounds), reporting each run and
#      the ratio of the means; and, since throughput on a shared 2-core
#      machine swings with whatever else runs, the gateway's own CPU time
#      per request (utime + stime from /proc, over the requests wrk
#      completed), which such noise moves far less.
#
# Environment: DURATION (s per run, 10), CONNS (64), THREADS (2), ROUNDS (4).
# Everything runs on 127.0.0.1 and stops at the end.
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
DURATION=${DURATION:-10}
CONNS=${CONNS:-64}
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-4}
DIR=$(mktemp -d /tmp/kb-bench-web.XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap cleanup EXIT
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
command -v wrk >/dev/null || { echo "wrk is missing (apt-get install wrk)" >&2; exit 1; }

RPORT=$(free_port)
redis-server --port "$RPORT" --bind 127.0.0.1 --save "" --appendonly no \
	--dir "$DIR" >"$DIR/redis.log" 2>&1 &
PIDS+=($!)
"$BUILD/devbroker/kb-devbroker" >"$DIR/devbroker.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do grep -q '^bootstrap=' "$DIR/devbroker.log" 2>/dev/null && break; sleep 0.1; done
BROKERS=$(sed -n 's/^bootstrap=\([^ ]*\).*/\1/p' "$DIR/devbroker.log" | head -1)
for _ in $(seq 50); do redis-cli -p "$RPORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
python3 "$HERE/seed.py" 100 | redis-cli -p "$RPORT" >/dev/null

declare -A GWPID
gateway() { # gateway NAME PORT VAR=VALUE...
	local name=$1 port=$2
	shift 2
	env KB_HTTP_PORT="$port" KB_REDIS_URL="redis://127.0.0.1:$RPORT" \
		KB_KAFKA_BROKERS="$BROKERS" KB_LOG_LEVEL=warn "$@" \
		"$BUILD/gateway/kb-gateway" >"$DIR/$name.log" 2>&1 &
	PIDS+=($!)
	GWPID[$port]=$!
	for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && return 0; sleep 0.1; done
	echo "gateway $name did not start; see $DIR/$name.log" >&2
	exit 1
}
PON=$(free_port); gateway on "$PON" KB_METRICS=1
POFF=$(free_port); gateway off "$POFF" KB_METRICS=0
PNC=$(free_port); gateway nocache "$PNC" KB_WEB_CACHE_MS=0

cpu_ticks() { # cpu_ticks PID: utime + stime in clock ticks
	awk '{print $14 + $15}' "/proc/$1/stat"
}
rate() { # rate PORT PATH: "requests/s cpu-us-per-request" of one wrk run
	local pid=${GWPID[$1]} t0 t1 n bad
	t0=$(cpu_ticks "$pid")
	wrk -t"$THREADS" -c"$CONNS" -d"${DURATION}s" --latency "http://127.0.0.1:$1$2" >"$DIR/wrk.out" 2>&1
	t1=$(cpu_ticks "$pid")
	bad=$(grep -E 'Non-2xx|Socket errors' "$DIR/wrk.out" || true)
	[ -z "$bad" ] || echo "  warning: $bad" >&2
	n=$(awk '/requests in/ {print $1}' "$DIR/wrk.out")
	echo "$(awk '/Requests\/sec/ {print $2}' "$DIR/wrk.out") $(python3 -c "print('%.2f' % (($t1 - $t0) * 1e6 / $(getconf CLK_TCK) / $n))")"
}

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "wrk -t$THREADS -c$CONNS -d${DURATION}s; $(date -u +%Y-%m-%dT%H:%MZ)"
BOARD=/web/lb/vectorsum_cpu
bytes=$(curl -s "http://127.0.0.1:$PON$BOARD" | wc -c)
rows=$(curl -s "http://127.0.0.1:$PON$BOARD" | grep -o '<tr data-user' | wc -l)
echo "board page: $bytes bytes, $rows ranked rows"
echo "pages/s, gateway CPU us/page, cached:   $(rate "$PON" "$BOARD")"
echo "pages/s, gateway CPU us/page, uncached: $(rate "$PNC" "$BOARD")"

API=/submissions/vectorsum_cpu/CPU
on=(); off=()
for r in $(seq "$ROUNDS"); do
	if [ $((r % 2)) -eq 1 ]; then
		a=$(rate "$PON" "$API"); b=$(rate "$POFF" "$API")
	else
		b=$(rate "$POFF" "$API"); a=$(rate "$PON" "$API")
	fi
	on+=("$a"); off+=("$b")
	echo "round $r: metrics on $a, off $b (req/s, CPU us/req)"
done
python3 - "${on[*]}" "${off[*]}" <<'PY'
import statistics, sys
on = [float(x) for x in sys.argv[1].split()]
off = [float(x) for x in sys.argv[2].split()]
rps_on, rps_off = statistics.mean(on[0::2]), statistics.mean(off[0::2])
cpu_on, cpu_off = statistics.median(on[1::2]), statistics.median(off[1::2])
print("api throughput mean: metrics on %.0f, off %.0f req/s; on/off %.4f"
      % (rps_on, rps_off, rps_on / rps_off))
print("api gateway CPU per request, median: on %.2f us, off %.2f us; on/off %.4f"
      % (cpu_on, cpu_off, cpu_on / cpu_off))
PY
