#!/usr/bin/env bash
# Issue 29 for the CPU harness, the figures (bench/RESULTS.md, "Times the
# submission cannot touch (issue 29)", CPU harness): on this machine,
#
#   honest  each CPU problem's submission_ok.c, leaderboard mode, REPS
#           alternating runs with the harness of REV (the claim-within-slack
#           rule) and with the working tree's: per case the median of the
#           runs' means, and new/old; and, within each new run (so load
#           hits both alike), the mean sample over the mean claim -- what
#           scoring the parent's measurement adds to an honest claim;
#   attacks tests/problems/cpu_timing.sh's gains, with the defence and
#           with each ablation;
#   probe   the fastest the submission's process answers a request after
#           the flush (one empty request, like the twin's, sent to it after
#           the twin's two), against the twin's measured overhead, with the
#           child's wait sleeping on its futex (as built) and spinning on
#           the control word instead: REPS runs of template.c each. The
#           probe is a patch of a copy of the harness, made here.
#
# Not run by CTest (it measures). usage: timing_rule.sh [REPS] [REV]
set -eu
REPS=${1:-5}
REV=${2:-219e4fa}
ROOT=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kb-timing-rule.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
H="harness.c harness_cpu.c guard.c"
# shellcheck source=../../tests/problems/harness_pair.sh
. "$ROOT/tests/problems/harness_pair.sh"

# stage DIR PROBLEM SUBMISSION: eval.out from DIR's harness sources and
# the problem, submission.so alone, cases.txt the task's benchmarks.
stage() {
	local d=$1 p=$2
	cp "$ROOT/problems/$p/problem.c" "$d/"
	cp "$3" "$d/submission.c"
	(cd "$d" && cc -O3 -march=native -fopenmp $H problem.c -o eval.out \
		-lm -ldl && cc -O3 -march=native -fopenmp -shared -fPIC \
		submission.c -o submission.so -lm)
	harness_pair_cases "$ROOT/problems/$p/task.yml" > "$d/cases.txt"
}

# run DIR TAG [CASES]: as the worker runs a CPU harness (worker/eval.c:
# passive OpenMP waits)
run() {
	(cd "$1" && OMP_WAIT_POLICY=passive POPCORN_FD=3 \
		KBH_SUBMISSION="$1/submission.so" \
		./eval.out leaderboard "${3:-cases.txt}" 3> "report.$2" \
		2> "stderr.$2") || echo "  ($1 run $2 ended with status $?)"
}

echo "== honest: leaderboard, submission_ok.c, $REPS alternating runs each; harness $REV -> working tree"
for p in vectorsum_cpu matmul_cpu; do
	for v in old new; do
		mkdir -p "$WORK/$p.$v"
		if [ $v = old ]; then
			for f in harness.h harness.c harness_cpu.h harness_cpu.c \
				guard.h guard.c; do
				git -C "$ROOT" show "$REV:problems/harness/$f" \
					> "$WORK/$p.$v/$f"
			done
		else
			cp "$ROOT"/problems/harness/{harness,harness_cpu,guard}.[ch] \
				"$WORK/$p.$v/"
		fi
		stage "$WORK/$p.$v" $p "$ROOT/problems/$p/submission_ok.c"
	done
	for ((r = 0; r < REPS; r++)); do
		run "$WORK/$p.old" $r
		run "$WORK/$p.new" $r
	done
	python3 - "$WORK/$p.old" "$WORK/$p.new" "$REPS" <<'PY'
import statistics, sys
old, new, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
def means(d):
    out = {}
    for r in range(reps):
        try:
            kv = dict(l.rstrip('\n').split(': ', 1)
                      for l in open(f'{d}/report.{r}') if ': ' in l)
        except OSError:
            continue
        i = 0
        while f'benchmark.{i}.mean' in kv:
            if kv.get(f'benchmark.{i}.status') != 'suspect':
                out.setdefault(kv[f'benchmark.{i}.spec'], []).append(
                    float(kv[f'benchmark.{i}.mean']) / 1e3)
            i += 1
    return out
o, n = means(old), means(new)
within = {}
for r in range(reps):
    try:
        for l in open(f'{new}/stderr.{r}'):
            if ': timing: ' in l and 'mean claim ' in l:
                i = int(l.split('benchmark ')[1].split(':')[0])
                c = float(l.split('mean claim ')[1].split(' us')[0])
                m = float(l.split('mean sample ')[1].split(' us')[0])
                within.setdefault(i, []).append((c, m))
    except OSError:
        pass
