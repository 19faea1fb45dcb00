#!/bin/sh
# honest.sh: the honest CUDA submissions of this directory (README.md).
#
#   honest.sh build CACHE WORK         build each as the worker does
#                                      (kbg_build.sh; no GPU needed)
#   honest.sh run KB_WORKER [GPU] [NAMES]
#                                      each through `kb-worker eval --json`
#                                      in test, benchmark, profile and
#                                      leaderboard mode (a GPU host;
#                                      HONEST_MODES="test ..." for fewer)
#
# build fails when one does not compile. run prints one line per
# (submission, mode) and "N passed, M failed": a row passes when the
# verdict is passed (never suspect) and a leaderboard run has a score.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
problem_of() { sed -n '1s|^// \([a-z0-9_]*\)\..*|\1|p' "$1"; }

case ${1:-} in
build)
	cache=$2 work=$3 fails=0
	for f in "$here"/*.cu; do
		name=$(basename "$f" .cu)
		p=$(problem_of "$f")
		if sh "$root/problems/harness/cuda/kbg_build.sh" -c "$cache" \
			-w "$work/$name" "$root/problems/pmpp/$p" "$f" \
			>"$work.$name.log" 2>&1; then
			echo "ok: $name ($p)"
		else
			tail -n 20 "$work.$name.log"
			echo "FAIL: $name ($p) does not build"
			fails=$((fails + 1))
		fi
	done
	[ "$fails" = 0 ]
	;;
run)
	worker=$2 gpu=${3:-H100} names=${4:-}
	out=${OUT:-/tmp}/honest
	mkdir -p "$out"
	pass=0 fail=0
	for f in "$here"/*.cu; do
		name=$(basename "$f" .cu)
		[ -z "$names" ] || echo " $names " | grep -q " $name " || continue
		p=$(problem_of "$f")
		for mode in ${HONEST_MODES:-test benchmark profile leaderboard}; do
			"$worker" eval "$root/problems/pmpp/$p" "$f" --gpu "$gpu" \
				--mode "$mode" --json >"$out/$name.$mode.json" \
				2>"$out/$name.$mode.err"
			row=$(python3 - "$out/$name.$mode.json" "$mode" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print("FAIL no result"); sys.exit()
v = r.get("verdict", "?").replace("VERDICT_", "").lower()
ok = v == "passed" and (sys.argv[2] != "leaderboard" or r.get("score"))
score = r.get("score")
print(("ok" if ok else "FAIL"), v, "%.3f us" % (score * 1e6) if score else "-",
      (r.get("error") or "")[:120])
PY
)
			echo "$name $p $mode: $row"
			case $row in ok*) pass=$((pass + 1)) ;; *) fail=$((fail + 1)) ;; esac
		done
	done
	echo "$pass passed, $fail failed"
	[ "$fail" = 0 ]
	;;
*)
	echo "usage: honest.sh build CACHE WORK | run KB_WORKER [GPU] [NAMES]" >&2
	exit 2
	;;
esac
