#!/bin/bash
# Device run 12 (H100): every Python problem's examples in the modes not
# yet run on the GPU, through `kb-worker eval`, one part per call (each
# within the 10-minute cap):
#
#   bash scripts/device/session12.sh serial P...   for each problem P
#        (a directory of problems/pmpp_py), one job at a time, the GPU to
#        itself: the PyTorch and Triton examples in benchmark, leaderboard
#        and profile mode, the wrong example in every mode, the template in
#        test mode
#   bash scripts/device/session12.sh inline MODE P...   the inline-CUDA
#        examples of the problems P in MODE, one started every STAGGER
#        seconds (default 30): each builds its extension first
#        (load_inline, about a minute of CPU), so one at a time would not
#        fit the cap; the stagger keeps their runs apart, and a last line
#        names any runs that overlapped on the GPU anyway.
#
# A line per job: problem, example, mode, verdict, whether it is the one
# expected (the wrong example fails, every other passes, and every timed
# case of a passing job has status "pass"), wall seconds, build_s,
# harness_s, score, and per timed case its mean in us and status. The
# job's JSON is kept under $OUT/json. Run from the repository root with
# dist/ built (scripts/bundle.sh).
set -u
export PATH=/usr/local/cuda/bin:$PWD/dist/bin:$PATH
export KB_GPU=${KB_GPU:-H100} KB_PYTHON=${KB_PYTHON:-/opt/torch/.venv/bin/python3}
W=${W:-$PWD/dist/bin/kb-worker}
mkdir -p /tmp/s12 "$OUT/json"

# ev P EXAMPLE MODE: one job in its own work and cache directories.
ev() {
	local p=$1 ex=$2 mode=$3 id=$1-$2-$3 t0 t1
	t0=$(date +%s.%N)
	KB_WORKDIR=/tmp/s12/$id/w KB_CACHE_DIR=/tmp/s12/$id/c timeout 590 "$W" eval \
		"$PWD/problems/pmpp_py/$p" "$PWD/problems/pmpp_py/$p/$ex.py" --mode "$mode" \
		--json >"$OUT/json/$id.json" 2>/tmp/s12/$id.err
	t1=$(date +%s.%N)
	$KB_PYTHON - "$OUT/json/$id.json" "$p" "$ex" "$mode" "$t0" "$t1" <<'EOF'
import json, sys
path, p, ex, mode, t0, t1 = sys.argv[1:]
try:
    r = json.load(open(path))
except Exception as e:
    print("%-13s %-18s %-12s no result: %s" % (p, ex, mode, e))
    sys.exit()
want = "VERDICT_FAILED" if ex == "submission_wrong" else "VERDICT_PASSED"
cases = []
for run in r.get("runs") or []:
    res = run.get("result") or {}
    for i in range(int(res.get("benchmark-count", 0))):
        mean, st = res.get("benchmark.%d.mean" % i), res.get("benchmark.%d.status" % i)
        if mean is None:
            continue
        cases.append((run["key"], "%.1f" % (float(mean) / 1e3), st))
ok = r.get("verdict") == want and (
    want == "VERDICT_FAILED" or all(c[2] == "pass" for c in cases))
print("%-13s %-18s %-12s %-15s %-10s %6.1f s build %5.1f harness %5.1f score %-12s %s" % (
    p, ex, mode, r.get("verdict", "-")[8:], "ok" if ok else "UNEXPECTED",
    float(t1) - float(t0), r.get("build_s", 0), r.get("harness_s", 0),
    "%.6g" % r["score"] if r.get("has_score") else "-",
    " ".join("%s:%s/%s" % c for c in cases)))
if not ok:
    print("    error: %s" % (r.get("error") or "")[:300])
    for run in r.get("runs") or []:
        print("    %s: %s" % (run.get("key"), (run.get("stderr") or "")[-600:]))
EOF
}

