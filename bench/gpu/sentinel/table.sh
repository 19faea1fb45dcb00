#!/bin/sh
# bench/gpu/sentinel/table.sh: one device call's worth of issue 29's
# figures: vectoradd's per-call log (outside.sh), the honest spread
# (3 ranked runs of every PMPP example, sentinel), and the hostile table
# (every attack, with the sentinel and with -DKBG_NO_SENTINEL).
set -u
here=$(cd "$(dirname "$0")/../../.." && pwd)
o=${OUT:-/tmp/kb-table}
mkdir -p "$o"
export KBG_TIMEOUT=${KBG_TIMEOUT:-150}
sh "$here/bench/gpu/sentinel/outside.sh" -o /tmp/tv vectoradd 2>&1 | grep -v "^G watch" >"$o/vectoradd-log.txt"
VARIANTS=sent sh "$here/bench/gpu/timing.sh" -r 3 -o /tmp/ts spread >"$o/spread.txt" 2>&1
for f in /tmp/ts/rep-sent-*-1; do
	echo "## $f"
	grep -E "sentinel|outside|host_path|error|status|mean|claim_ns" "$f"
done >"$o/cases.txt"
sh "$here/bench/gpu/timing.sh" -o /tmp/th hostile >"$o/hostile.txt" 2>&1
tail -10 "$o/spread.txt"
tail -10 "$o/hostile.txt"
