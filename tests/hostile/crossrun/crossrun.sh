#!/bin/bash
# crossrun.sh: the attacks of issue 14 between the runs of one job, run by
# CTest through the real worker and the isolated sandbox.
#
#   crossrun.sh KB_WORKER PROBLEM_DIR GPU SUBMISSION...
#
# CTest runs it on vectorsum_cpu (CPU) with vectorsum_*.c; on a GPU host,
# problems/pmpp/vectoradd (H100) with vectoradd_*.cu. Each submission is
# made self-contained (VICTIM defined, attacks.h inlined: the worker builds
# the submission alone) and run in leaderboard mode (test, ranked and
# secret runs in one job) by `kb-worker eval --json`, cut at 300 s. Then:
#   - the victim, a root-owned 0600 file outside the job, keeps its
#     content, mode and owner, and nothing appears at the path a link
#     points to that did not exist;
#   - the job ended by itself (a worker that blocks on a FIFO does not);
#   - the verdict is passed with an honest score: above 20 us (neither
#     problem's largest case can take less; the fake harness the
#     submission plants reports 1.23 us) and no run reports the fake's
#     1230 ns;
#   - no job directory is left behind.
# Needs the isolated sandbox (root or user namespaces): without it a run
# has the worker's own rights and nothing here can hold; then exit 77
# (CTest: skipped).
set -u

worker=$1
problem=$2
gpu=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/kb-crossrun.XXXXXX")
victim_dir=$(mktemp -d /tmp/kb-victim.XXXXXX)
victim=$victim_dir/victim
absent=$victim_dir/absent
failures=0
trap 'rm -rf "$work" "$victim_dir"' EXIT

fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

ok=$(ls "$problem"/submission_ok.* | head -n 1)
if ! KB_WORKDIR=$work/probe KB_SANDBOX_ISOLATE=1 "$worker" eval \
	"$problem" "$ok" --gpu "$gpu" --mode test >"$work/probe.out" 2>&1; then
	if grep -q "cannot isolate" "$work/probe.out"; then
		echo "SKIP: this host cannot isolate submissions"
		exit 77
	fi
	cat "$work/probe.out"
	echo "FAIL: the honest submission does not pass"
	exit 1
fi

for src in "$@"; do
	name=$(basename "$src")
	sub=$work/$name
	name=${name%.*}
	{
		printf '#define VICTIM "%s"\n' "$victim"
		cat "$here/attacks.h"
		grep -v '#include "attacks.h"' "$src"
	} >"$sub"
	printf 'untouched\n' >"$victim"
	chmod 0600 "$victim"
	ln -sfn "$absent" "$victim_dir/to-absent"
	# A loaded machine can make the harness distrust its timings
	# (verdict suspect): then again, three runs at most.
	for attempt in 1 2 3; do
		t0=$(date +%s)
		KB_WORKDIR=$work/jobs KB_SANDBOX_ISOLATE=1 timeout -s KILL 300 \
			"$worker" eval "$problem" "$sub" --gpu "$gpu" \
			--mode leaderboard --json >"$work/$name.json" 2>"$work/$name.err"
		rc=$?
		echo "$name: exit $rc after $(($(date +%s) - t0)) s"
		[ $attempt -lt 3 ] &&
			grep -Eq '"verdict": ?"VERDICT_SUSPECT"' "$work/$name.json" ||
			break
		echo "$name: attempt $attempt suspect, again"
	done
	[ "$rc" != 137 ] || fail "$name: the job did not end within 300 s"
	[ "$(cat "$victim")" = untouched ] ||
		fail "$name: the victim was written: $(head -c 200 "$victim")"
	[ "$(stat -c '%a %u' "$victim")" = "600 0" ] ||
		fail "$name: the victim's mode/owner changed: $(stat -c '%a %u' "$victim")"
	[ ! -e "$absent" ] || fail "$name: $absent was created"
	python3 - "$work/$name.json" <<'PY' || fail "$name: $(cat "$work/$name.json.why" 2>/dev/null)"
import json, sys
path = sys.argv[1]
why = open(path + ".why", "w")
try:
    r = json.load(open(path))
except Exception as e:
    why.write("no result (%s)" % e)
    sys.exit(1)
v = r.get("verdict", "")
score = r.get("score", 0)
if v != "VERDICT_PASSED":
    why.write("verdict %s: %s" % (v, r.get("error", "")))
    sys.exit(1)
if not score or score < 20e-6:
    why.write("score %r s: not an honest time" % score)
    sys.exit(1)
for run in r.get("runs", []):
    for key, value in (run.get("result") or {}).items():
        if value == "1230.0":
            why.write("the fake harness's report reached run %s" % run.get("key"))
            sys.exit(1)
print("  verdict %s, score %.1f us" % (v, score * 1e6))
for run in r.get("runs", []):
    for line in (run.get("stderr") or "").splitlines():
        if line.startswith("crossrun: "):
            print("  %s run: %s" % (run.get("key"), line[10:]))
PY
	left=$(find "$work/jobs" -maxdepth 1 -name 'job-*' | wc -l)
	[ "$left" = 0 ] || fail "$name: $left job directories left"
done
echo "crossrun: $failures failed"
[ "$failures" = 0 ]
