#!/bin/bash
# platform.sh: an upstream problem set through the running platform on a
# GPU host: scripts/run.sh (from a bundle: DIST), the set synced with
# POST /admin/update-problems from a local copy, one ranked `kb submit`
# of a problem's own example, then the board's ranking.
#
#   bench/gpu/upstream/platform.sh [-d DIST] SETS_DIR SET PROBLEM_DIR BOARD
#
#   SETS_DIR     a local copy of reference-kernels' problems/ (never
#                committed here), holding SET.yaml
#   PROBLEM_DIR  the problem's directory under SETS_DIR (its
#                submission.py is submitted)
#   BOARD        the board the sync makes of it (e.g. vectoradd_v2)
#   DIST         scripts/bundle.sh's output, or a build directory
#                (default: build)
#
# The host's gpu (H100 or H200, from nvidia-smi) is added to the set
# file's gpus in a copy when the set does not list it (the problems are
# not changed). Logs and answers go to $OUT (the device tool) or
# /tmp/kb-upstream-platform.
set -u
dist=build
while getopts d: opt; do
	case $opt in
	d) dist=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 4 ] || { echo "usage: platform.sh [-d DIST] SETS_DIR SET PROBLEM_DIR BOARD" >&2; exit 2; }
sets=$(cd "$1" && pwd) set=$2 pdir=$3 board=$4
out=${OUT:-/tmp/kb-upstream-platform}
here=$(cd "$(dirname "$0")/../../.." && pwd)
R=$(mktemp -d /tmp/kb-upstream-platform.XXXXXX)
mkdir -p "$out" "$R/dev" "$R/src"
cp -r "$sets" "$R/src/problems"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -oE 'H100|H200|A100|L4|T4|B200')
grep -qE "^ +- $gpu\$" "$R/src/problems/$set.yaml" ||
	sed -i "s/^\( *\)- H100\$/\1- H100\n\1- $gpu/" "$R/src/problems/$set.yaml"
cd "$here"
KB_PROBLEMS_DEV=$R/dev KB_HTTP_PORT=0 KB_RUN_DIR=$R/run KB_ADMIN_TOKEN=tok \
	bash scripts/run.sh "$dist" >"$R/run.txt" 2>&1 &
runpid=$!
for _ in $(seq 1 1200); do grep -q 'KernelBot is up' "$R/run.txt" && break; sleep 0.5; done
grep 'KernelBot is up' "$R/run.txt" || { cat "$R/run.txt"; kill -INT $runpid; exit 1; }
api=$(sed -n 's/^ *API *\(http[^ ]*\).*/\1/p' "$R/run.txt" | head -1)
cli=$(sed -n 's/^ *CLI id *\([^ ]*\).*/\1/p' "$R/run.txt" | head -1)
curl -s -X POST -H "Authorization: Bearer tok" -H 'Content-Type: application/json' \
	-d "{\"repository\":\"$R/src\",\"problem_set\":\"$set\"}" "$api/admin/update-problems" |
	tee "$out/sync.json"
echo
kb=$( [ -x "$dist/bin/kb" ] && echo "$dist/bin/kb" || echo "$dist/client/kb")
( time KB_CLI_ID=$cli POPCORN_API_URL=$api timeout 600 "$kb" submit --timeout 580 -l "$board" \
	-g "$gpu" -m leaderboard "$sets/$pdir/submission.py" ) >"$out/kb-submit.txt" 2>&1
echo "kb submit: exit $?"
cat "$out/kb-submit.txt"
curl -s "$api/submissions/$board/$gpu" | tee "$out/ranking.json"
echo
cp "$R"/run/*.log "$out/" 2>/dev/null
kill -INT $runpid
sleep 10
kill -KILL $runpid 2>/dev/null
rm -rf "$R"
