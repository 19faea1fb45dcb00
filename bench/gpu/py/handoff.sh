#!/bin/bash
# Where the Python harness's guard window goes on a GPU host
# (kbh_timing.parts, the "guard:" lines of the harness's log: go =
# t_go..t0, host = (t1 - t0) - claim, copy = t1..t2, back = t2..t_seen),
# for the harness as it is and for copies with one change each:
#   spin         the parent spins for the reply instead of sleeping in
#                select
#   nostop       the child is never stopped between requests (the
#                ablation's own patch, hostile_cases.NO_STOP: measurement
#                only, it removes a defence)
#   spin+nostop  both
# Each variant: sort's Triton example and grayscale's PyTorch example in
# benchmark mode through `kb-worker eval`.
#
#   bash bench/gpu/py/handoff.sh [-w KB_WORKER] [VARIANT...]
#
#   KB_WORKER  default dist/bin/kb-worker, else build/worker/kb-worker
#   VARIANT    base spin nostop spin+nostop (default: all four)
#
# Run from the repository root (the copies are made of problems/). A
# patch whose text is no longer in the harness stops the script. KB_GPU
# (default H100) and KB_PYTHON (default /opt/torch/.venv/bin/python3)
# as for the worker; the lines go to stdout and, with $OUT set (the
# device tool), to $OUT/handoff.txt.
set -u
W=
while getopts w: o; do
	case $o in
	w) W=$OPTARG ;;
	*) echo "usage: handoff.sh [-w KB_WORKER] [VARIANT...]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || set -- base spin nostop spin+nostop
if [ -z "$W" ]; then
	W=$PWD/build/worker/kb-worker
	[ -x "$PWD/dist/bin/kb-worker" ] && W=$PWD/dist/bin/kb-worker
fi
export KB_GPU=${KB_GPU:-H100} KB_PYTHON=${KB_PYTHON:-/opt/torch/.venv/bin/python3}
export PATH=/usr/local/cuda/bin:$PATH
R=$(mktemp -d /tmp/kb-handoff.XXXXXX)
trap 'rm -rf "$R"' EXIT
for v in "$@"; do
	d=$R/$v
	mkdir -p "$d"
	cp -r problems "$d/"
	$KB_PYTHON - "$d/problems/harness/python" "$v" <<'EOF' || exit 1
import os, sys
sys.path.insert(0, "tests/pyharness")
import hostile_cases as H
d, v = sys.argv[1:]
patches = []
if "spin" in v:
    patches.append(("kbh_guard.py",
                    "r, _, _ = select.select([fd], [], [], _POLL_S)",
                    "r, _, _ = select.select([fd], [], [], 0)"))
if "nostop" in v:
    patches += H.NO_STOP   # the ablation's own patch: no stop, t_go first
for f, a, b in patches:
    p = os.path.join(d, f)
    s = open(p).read()
    assert s.count(a) == 1, "%s: the patch's text is gone: %r" % (f, a)
    open(p, "w").write(s.replace(a, b))
EOF
	for pe in sort/submission_triton grayscale/submission_ok; do
		KB_WORKDIR=$d/w KB_CACHE_DIR=$d/c timeout 200 "$W" eval "$d/problems/pmpp_py/${pe%/*}" \
			"$d/problems/pmpp_py/$pe.py" --mode benchmark --json >"$d/r.json" 2>/dev/null
		$KB_PYTHON -c 'import json, sys
r = json.load(open(sys.argv[1]))
print("%-12s %-30s %s" % (sys.argv[2], sys.argv[3], r.get("verdict")))
for run in r["runs"]:
    for l in (run.get("stderr") or "").splitlines():
        if "guard:" in l:
            print("    " + l[9:])' "$d/r.json" "$v" "$pe"
	done
done | tee ${OUT:+"$OUT/handoff.txt"}
