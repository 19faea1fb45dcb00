#!/bin/bash
# scripts/run.sh with fake services: the banner comes once the worker is
# consuming (the gateway's /runner_queue counts it), or says it is still
# warming up after KB_READY_WAIT_S; a Ctrl-C (SIGINT to the whole
# foreground process group, as a terminal sends it) stops everything and
# says so, without "a service exited"; a service that dies on its own is
# still reported.
. "$(dirname "$0")/common.sh"
PG=
cleanup() {
	[ -n "$PG" ] && kill -KILL -- "-$PG" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

mkdir -p "$T/build/bin" "$T/path"
# A service as the real ones behave: prints its address line, then runs
# until SIGINT or SIGTERM (both handled: the real ones drain on either).
# $T/die-NAME makes it exit by itself.
fake() {
	cat >"$T/build/bin/$1" <<PY
#!/usr/bin/env python3
import os, signal, sys, time
signal.signal(signal.SIGINT, lambda *a: sys.exit(0))
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
print("$2", flush=True)
while not os.path.exists("$T/die-$1"):
    time.sleep(0.05)
sys.exit(3)
PY
	chmod +x "$T/build/bin/$1"
}
fake kb-devbroker "bootstrap=127.0.0.1:9"
fake kb-gateway "listening on 127.0.0.1:18000 (fake)"
fake kb-ranker "ranker"
fake kb-worker "worker"
# The gateway as curl sees it: /runner_queue counts the worker once
# $T/worker-up exists; no board offers H200 (404). With -w, the status
# after the body, as curl writes it.
cat >"$T/path/curl" <<SH
#!/bin/sh
code=200
case "\$*" in
*runner_queue/H200*) code=404
	printf '{"error": "no leaderboard offers gpu H200"}' ;;
*runner_queue*) [ -e "$T/worker-up" ] && n=1 || n=0
	printf '{"available_runners": %s}' "\$n" ;;
*) printf '{"cli_id": "fake-cli-id"}' ;;
esac
case "\$*" in
*http_code*) printf '\\n%s' "\$code" ;;
*) echo ;;
esac
SH
# No GPU, unless $T/h200 exists: then one H200.
cat >"$T/path/nvidia-smi" <<SH
#!/bin/sh
[ -e "$T/h200" ] || exit 1
echo "NVIDIA H200"
SH
chmod +x "$T/path/"*

# A terminal's foreground job: its own process group, SIGINT not ignored
# (a shell's background job starts with SIGINT ignored, which bash keeps).
FOREGROUND='import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.setsid()
os.execvp(sys.argv[1], sys.argv[1:])'
# start_run: scripts/run.sh in a process group of its own ($PG), as a
# terminal's foreground job; waits for its banner.
start_run() {
	: >"$T/out"
	PATH="$T/path:$PATH" KB_REDIS_URL=redis://127.0.0.1:1 KB_PYTHON=python3 \
		KB_RUN_DIR="$T/run" KB_ADMIN_TOKEN=t KB_READY_WAIT_S=${KB_READY_WAIT_S:-60} \
		python3 -c "$FOREGROUND" "$SRC/scripts/run.sh" "$T/build" >"$T/out" 2>&1 &
	PG=$!
	for _ in $(seq 1 600); do
		grep -q 'KernelBot is up' "$T/out" && return 0
		sleep 0.1
	done
	fail "run.sh never came up: $(cat "$T/out")"
	return 1
}
# stop_wait: waits for run.sh to end; its exit status.
stop_wait() {
	local rc
	wait "$PG"
	rc=$?
	PG=
	return $rc
}

# ctrl_c: SIGINT to every process of run.sh's process group, as a terminal
# sends it, in the order that shows a race: the others first (a service
# that exits at once on it), run.sh itself a moment later.
ctrl_c() {
	local pid
	for pid in $(ps -e -o pid=,pgid= | awk -v g="$PG" '$2 == g && $1 != g {print $1}'); do
		kill -INT "$pid" 2>/dev/null
	done
	sleep 0.5
	kill -INT "$PG"
}

# The banner waits for the worker: none for 2 s, then one.
( sleep 2; touch "$T/worker-up" ) &
t0=$(date +%s%N)
if start_run; then
	waited=$((($(date +%s%N) - t0) / 1000000))
	[ "$waited" -ge 1900 ] || fail "the banner came ${waited} ms after the start, before the worker consumed"
	grep -q 'KernelBot is up: every worker is consuming (CPU)' "$T/out" ||
		fail "the banner does not say the worker consumes: $(cat "$T/out")"
	ctrl_c
	stop_wait
fi
wait

# No worker within KB_READY_WAIT_S: the banner says which one is warming.
rm -rf "$T/run" "$T/worker-up"
if KB_READY_WAIT_S=1 start_run; then
	grep -q 'still warming up: worker-cpu' "$T/out" ||
		fail "no word of the worker still warming up: $(cat "$T/out")"
	ctrl_c
	stop_wait
fi

# A worker for a gpu no board offers (an H200 host, boards for H100):
# the banner does not wait for it, and says it serves nothing.
touch "$T/worker-up" "$T/h200"
rm -rf "$T/run"
t0=$(date +%s)
if KB_READY_WAIT_S=30 start_run; then
	[ $(($(date +%s) - t0)) -lt 20 ] ||
		fail "the banner waited for a worker no board can use"
	grep -q 'every worker is consuming (CPU); no board offers the gpu of worker-H200-0' "$T/out" ||
		fail "no word of the H200 worker without a board: $(cat "$T/out")"
	ctrl_c
	stop_wait
fi
rm -f "$T/h200"

rm -rf "$T/run"
if start_run; then
	ctrl_c
	stop_wait
	rc=$?
	[ "$rc" = 130 ] || fail "Ctrl-C: exit status $rc, not 130"
	grep -q 'a service exited' "$T/out" &&
		fail "Ctrl-C printed a false alarm: $(cat "$T/out")"
	grep -q 'stopped' "$T/out" || fail "Ctrl-C: no word of stopping: $(cat "$T/out")"
fi

rm -rf "$T/run"
if start_run; then
	touch "$T/die-kb-ranker"
	stop_wait
	rc=$?
	[ "$rc" != 0 ] || fail "a dead service: exit status 0"
	grep -q 'kb-ranker\|ranker' "$T/out" && grep -q 'exited' "$T/out" ||
		fail "a dead service was not reported: $(cat "$T/out")"
fi

finish "run.sh"
