#!/bin/sh
# tests/k8s/worker_acl.sh: the Redis user that k8s/redis gives the
# workers (kb-worker), run by a real redis-server with the manifest's own
# command line: what a worker does works (AUTH as kb-worker, SELECT, the
# lease script through SCRIPT LOAD + EVALSHA, GET of a task file, EXISTS
# of a folded result), and everything else is refused (other keys, writes
# to task files and rankings, KEYS, FLUSHALL, CONFIG, the lease script on
# another key); the services' default user still needs REDIS_PASSWORD.
set -eu
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
command -v redis-server >/dev/null && command -v redis-cli >/dev/null ||
	{ echo "worker_acl: redis-server/redis-cli missing" >&2; exit 77; }
python3 -c 'import yaml' 2>/dev/null || { echo "worker_acl: PyYAML missing" >&2; exit 77; }
T=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# The redis container's command, passwords filled in, its config file
# left out (the test's own port and no persistence instead).
python3 - "$root/k8s/redis/redis.yaml" >"$T/args" <<'PY'
import sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d and d.get("kind") == "StatefulSet":
        c = d["spec"]["template"]["spec"]["containers"][0]["command"]
        for a in c[2:]:
            print(a.replace("$(REDIS_PASSWORD)", "svc-pw")
                   .replace("$(WORKER_REDIS_PASSWORD)", "worker-pw"))
PY
grep -q -- '--user' "$T/args" || { echo "FAIL: no --user in k8s/redis/redis.yaml" >&2; exit 1; }
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
set --
while IFS= read -r a; do set -- "$@" "$a"; done <"$T/args"
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
	--dir "$T" "$@" >"$T/redis.log" 2>&1 &
pid=$!
W="redis-cli -p $port --user kb-worker --pass worker-pw --no-auth-warning"
for _ in $(seq 1 50); do $W PING 2>/dev/null | grep -q PONG && break; sleep 0.1; done
$W PING | grep -q PONG || { cat "$T/redis.log" >&2; echo "FAIL: kb-worker cannot log in" >&2; exit 1; }

allowed() { # allowed WHAT EXPECTED-PATTERN -- command...
	what=$1 want=$2
	shift 3
	got=$("$@" 2>&1 || true)
	echo "$got" | grep -qE "$want" && ! echo "$got" | grep -q NOPERM &&
		echo "ok: $what" || fail "$what: $got"
}
refused() { # refused WHAT -- command...
	what=$1
	shift 2
	got=$("$@" 2>&1 || true)
	echo "$got" | grep -q NOPERM && echo "ok: refused: $what" ||
		fail "$what was not refused: $got"
}
allowed "SELECT 0" '^OK' -- $W SELECT 0
sha=$($W SCRIPT LOAD "$(cat "$root/services/lease.lua")")
allowed "SCRIPT LOAD of the lease script" '^[0-9a-f]{40}$' -- echo "$sha"
allowed "take a lease" '^ok' -- $W EVALSHA "$sha" 1 kb:lease:7 take w1 60000 3
allowed "renew it" '^1' -- $W EVALSHA "$sha" 1 kb:lease:7 renew w1 60000
allowed "finish it" '^1' -- $W EVALSHA "$sha" 1 kb:lease:7 finish w1 3600
allowed "read a task file" '^$' -- $W GET kb:task:abc
allowed "ask for a folded result" '^0' -- $W EXISTS kb:res:7:CPU
refused "GET kb:sub:7" -- $W GET kb:sub:7
refused "SET kb:task:abc" -- $W SET kb:task:abc x
refused "HSET on a ranking" -- $W HSET kb:rank:x:CPU a b
refused "the lease script on kb:sub:7" -- $W EVALSHA "$sha" 1 kb:sub:7 take w1 60000 3
refused "KEYS" -- $W KEYS '*'
refused "FLUSHALL" -- $W FLUSHALL
refused "CONFIG GET" -- $W CONFIG GET dir
refused "EVAL of its own script" -- $W EVAL "return redis.call('GET', KEYS[1])" 1 kb:task:abc
# The services' user: the password, and only it.
S="redis-cli -p $port --no-auth-warning"
$S -a wrong PING 2>&1 | grep -q PONG && fail "the default user took a wrong password"
$S -a svc-pw SET kb:sub:7 x | grep -q OK && echo "ok: the services' user" ||
	fail "the services' user cannot write"
[ "$fails" = 0 ] || { echo "worker_acl: $fails failed" >&2; exit 1; }
echo "worker_acl: all passed"
