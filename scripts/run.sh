#!/bin/bash
# `make run`: the whole platform in the foreground on 127.0.0.1.
#
# Starts, in order: kb-devbroker (Kafka protocol, in memory), redis-server
# (a throwaway one on a loopback port, unless KB_REDIS_URL points at yours),
# kb-ranker, kb-gateway, one CPU worker, and one worker per NVIDIA GPU that
# nvidia-smi finds. Then it creates a local user and prints the API address
# and a CLI id. Ctrl-C stops everything (SIGTERM to each service, which
# drains; a second Ctrl-C kills at once).
#
# Environment: KB_HTTP_PORT (8000; 0: any free port, printed),
# KB_ADMIN_TOKEN (random if unset),
# KB_REDIS_URL (external Redis), KB_KAFKA_BROKERS (external Kafka: no dev
# broker is started), KB_PROBLEMS, KB_RUN_DIR (logs and data; a temp dir),
# KB_RUN_REDIS_MAXMEMORY (the started redis-server's maxmemory; 1gb),
# KB_PYTHON (the workers' Python; one with torch is looked for).
set -euo pipefail

BUILD=${1:-build}
BIN=$(cd "$BUILD" && pwd)
# tool NAME FOLDER: a build tree's FOLDER/NAME, or a bundle's bin/NAME
# (scripts/bundle.sh, for a GPU host without our -dev packages).
tool() {
	if [ -x "$BIN/bin/$1" ]; then echo "$BIN/bin/$1"; else echo "$BIN/$2/$1"; fi
}
export KB_HTTP_PORT=${KB_HTTP_PORT:-8000}
RUN_DIR=${KB_RUN_DIR:-$(mktemp -d /tmp/kb-run.XXXXXX)}
mkdir -p "$RUN_DIR"
PIDS=()

log() { printf 'kb-run: %s\n' "$*" >&2; }

