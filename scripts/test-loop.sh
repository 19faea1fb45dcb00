#!/bin/bash
# test-loop.sh: does `make test` pass again and again under load? A fresh
# clone of this repository runs .ci/run (install, build, test) and then
# `make test` RUNS-1 more times in a row (CI=true), while a second clone of
# the same commit is rebuilt from clean (-j 2) in a loop beside it the
# whole time. Stops at the first failure.
#
#   scripts/test-loop.sh [-n RUNS] [-d DIR]
#
#   RUNS  default 5
#   DIR   clones and logs (default /tmp/kb-test-loop); DIR/summary gets a
#         line per run: "run N rc=RC SECONDS s <ctest's summary line>"
#
# Stop it early: kill the script, then `touch DIR/stop-load`.
set -u
runs=5
dir=/tmp/kb-test-loop
while getopts n:d: opt; do
	case $opt in
	n) runs=$OPTARG ;;
	d) dir=$OPTARG ;;
	*) echo "usage: test-loop.sh [-n RUNS] [-d DIR]" >&2; exit 2 ;;
	esac
done
src=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$dir"
mkdir -p "$dir"
git clone -q "$src" "$dir/test" && git clone -q "$src" "$dir/load" || exit 1
echo "commit $(git -C "$dir/test" rev-parse --short HEAD) start $(date -u +%T)" \
	>"$dir/summary"
(
	cd "$dir/load" && cmake -S . -B b >/dev/null 2>&1
	n=0
	while [ ! -f "$dir/stop-load" ]; do
		n=$((n + 1))
		cmake --build b -j 2 --clean-first >/dev/null 2>&1
		echo "load build $n done $(date -u +%T)" >>"$dir/load.log"
	done
) &
cd "$dir/test" || exit 1
export CI=true
rc=0
for ((i = 1; i <= runs; i++)); do
	s=$(date +%s)
	if [ $i = 1 ]; then .ci/run; else make test; fi >"$dir/run$i.log" 2>&1
	rc=$?
	echo "run $i rc=$rc $(($(date +%s) - s)) s $(grep -E 'tests passed|tests failed' \
		"$dir/run$i.log" | tail -n 1)" >>"$dir/summary"
	[ $rc = 0 ] || break
done
touch "$dir/stop-load"
wait
echo "end $(date -u +%T)" >>"$dir/summary"
cat "$dir/summary"
exit $rc