serial() {
	local p ex m
	nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
	for p in "$@"; do
		for ex in submission_ok submission_triton; do
			for m in benchmark leaderboard profile; do ev "$p" $ex $m; done
		done
		for m in test benchmark leaderboard profile; do ev "$p" submission_wrong $m; done
		ev "$p" template test
	done | tee -a "$OUT/serial.txt"
}

inline() {
	local mode=$1 p
	shift
	for p in "$@"; do
		ev "$p" submission_inline "$mode" >"/tmp/s12/inline-$p-$mode.txt" &
		sleep "${STAGGER:-30}"
	done
	wait
	for p in "$@"; do cat "/tmp/s12/inline-$p-$mode.txt"; done | tee -a "$OUT/inline.txt"
	# whose runs (after the build) shared the GPU, and for how long
	$KB_PYTHON - "$OUT/json" "$mode" "$@" <<'EOF2' | tee -a "$OUT/inline.txt"
import json, sys
d, mode, ps = sys.argv[1], sys.argv[2], sys.argv[3:]
span = {}
for p in ps:
    try:
        r = json.load(open("%s/%s-submission_inline-%s.json" % (d, p, mode)))
        span[p] = (r["started_at_ms"] / 1e3 + r["build_s"], r["finished_at_ms"] / 1e3)
    except Exception:
        pass
over = ["%s/%s %.1f s" % (a, b, min(span[a][1], span[b][1]) - max(span[a][0], span[b][0]))
        for i, a in enumerate(ps) for b in ps[i + 1:] if a in span and b in span
        and min(span[a][1], span[b][1]) > max(span[a][0], span[b][0])]
print("%s: runs that overlapped: %s" % (mode, ", ".join(over) or "none"))
EOF2
}

# Where the guard's window goes (kbh_timing.parts in the harness log), for
# the harness as it is and for copies with one change each: the parent
# spins for the reply instead of sleeping in select ("spin"), the child is
# never stopped between requests ("nostop": measurement only, it removes
# a defence). Each variant: sort's Triton example and grayscale's PyTorch
# example in benchmark mode.
handoff() {
	local v d
	for v in base spin nostop spin+nostop; do
		d=/tmp/s12/h-$v
		rm -rf "$d"; mkdir -p "$d"; cp -r problems "$d/"
		$KB_PYTHON - "$d/problems/harness/python" "$v" <<'EOF2'
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
    assert s.count(a) == 1, a
    open(p, "w").write(s.replace(a, b))
EOF2
		for pe in sort/submission_triton grayscale/submission_ok; do
			KB_WORKDIR=$d/w KB_CACHE_DIR=$d/c timeout 200 "$W" eval "$d/problems/pmpp_py/${pe%/*}" \
				"$d/problems/pmpp_py/$pe.py" --mode benchmark --json >$d/r.json 2>/dev/null
			$KB_PYTHON -c 'import json, sys
r = json.load(open(sys.argv[1]))
print("%-12s %-30s %s" % (sys.argv[2], sys.argv[3], r.get("verdict")))
for run in r["runs"]:
    for l in (run.get("stderr") or "").splitlines():
        if "guard:" in l:
            print("    " + l[9:])' $d/r.json "$v" "$pe"
		done
	done | tee "$OUT/handoff.txt"
}

# The slack's GPU cap (kbh_timing.SLACK_MAX_CUDA_NS): the two Triton
# examples that the 1 ms cap flagged or clamped in leaderboard mode, then
# the Python hostile suite (each case's harness a held run).
verify() {
	local pe
	for pe in sort/submission_triton grayscale/submission_triton; do
		ev "${pe%/*}" "${pe#*/}" leaderboard
	done | tee -a "$OUT/verify.txt"
	(cd tests/pyharness && KBH_TEST_HELD=1 timeout 420 $KB_PYTHON gpu_run.py hostile 2>&1 |
		tail -25) | tee -a "$OUT/hostile.txt"
}

case ${1:-} in
serial) shift; serial "$@" ;;
inline) shift; inline "$@" ;;
handoff) handoff ;;
verify) verify ;;
*) echo "usage: session12.sh serial P... | inline MODE P... | handoff | verify" >&2; exit 2 ;;
esac