stop_all() {
	# A second Ctrl-C while the services drain kills them at once.
	trap 'kill_all; exit 130' INT TERM HUP
	trap - EXIT
	log "stopping"
	for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
		kill -TERM "${PIDS[$i]}" 2>/dev/null || true
	done
	for pid in "${PIDS[@]}"; do
		for _ in $(seq 1 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	log "stopped; logs in $RUN_DIR"
}
kill_all() {
	trap - INT TERM HUP EXIT
	log "killing every service"
	for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
}
trap 'stop_all; exit 130' INT TERM HUP
trap stop_all EXIT

# start NAME COMMAND...: runs a service with its output in $RUN_DIR/NAME.log
# (a fresh one: the addresses are read back from these logs). Each runs in
# a session of its own, so a terminal's Ctrl-C reaches only this script,
# which stops the services in order (stop_all) instead of all of them
# exiting at once under it.
NAMES=()
start() {
	local name=$1
	shift
	setsid "$@" >"$RUN_DIR/$name.log" 2>&1 &
	PIDS+=($!)
	NAMES+=("$name")
	log "$name started (pid $!, log $RUN_DIR/$name.log)"
}

wait_for() { # wait_for DESCRIPTION SECONDS COMMAND...
	local what=$1 secs=$2
	shift 2
	for _ in $(seq 1 $((secs * 10))); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 0.1
	done
	log "$what did not come up; see $RUN_DIR"
	exit 1
}

# A port below the kernel's ephemeral range, which no port-0 bind and no
# outgoing connection is ever given (another process may still hold it:
# the caller retries).
fixed_port() {
	local lo
	lo=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
	[ "$lo" -gt 11024 ] || lo=11024
	echo $((10000 + (RANDOM * 32768 + RANDOM) % (lo - 10000)))
}

# start_redis: redis-server on a loopback port; a port that turns out to be
# taken is retried with another, and the server that answers must be the
# one started (INFO's process_id), not someone else's on that port. A
# bound on memory, and noeviction: every key is state (a ranking, a login,
# a rate window), so a full Redis refuses writes (the gateway answers 503)
# rather than silently dropping some.
start_redis() {
	mkdir -p "$RUN_DIR/redis"
	for _ in $(seq 1 20); do
		REDIS_PORT=$(fixed_port)
		start redis redis-server --port "$REDIS_PORT" --bind 127.0.0.1 \
			--dir "$RUN_DIR/redis" --save "" --appendonly no --daemonize no \
			--maxmemory "${KB_RUN_REDIS_MAXMEMORY:-1gb}" \
			--maxmemory-policy noeviction
		local pid=${PIDS[-1]}
		for _ in $(seq 1 100); do
			kill -0 "$pid" 2>/dev/null || break
			if redis-cli -p "$REDIS_PORT" info server 2>/dev/null |
				grep -q "^process_id:$pid"; then
				return 0
			fi
			sleep 0.1
		done
		kill "$pid" 2>/dev/null || true
		unset 'PIDS[-1]' 'NAMES[-1]'
		log "redis-server did not come up on port $REDIS_PORT; another port"
	done
	log "redis-server did not come up; see $RUN_DIR/redis.log"
	exit 1
}

if [ -z "${KB_KAFKA_BROKERS:-}" ]; then
	start devbroker "$(tool kb-devbroker devbroker)"
	DEV_BROKER=1
	wait_for "kb-devbroker" 10 grep -q '^bootstrap=' "$RUN_DIR/devbroker.log"
	KB_KAFKA_BROKERS=$(sed -n 's/^bootstrap=\([^ ]*\).*/\1/p' "$RUN_DIR/devbroker.log" | head -1)
fi
export KB_KAFKA_BROKERS

if [ -z "${KB_REDIS_URL:-}" ]; then
	start_redis
	KB_REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
fi
export KB_REDIS_URL

if [ -z "${KB_ADMIN_TOKEN:-}" ]; then
	KB_ADMIN_TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
	GENERATED_TOKEN=1
fi
export KB_ADMIN_TOKEN

# With the dev broker, consumers use short sessions so that a crashed
# worker's job moves to its restart within seconds (a real cluster keeps
# librdkafka's defaults unless KB_CONSUMER_EXTRA says otherwise). The mock
# answers an empty fetch only after fetch.wait.max.ms, so a short wait keeps
# each Kafka hop at a few milliseconds.
if [ -z "${KB_CONSUMER_EXTRA:-}" ] && [ -n "${DEV_BROKER:-}" ]; then
	export KB_CONSUMER_EXTRA="session.timeout.ms=4000,heartbeat.interval.ms=250,fetch.wait.max.ms=2"
fi
# Python problems need an interpreter with torch (a worker whose Python
# cannot run its Python problems refuses to serve): the `python3` on PATH
# when it has torch, else Debian's with python3-torch (scripts/deps.sh).
if [ -z "${KB_PYTHON:-}" ] && ! python3 -c 'import torch' >/dev/null 2>&1 &&
	/usr/bin/python3 -c 'import torch' >/dev/null 2>&1; then
	export KB_PYTHON=/usr/bin/python3
	log "KB_PYTHON=/usr/bin/python3 (the python3 on PATH lacks torch)"
fi
export KB_WORKDIR=${KB_WORKDIR:-$RUN_DIR/work}
mkdir -p "$KB_WORKDIR"

# Prometheus /metrics: every service on a loopback port of its own, never
# the public API port (listed at the end; a port below the ephemeral
# range, as redis-server's).
METRICS=()
RANKER_METRICS=$(fixed_port)
KB_METRICS_PORT=$RANKER_METRICS start ranker "$(tool kb-ranker ranker)"
METRICS+=("ranker     http://127.0.0.1:$RANKER_METRICS/metrics")
GATEWAY_METRICS=$(fixed_port)
KB_METRICS_PORT=$GATEWAY_METRICS start gateway "$(tool kb-gateway gateway)"
METRICS+=("gateway    http://127.0.0.1:$GATEWAY_METRICS/metrics")
WORKER_METRICS=$(fixed_port)
KB_METRICS_PORT=$WORKER_METRICS KB_GPU=CPU start worker-cpu "$(tool kb-worker worker)"
METRICS+=("worker-cpu http://127.0.0.1:$WORKER_METRICS/metrics")
WORKERS=("CPU worker-cpu")

if command -v nvidia-smi >/dev/null 2>&1; then
	i=0
	while IFS= read -r name; do
		# "NVIDIA H100 80GB HBM3" -> H100
		gpu=$(printf '%s\n' "$name" | grep -oE '(H100|H200|A100|L4|T4|B200|A10G|L40S)' | head -1 || true)
		if [ -n "$gpu" ]; then
			port=$(fixed_port)
			KB_METRICS_PORT=$port CUDA_VISIBLE_DEVICES=$i KB_GPU=$gpu \
				start "worker-$gpu-$i" "$(tool kb-worker worker)"
			METRICS+=("worker-$gpu-$i http://127.0.0.1:$port/metrics")
			WORKERS+=("$gpu worker-$gpu-$i")
		else
			log "GPU $i ($name) is not a known device type; no worker started"
		fi
		i=$((i + 1))
	done < <(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null || true)
fi

# The gateway logs the port it bound (the one asked for, or with
# KB_HTTP_PORT=0 whichever the kernel gave).
wait_for "kb-gateway" 30 grep -q 'listening on ' "$RUN_DIR/gateway.log"
HTTP_PORT=$(sed -n 's/.*listening on [^ ]*:\([0-9]*\) .*/\1/p' "$RUN_DIR/gateway.log" | tail -1)
API="http://127.0.0.1:$HTTP_PORT"
wait_for "kb-gateway" 15 curl -sf "$API/health"

# Ready means every worker started is consuming: a worker announces
# itself (a heartbeat on the results topic) once it has joined its topic,
# and the gateway counts it in /runner_queue. Up to KB_READY_WAIT_S
# (300 s) for all of them, saying every 10 s which one it waits for.
runners() { # runners GPU: workers the gateway has heard of; "none" when
	# no board offers GPU (404: the gateway counts no worker for it)
	local out
	out=$(curl -s -w '\n%{http_code}' "$API/runner_queue/$1" 2>/dev/null) || out=$'\n000'
	if [ "${out##*$'\n'}" = 404 ]; then
		echo none
		return
	fi
	printf '%s' "${out%$'\n'*}" | python3 -c \
		'import json, sys; print(int(json.load(sys.stdin).get("available_runners") or 0))' \
		2>/dev/null || echo 0
}
alive() { # alive NAME: the service started as NAME still runs
	local i
	for i in "${!NAMES[@]}"; do
		[ "${NAMES[$i]}" = "$1" ] && kill -0 "${PIDS[$i]}" 2>/dev/null && return 0
	done
	return 1
}
WARMING=()
NOBOARD=()
CONSUMING=()
READY_T0=$SECONDS
declare -A NTH # workers of each GPU type waited for so far
for w in "${WORKERS[@]}"; do
	gpu=${w% *} name=${w#* }
	NTH[$gpu]=$((${NTH[$gpu]:-0} + 1))
	next=10
	while :; do
		n=$(runners "$gpu")
		if [ "$n" = none ]; then
			NOBOARD+=("$name")
			break
		fi
		if [ "$n" -ge "${NTH[$gpu]}" ]; then
			CONSUMING+=("$gpu")
			break
		fi
		waited=$((SECONDS - READY_T0))
		if ! alive "$name" || [ "$waited" -ge "${KB_READY_WAIT_S:-300}" ]; then
			WARMING+=("$name ($RUN_DIR/$name.log)")
			break
		fi
		if [ "$waited" -ge "$next" ]; then
			log "waiting for $name to start consuming (${waited} s; $RUN_DIR/$name.log)"
			next=$((next + 10))
		fi
		sleep 0.5
	done
done
if [ ${#WARMING[@]} -eq 0 ]; then
	READY="every worker is consuming (${CONSUMING[*]})"
else
	READY="still warming up: ${WARMING[*]}; submissions wait in the queue until it consumes"
fi
if [ ${#NOBOARD[@]} -gt 0 ]; then
	READY="$READY; no board offers the gpu of ${NOBOARD[*]}, which serve nothing until one does (KB_PROBLEMS, or POST /admin/update-problems)"
fi

CLI_ID=$(curl -sf -X POST "$API/admin/users" \
	-H "Authorization: Bearer $KB_ADMIN_TOKEN" \
	-H 'Content-Type: application/json' -d '{"name":"local"}' |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["cli_id"])')

cat <<INFO

  KernelBot is up: $READY.
    Web        $API/
    API        $API
    CLI id     $CLI_ID   (user "local")
    Kafka      $KB_KAFKA_BROKERS
    Redis      $KB_REDIS_URL
    logs       $RUN_DIR
    metrics    (loopback only)
$(printf '               %s\n' "${METRICS[@]}")
$( [ -n "${GENERATED_TOKEN:-}" ] && echo "    admin token $KB_ADMIN_TOKEN (generated; set KB_ADMIN_TOKEN to choose)" )

  Try:
    curl -H 'X-Popcorn-Cli-Id: $CLI_ID' -F file=@problems/vectorsum_cpu/submission_ok.c \\
         $API/submission/vectorsum_cpu/CPU/leaderboard
    curl -H 'X-Popcorn-Cli-Id: $CLI_ID' $API/user/submissions/ID   # ID from the answer; "done": true when finished
    curl $API/submissions/vectorsum_cpu/CPU                        # the ranking, once the job has finished
  or, with live stages and the report:
    KB_CLI_ID=$CLI_ID POPCORN_API_URL=$API $(tool kb client) submit --mode leaderboard \\
         problems/vectorsum_cpu/submission_ok.c --leaderboard vectorsum_cpu --gpu CPU

  Ctrl-C stops everything.
INFO

# Stay in the foreground until a service dies or the user stops us (the
# INT/TERM trap, which exits).
rc=0
wait -n "${PIDS[@]}" || rc=$?
for i in "${!PIDS[@]}"; do
	kill -0 "${PIDS[$i]}" 2>/dev/null ||
		log "${NAMES[$i]} exited (status $rc; log $RUN_DIR/${NAMES[$i]}.log); stopping the rest"
done
exit 1
