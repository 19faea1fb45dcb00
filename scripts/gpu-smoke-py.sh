#!/bin/bash
# gpu-smoke-py.sh: runs the Python problems' examples through the worker
# (`kb-worker eval ... --json`) on this machine's GPU and prints a line per
# job: the Python counterpart of scripts/gpu-smoke.sh.
# tests/pyharness/gpu_run.py runs the same examples through the harness
# alone, without the worker.
#
#   scripts/gpu-smoke-py.sh [-g GPU] [-m MODES] [-e EXAMPLES] [-o OUTDIR]
#                           [-w KB_WORKER] [-i [-s STAGGER]] [PROBLEM...]
#
#   GPU        the worker's device type (default H100)
#   MODES      default "test benchmark leaderboard profile"
#   EXAMPLES   default "submission_ok submission_triton submission_wrong
#              template": the problem's EXAMPLE.py, skipped where it has
#              none; the template runs in test mode only
#   OUTDIR     each job's JSON, stderr and its own work and cache
#              directories (default /tmp/kb-gpu-smoke-py); with $OUT set
#              (the device tool) the table and the JSON go there too
#   KB_WORKER  default: $KB_WORKER, dist/bin/kb-worker, PATH, then
#              build*/worker/kb-worker
#   -i         the inline-CUDA examples (submission_inline.py) in MODES
#              instead. Each builds its extension first (load_inline,
#              about a minute of CPU), so they do not run one at a time:
#              one starts every STAGGER seconds (default 30), so that the
#              builds overlap and the runs do not; a last line per mode
#              names the runs (after their builds) that overlapped anyway
#   PROBLEM    a directory of problems/pmpp_py (vectoradd, ...) or a path
#              to a problem directory (e.g. the upstream-shaped fixture
#              tests/worker/data/upstream_py/vectoradd); default: every
#              problem of problems/pmpp_py
#
# KB_PYTHON is the workers' interpreter (default /opt/torch/.venv/bin/python3
# where it exists, else python3). Every job runs alone on the GPU (but for
# -i) with its own work and cache directories, so each pays its own
# compile step.
#
# A line per job: problem, example, mode, verdict, whether it is the one
# expected (the wrong example fails, every other passes, and every timed
# case of a passing job has status "pass"), wall seconds, the worker's
# build_s and harness_s, the score, and per timed case its mean in us and
# status. The last line reads "N as expected, M not"; exit 0 when all were.
set -u

here=$(cd "$(dirname "$0")/.." && pwd)
gpu=H100
modes="test benchmark leaderboard profile"
examples="submission_ok submission_triton submission_wrong template"
out=/tmp/kb-gpu-smoke-py
worker=${KB_WORKER:-}
inline=0
stagger=30
while getopts g:m:e:o:w:is: opt; do
	case $opt in
	g) gpu=$OPTARG ;;
	m) modes=$OPTARG ;;
	e) examples=$OPTARG ;;
	o) out=$OPTARG ;;
	w) worker=$OPTARG ;;
	i) inline=1 ;;
	s) stagger=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if [ -z "$worker" ]; then
	for c in "$here/dist/bin/kb-worker" "$(command -v kb-worker 2>/dev/null)" \
		"$here"/build*/worker/kb-worker; do
		[ -n "$c" ] && [ -x "$c" ] && worker=$c && break
	done
fi
[ -n "$worker" ] && [ -x "$worker" ] || {
	echo "gpu-smoke-py: kb-worker not found (set KB_WORKER or -w)" >&2
	exit 2
}
if [ -z "${KB_PYTHON:-}" ]; then
	KB_PYTHON=python3
	[ -x /opt/torch/.venv/bin/python3 ] && KB_PYTHON=/opt/torch/.venv/bin/python3
fi
export KB_PYTHON
case ":$PATH:" in
*:/usr/local/cuda/bin:*) ;;
*) PATH=$PATH:/usr/local/cuda/bin ;;
esac
export PATH
command -v python3 >/dev/null || { echo "gpu-smoke-py: python3 needed to read JSON" >&2; exit 2; }
if [ $# -eq 0 ]; then
	for d in "$here"/problems/pmpp_py/*/task.yml; do set -- "$@" "$(basename "$(dirname "$d")")"; done
fi
mkdir -p "$out/json"
table=$out/table.txt
: >"$table"

# dir P: the problem directory of P (a name under problems/pmpp_py, or a path).
dir() {
	case $1 in
	*/*) (cd "$1" && pwd) ;;
	*) echo "$here/problems/pmpp_py/$1" ;;
	esac
}
# label P: P as a file name (a path's slashes become _).
label() { echo "${1%/}" | tr / _; }

# ev P EXAMPLE MODE: one job in its own work and cache directories; its
# line on stdout.
ev() {
	local d id t0 t1
	d=$(dir "$1")
	id=$(label "$1")-$2-$3
	rm -rf "${out:?}/$id"
	t0=$(date +%s.%N)
	KB_WORKDIR=$out/$id/w KB_CACHE_DIR=$out/$id/c timeout 590 "$worker" eval \
		"$d" "$d/$2.py" --mode "$3" --gpu "$gpu" --json \
		>"$out/json/$id.json" 2>"$out/$id.err"
	t1=$(date +%s.%N)
	python3 - "$out/json/$id.json" "$(label "$1")" "$2" "$3" "$t0" "$t1" <<'EOF'
import json, sys
path, p, ex, mode, t0, t1 = sys.argv[1:]
try:
    r = json.load(open(path))
except Exception as e:
    print("%-13s %-18s %-12s no result: %s  UNEXPECTED" % (p, ex, mode, e))
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

# overlap MODE P...: which inline runs of MODE (after their builds) shared
# the GPU, and for how long.
overlap() {
	python3 - "$out/json" "$@" <<'EOF'
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
print("%s: inline runs that overlapped: %s" % (mode, ", ".join(over) or "none"))
EOF
}

t_start=$(date +%s)
if [ "$inline" = 1 ]; then
	for m in $modes; do
		names=
		for p in "$@"; do
			[ -f "$(dir "$p")/submission_inline.py" ] || continue
			n=$(label "$p")
			names="$names $n"
			ev "$p" submission_inline "$m" >"$out/inline-$n-$m.txt" &
			sleep "$stagger"
		done
		wait
		for n in $names; do cat "$out/inline-$n-$m.txt"; done | tee -a "$table"
		overlap "$m" $names | tee -a "$table"
	done
else
	for p in "$@"; do
		for e in $examples; do
			[ -f "$(dir "$p")/$e.py" ] || continue
			for m in $modes; do
				[ "$e" = template ] && [ "$m" != test ] && continue
				ev "$p" "$e" "$m"
			done
		done
	done | tee -a "$table"
fi
met=$(awk '$5 == "ok"' "$table" | wc -l)
missed=$(awk '$5 == "UNEXPECTED" || / no result: /' "$table" | wc -l)
echo "$met as expected, $missed not ($(($(date +%s) - t_start)) s; $table)"
if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then
	cp "$table" "$OUT/smoke-py-table.txt"
	(cd "$out" && tar czf "$OUT/smoke-py-results.tgz" json ./*.err 2>/dev/null)
fi
[ "$missed" = 0 ]