for i, spec in enumerate(o):
    a, b = statistics.median(o[spec]), statistics.median(n.get(spec, [0]))
    print(f'  {spec}: median of means {a:.1f} -> {b:.1f} us ({b / a:.3f}); '
          f'runs {len(o[spec])} / {len(n.get(spec, []))}')
    w = within.get(i, [])
    if w:
        print('    within the new runs, mean sample / mean claim: median '
              f'{statistics.median(m / c for c, m in w):.3f}, '
              f'{min(m / c for c, m in w):.3f}-{max(m / c for c, m in w):.3f}'
              f'; median claim {statistics.median(c for c, _ in w):.1f} us, '
              f'sample {statistics.median(m for _, m in w):.1f} us')
PY
	grep -h 'handoff min=' "$WORK/$p.new"/stderr.* |
		sed 's/.*\(handoff min=[^(]*\).*/  new: \1/'
done

echo "== attacks: tests/problems/cpu_timing.sh"
"$ROOT/tests/problems/cpu_timing.sh" "$ROOT/problems" "$WORK/attacks" cc |
	grep -e '^measure:' -e '^FAIL' -e '^cpu_timing:' || true

echo "== probe: the submission's process answering cold vs the twin's measured overhead (template.c, 4M floats, $REPS runs each)"
for v in sleep spin; do
	d="$WORK/probe.$v"
	mkdir -p "$d"
	cp "$ROOT"/problems/harness/{harness,harness_cpu,guard}.[ch] "$d/"
	python3 - "$d" "$v" <<'PY'
import sys
d, v = sys.argv[1], sys.argv[2]
def edit(f, old, new):
    s = open(f'{d}/{f}').read()
    assert old in s, f'{f}: anchor gone: {old!r}'
    open(f'{d}/{f}', 'w').write(s.replace(old, new, 1))
# the twin's measured overhead, and a probe to the submission's process
edit('harness_cpu.c', '\ttm->hist[tm->next] = kbh_guard_gap(&w);',
     '\ttm->hist[tm->next] = kbh_guard_gap(&w);\n'
     '\tfprintf(stderr, "probe twin %.1f\\n", kbh_guard_gap(&w) / 1e3);')
edit('harness_cpu.c', '\t\t\tsnprintf(msg, msg_size, "calibration failed");\n'
     '\t\t\treturn -EIO;\n\t\t}\n',
     '\t\t\tsnprintf(msg, msg_size, "calibration failed");\n'
     '\t\t\treturn -EIO;\n\t\t}\n'
     '\t\t{\n\t\t\tstruct kbh__call_arg pa;\n'
     '\t\t\tstruct kbh_guard_window pw;\n'
     '\t\t\tkbh_fill(&pa, 0, sizeof pa);\n'
     '\t\t\tpa.busy_ns = KBH__CAL_BUSY_NS;\n'
     '\t\t\tkbh_guard_request(x->g, KBH__OP_CAL, &pa, sizeof pa, &pw);\n'
     '\t\t\tfprintf(stderr, "probe child %.1f\\n",\n'
     '\t\t\t\tkbh_guard_gap(&pw) / 1e3);\n\t\t}\n')
if v == 'spin':
    # the submission's process waits for "go" spinning on the control
    # word; the twin (which has not loaded it) still sleeps
    edit('guard.c', '\tfor (unsigned i = 0; i < KBH__SPIN; i++) {',
         '\tfor (unsigned i = 0; kbh_guard_entry || i < KBH__SPIN; i++) {')
PY
	stage "$d" vectorsum_cpu "$ROOT/problems/vectorsum_cpu/template.c"
	tail -n 1 "$d/cases.txt" > "$d/one.txt"
	for ((r = 0; r < REPS; r++)); do
		run "$d" $r one.txt
	done
done
python3 - "$WORK" "$REPS" <<'PY'
import sys
work, reps = sys.argv[1], int(sys.argv[2])
def q(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]
for v in ('sleep', 'spin'):
    g = {'twin': [], 'child': []}
    for r in range(reps):
        for l in open(f'{work}/probe.{v}/stderr.{r}'):
            t = l.split()
            if len(t) == 3 and t[0] == 'probe':
                g[t[1]].append(float(t[2]))
    for k in ('twin', 'child'):
        xs = g[k]
        print(f'  child waits by {v}: {k:5s} n={len(xs)} min={q(xs, 0):.1f} '
              f'p10={q(xs, .1):.1f} p50={q(xs, .5):.1f} us')
PY
