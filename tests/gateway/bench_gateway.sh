#!/bin/bash
# Throughput of kb-gateway: GET /health, GET /submissions/{lb}/{gpu} (the
# ranking, cached) and POST /submission/{lb}/{gpu}/test, with wrk.
#
#   tests/gateway/bench_gateway.sh [build-dir]      (default: build)
#
# The gateway is pinned to CPUs 0-1 (GW_CPUS), wrk, redis-server and the
# dev broker to others, so the numbers are those of "2 cores". Needs wrk,
# redis-server, redis-cli and taskset. Reference (H100 box, CPUs 0-1,
# KB_HTTP_THREADS=2..4): GET ~70-80k req/s, POST ~10-13k submissions/s.
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
SRC=$(cd "$(dirname "$0")/../.." && pwd)
GW_CPUS=${GW_CPUS:-0,1}
LOAD_CPUS=${LOAD_CPUS:-2-7}
PORT=${PORT:-0} # 0: the gateway picks a free one and logs it
DIR=$(mktemp -d)
RSOCK=$DIR/redis.sock # no port to collide with anything
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	redis-cli -s "$RSOCK" shutdown nosave >/dev/null 2>&1 || true
	rm -rf "$DIR"
}
trap cleanup EXIT
redis-server --port 0 --unixsocket "$RSOCK" --save "" --appendonly no \
	--daemonize no >"$DIR/redis.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do redis-cli -s "$RSOCK" ping >/dev/null 2>&1 && break; sleep 0.1; done
"$BUILD/devbroker/kb-devbroker" >"$DIR/broker.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do grep -q bootstrap= "$DIR/broker.log" && break; sleep 0.1; done
BR=$(grep -o 'bootstrap=[^ ]*' "$DIR/broker.log" | head -1 | cut -d= -f2)
R="redis-cli -s $RSOCK"
for i in $(seq 1 100); do
	$R ZADD kb:rank:gw_sum_cpu:CPU "0.$i" "u$i" >/dev/null
	$R HSET kb:rankinfo:gw_sum_cpu:CPU "u$i" "$i:$i" >/dev/null
	$R HSET "kb:user:u$i" name "user$i" >/dev/null
done
$R SET kb:cli:benchcli ub >/dev/null
$R HSET kb:user:ub name bench banned 0 >/dev/null
cat >"$DIR/post.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["X-Popcorn-Cli-Id"] = "benchcli"
wrk.headers["Content-Type"] = "multipart/form-data; boundary=XyZ"
wrk.body = "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"s.c\"\r\n\r\nfloat custom_kernel(const float *d, unsigned long n) { return 0; }\r\n--XyZ--\r\n"
LUA
# One user and one address make all the load: the public-instance limits
# (queued jobs per user, connections per address) would measure themselves.
KB_REDIS_URL=unix:$RSOCK KB_KAFKA_BROKERS=$BR KB_HTTP_PORT=$PORT \
	KB_MAX_QUEUED_PER_GPU=0 KB_HTTP_PER_IP_CONNECTIONS=0 \
	KB_HTTP_THREADS=${THREADS:-2} KB_LOG_LEVEL=warn KB_PROBLEMS="$SRC/tests/gateway/data" \
	taskset -c "$GW_CPUS" "$BUILD/gateway/kb-gateway" >"$DIR/gw.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q 'listening on ' "$DIR/gw.log" && break; sleep 0.1; done
PORT=$(sed -n 's/.*listening on [^ ]*:\([0-9]*\) .*/\1/p' "$DIR/gw.log" | tail -1)
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.1; done
for q in /health "/submissions/gw_sum_cpu/CPU?limit=10" /submissions/gw_sum_cpu/CPU; do
	printf 'GET  %-40s ' "$q"
	taskset -c "$LOAD_CPUS" wrk -t${WRK_THREADS:-4} -c${WRK_CONNS:-64} -d5s "http://127.0.0.1:$PORT$q" |
		grep -E 'Requests/sec|Non-2xx' | tr -s ' ' | tr '\n' ' '
	echo
done
printf 'POST %-40s ' /submission/gw_sum_cpu/CPU/test
taskset -c "$LOAD_CPUS" wrk -t${WRK_THREADS:-4} -c${WRK_CONNS:-64} -d5s -s "$DIR/post.lua" \
	"http://127.0.0.1:$PORT/submission/gw_sum_cpu/CPU/test" |
	grep -E 'Requests/sec|Non-2xx' | tr -s ' ' | tr '\n' ' '
echo
echo "submissions recorded: $($R GET kb:next_sub_id)"
