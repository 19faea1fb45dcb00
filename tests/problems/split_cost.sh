#!/usr/bin/env bash
# Cost of the harness's process split (problems/harness/guard.h) on honest
# submissions: builds each CPU problem's submission_ok.c twice -- with the
# current harness and with the one-process harness of a git revision
# (default 8a6b7fe, the last one before the split) -- and runs the two
# leaderboard runs alternately, REPS times each, on the same machine. Both
# copies are patched (here, not in the repository) to print every timed
# sample to stderr, so that besides the score (the mean) the script can
# show statistics that a few preemptions by other processes do not move.
# Prints per benchmark, pooled over the runs: median, mean of the fastest
# 90%, mean, min (us), split/one-process ratios, suspect counts, and the
# calibrated handoff of each split run. Not run by CTest (it
# measures; it does not check).
#
# usage: split_cost.sh [REPS] [REV]     (from anywhere in the repository)
set -eu
REPS=${1:-7}
REV=${2:-8a6b7fe}
ROOT=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kb-split-cost.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
# shellcheck source=harness_pair.sh
. "$ROOT/tests/problems/harness_pair.sh"

for p in vectorsum_cpu matmul_cpu; do
	for v in old new; do
		harness_pair "$ROOT" "$REV" $p "$WORK/$p.$v" $v
	done
	for ((r = 0; r < REPS; r++)); do
		for v in old new; do
			d="$WORK/$p.$v"
			(cd "$d" && POPCORN_FD=3 ./eval.out leaderboard cases.txt \
				3> "report.$r" 2> "stderr.$r") ||
				echo "  ($p $v run $r ended with status $?; left out)"
		done
	done
	echo "== $p (leaderboard, $REPS alternating runs each; one-process -> split, us)"
	python3 - "$WORK/$p.old" "$WORK/$p.new" "$REPS" <<'PY'
import statistics, sys
old, new, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
def load(d):
    runs, samples = [], {}
    for r in range(reps):
        kv = dict(l.rstrip('\n').split(': ', 1)
                  for l in open(f'{d}/report.{r}') if ': ' in l)
        if kv.get('check') != 'pass':
            continue
        runs.append(kv)
        for l in open(f'{d}/stderr.{r}'):
            if l.startswith('sample '):
                _, i, us = l.split()
                samples.setdefault(int(i), []).append(float(us))
    return runs, samples
(o, os_), (n, ns_) = load(old), load(new)
print(f'  runs that passed: one-process {len(o)}, split {len(n)}')
def stats(xs):
    xs = sorted(xs)
    fast = xs[:max(1, int(len(xs) * 0.9))]
    return {'median': statistics.median(xs), 'mean90': statistics.fmean(fast),
            'mean': statistics.fmean(xs), 'min': xs[0], 'n': len(xs)}
for i in sorted(os_):
    a, b = stats(os_[i]), stats(ns_.get(i, [float('nan')]))
    cells = [f'{k} {a[k]:.1f} -> {b[k]:.1f} ({b[k] / a[k]:.3f})'
             for k in ('median', 'mean90', 'mean', 'min')]
    st = [k.get(f'benchmark.{i}.status', '') for k in n]
    print(f'  {o[0][f"benchmark.{i}.spec"]}: samples {a["n"]} / {b["n"]}')
    print('    ' + '  '.join(cells) + f'  suspect {st.count("suspect")}/{len(n)}')
for r in range(reps):
    try:
        for l in open(f'{new}/stderr.{r}'):
            if 'guard: child' in l:
                print('  split run', r, l.split('guard: ')[1].strip())
    except OSError:
        pass
PY
done
