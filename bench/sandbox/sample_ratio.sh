#!/usr/bin/env bash
# Does the sandbox slow an honest CPU submission down? A finer instrument
# than score_ratio.sh. A ranked CPU score is the mean of 20-40 calls whose
# times have a heavy tail (OpenMP wake-ups, the host's interrupts), so two
# identical runs' scores land several per cent apart and the sandbox's own
# effect drowns in that. Here the same eval.out (the problem's
# submission_ok.c, or SUBMISSION, with the current harness, patched to
# print every timed sample) runs REPS times in the worker's sandbox
# (kb-sandbox-exec: namespaces, new root, per-run uid, seccomp, cgroups)
# and REPS times as a plain child, in pairs (sandboxed first in even
# pairs, plain first in odd ones, so neither side always follows the
# other), in leaderboard mode with CAP_MS per case, and every timed sample
# is kept.
#
# Two estimates of sandboxed / unsandboxed, each combined over the
# benchmark cases by geometric mean (as the task's ranking_by: geom):
#   pooled: per case and side, the samples of all runs pooled; mean (what
#     the score averages), median, 10 % trimmed mean and minimum (host
#     noise only ever adds time, so the fastest call is the estimator it
#     disturbs least; a sandbox that slowed every call would show in it),
#     with a 95 % bootstrap interval that resamples whole runs (samples of
#     one run are not independent);
#   paired: per pair, the ratio of the two runs' scores (per-case means),
#     of their medians and of their fastest calls; the geometric mean over
#     pairs, with a 95 % bootstrap interval over pairs. Pairs cancel what
#     drifts slowly on the host (its neighbours' load). The A/A line pairs
#     each side's runs with themselves (run 2k against 2k+1): the spread of
#     identical runs, i.e. what the instrument can resolve.
#
# usage: sample_ratio.sh [-x KB_SANDBOX_EXEC] [-r REPS] [-c CAP_MS]
#                        [-s SUBMISSION] [-t THREADS] [-p CPUS] PROBLEM
#   PROBLEM          a CPU problem under problems/ (vectorsum_cpu, matmul_cpu)
#   KB_SANDBOX_EXEC  default build/tests/hostile/bench-sandbox/kb-sandbox-exec
#                    (dist/bin/kb-sandbox-exec from scripts/bundle.sh)
#   REPS             runs per side (default 6)
#   CAP_MS           leaderboard time cap per case (default 2000)
#   SUBMISSION       a C submission (default problems/PROBLEM/submission_ok.c)
#   THREADS          OMP_NUM_THREADS for both sides (default: unset; 1 runs
#                    submission_ok.c single-threaded, without OpenMP
#                    wake-ups or thread placement in the timed span)
#   CPUS             pin the child (the process that runs the submission)
#                    to CPUs FIRST-LAST (or one CPU) on both sides, from its
#                    first request on (the harness copy is patched to call
#                    sched_setaffinity; the parent keeps every CPU for its
#                    flush). Default: unpinned, as the worker runs it.
# Both sides get OMP_WAIT_POLICY=passive, as the worker gives CPU harness
# runs (worker/run/eval.c). Needs root (or user namespaces), like the worker.
# Exit status: 0 when every run passed its checks, 1 otherwise; the ratios
# are reported, not judged.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
X=$ROOT/build/tests/hostile/bench-sandbox/kb-sandbox-exec
REPS=6
CAP=2000
SUB=
THREADS=
CPUS=
while getopts x:r:c:s:t:p: o; do
	case $o in
	x) X=$OPTARG ;;
	r) REPS=$OPTARG ;;
	c) CAP=$OPTARG ;;
	s) SUB=$(realpath "$OPTARG") ;;
	t) THREADS=$OPTARG ;;
	p) CPUS=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || { sed -n 2,49p "$0" >&2; exit 2; }
P=$1
[ -x "$X" ] || { echo "sample_ratio: no kb-sandbox-exec at $X" >&2; exit 2; }

# shellcheck source=../../tests/problems/harness_pair.sh
. "$ROOT/tests/problems/harness_pair.sh"
# shellcheck source=cap.sh
. "$ROOT/bench/sandbox/cap.sh"
W=$(mktemp -d "${TMPDIR:-/tmp}/kb-sample-ratio.XXXXXX")
trap '[ -n "${KEEP:-}" ] || rm -rf "$W"' EXIT
D=$W/run
harness_pair_stage "$ROOT" HEAD "$P" "$D" new ${SUB:+"$SUB"}
cap_problem "$D/problem.c" "$CAP"
# the child's thread CPU time per call, to stderr as "cpu <bytes of input 0> <us>"
sed -i -e 's|^\t\*t0 = kbh_now_ns();$|\tstruct timespec cpu0, cpu1;\n\tint cpurc = clock_gettime(CLOCK_THREAD_CPUTIME_ID, \&cpu0);\n&|' \
	-e 's|^\t\*t1 = kbh_now_ns();$|&\n\tcpurc \|= clock_gettime(CLOCK_THREAD_CPUTIME_ID, \&cpu1);\n\tif (cpurc)\n\t\tfprintf(stderr, "cpu clock failed\\n");\n\telse\n\t\tfprintf(stderr, "cpu %llu %.1f\\n", (unsigned long long)a->in_bytes[0], ((cpu1.tv_sec - cpu0.tv_sec) * 1e9 + (cpu1.tv_nsec - cpu0.tv_nsec)) / 1e3);|' \
	"$D/harness_cpu.c"
[ "$(grep -c 'CLOCK_THREAD_CPUTIME_ID' "$D/harness_cpu.c")" = 2 ] ||
	{ echo "sample_ratio: could not patch the CPU-time probe" >&2; exit 2; }
if [ -n "$CPUS" ]; then
	first=${CPUS%-*} last=${CPUS#*-}
	case $first$last in *[!0-9]* | '') echo "sample_ratio: bad CPUS '$CPUS'" >&2; exit 2 ;; esac
	# the child's first request pins it; its OpenMP threads inherit that
	sed -i "s|^\tconst struct kbh__call_arg \*a = arg;\$|&\n\tstatic int pinned;\n\tif (!pinned) {\n\t\tcpu_set_t cs;\n\t\tCPU_ZERO(\&cs);\n\t\tfor (int k = $first; k <= $last; k++)\n\t\t\tCPU_SET(k, \&cs);\n\t\tpinned = 1;\n\t\tfprintf(stderr, \"pin $CPUS rc %d\\\\n\", sched_setaffinity(0, sizeof cs, \&cs));\n\t}|" "$D/harness_cpu.c"
	grep -q 'pinned = 1;' "$D/harness_cpu.c" || { echo "sample_ratio: could not patch the pin" >&2; exit 2; }
fi
harness_pair_build "$D"
chmod 0777 "$D" # the sandboxed run writes its report there as its own uid

case $THREADS in *[!0-9]*) echo "sample_ratio: bad THREADS '$THREADS'" >&2; exit 2 ;; esac
run="${THREADS:+OMP_NUM_THREADS=$THREADS }"'OMP_WAIT_POLICY=passive POPCORN_FD=5 ./eval.out leaderboard cases.txt 5> rep.txt 2> samples.txt; echo "exit: $?" >> rep.txt'
for ((r = 0; r < REPS; r++)); do
	order="1 0"
	[ $((r % 2)) = 0 ] || order="0 1"
	for iso in $order; do
		rm -f "$D/rep.txt" "$D/samples.txt"
		if [ $iso = 1 ]; then
			"$X" --timeout 600 "$D" /bin/sh -c "$run" > /dev/null 2>&1 || true
		else
			(cd "$D" && /bin/sh -c "$run") || true
		fi
		cp "$D/rep.txt" "$W/$iso.$r.rep" 2> /dev/null || : > "$W/$iso.$r.rep"
		cp "$D/samples.txt" "$W/$iso.$r.samples" 2> /dev/null || : > "$W/$iso.$r.samples"
	done
done

python3 - "$W" "$REPS" "$P" "$CAP" "${SUB:-submission_ok.c}" "${THREADS:-default}" "${CPUS:-none}" <<'PY'
import math, os, random, statistics, sys
w, reps, prob, cap = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
sub, threads, cpus = os.path.basename(sys.argv[5]), sys.argv[6], sys.argv[7]
ok = True
# runs[side] = list of {case: [samples us]}; byrep[side][r] = the same or None
runs = {"1": [], "0": []}
byrep = {"1": [None] * reps, "0": [None] * reps}
cpurep = {"1": [None] * reps, "0": [None] * reps}  # {bytes: [us]}
for iso in ("1", "0"):
    for r in range(reps):
        rep = {}
        for l in open(os.path.join(w, f"{iso}.{r}.rep")):
            if ": " in l:
                k, v = l.rstrip("\n").split(": ", 1)
                rep[k] = v
        if rep.get("check") != "pass":
            print(f"run {r} {'sandboxed' if iso == '1' else 'unsandboxed'}: "
                  f"check {rep.get('check')}, exit {rep.get('exit')} "
                  "(no samples used)")
            ok = False
            continue
        s, cs = {}, {}
        for l in open(os.path.join(w, f"{iso}.{r}.samples")):
            f = l.split()
            if len(f) == 3 and f[0] == "sample":
                s.setdefault(int(f[1]), []).append(float(f[2]))
            elif len(f) == 3 and f[0] == "cpu":
                cs.setdefault(int(f[1]), []).append(float(f[2]))
            elif f[:1] == ["pin"] and f[-1] != "0":
                print(f"run {r} side {iso}: {l.strip()} (pinning failed)")
                ok = False
        flags = [rep.get(f"benchmark.{i}.status", "") for i in range(len(s))]
        # by call parity mod 3 too: calls rotate through up to 3 work
        # slots, so a slot whose pages sit badly shows up as one column
        print(f"run {r} {'sandboxed  ' if iso == '1' else 'unsandboxed'} "
              + "  ".join(f"b{i} n {len(v):4d} mean {statistics.fmean(v):8.1f}"
                          f" med {statistics.median(v):8.1f} ["
                          + "/".join(f"{statistics.median(v[k::3]):.0f}"
                                     for k in range(3)) + "]"
                          for i, v in sorted(s.items()))
              + ("  " + " ".join(x for x in flags if x) if any(flags) else ""))
        runs[iso].append(s)
        byrep[iso][r] = s
        cpurep[iso][r] = cs
if not runs["1"] or not runs["0"]:
    sys.exit(1)
cases = sorted(set.intersection(*(set(x) for x in runs["1"] + runs["0"])))

def trimmed(v, f=0.10):
    v = sorted(v)
    k = int(len(v) * f)
    return statistics.fmean(v[k:len(v) - k] if len(v) > 2 * k else v)

stats = {"mean": statistics.fmean, "median": statistics.median, "trim10": trimmed,
         "min": min}

def pooled(side_runs, case):
    return [x for run in side_runs for x in run[case]]

def geo_ratio(a_runs, b_runs, fn):
    return math.exp(statistics.fmean(
        math.log(fn(pooled(a_runs, c)) / fn(pooled(b_runs, c))) for c in cases))

print(f"\n{prob} ({sub}, OMP_NUM_THREADS {threads}, child pinned to CPUs "
      f"{cpus}): {len(runs['1'])} "
      f"sandboxed / {len(runs['0'])} unsandboxed runs, leaderboard cap "
      f"{cap} ms per case; pooled timed samples (us)")
print(f"{'case':<5} {'n sb/un':>11} " + " ".join(
    f"{s + ' sb':>10} {s + ' un':>10} {'ratio':>7}" for s in stats))
for c in cases:
    a, b = pooled(runs["1"], c), pooled(runs["0"], c)
    print(f"b{c:<4} {len(a):5d}/{len(b):<5d} " + " ".join(
        f"{fn(a):10.1f} {fn(b):10.1f} {fn(a) / fn(b):7.4f}" for fn in stats.values()))
rng = random.Random(1)
for name, fn in stats.items():
    point = geo_ratio(runs["1"], runs["0"], fn)
    boot = sorted(
        geo_ratio([rng.choice(runs["1"]) for _ in runs["1"]],
                  [rng.choice(runs["0"]) for _ in runs["0"]], fn)
        for _ in range(400))
    lo, hi = boot[int(0.025 * len(boot))], boot[int(0.975 * len(boot)) - 1]
    print(f"geomean ratio sandboxed/unsandboxed of the {name:<6}: {point:.4f} "
          f"(95% bootstrap over runs {lo:.4f} .. {hi:.4f})")

# paired: log ratios of one run's statistic to its partner's, each the
# geometric mean over the cases; printed as their geometric mean with a
# 95 % bootstrap interval over pairs
def paired_print(label, logs):
    if len(logs) < 2:
        print(f"{label}: fewer than 2 pairs")
        return
    point = math.exp(statistics.fmean(logs))
    boot = sorted(math.exp(statistics.fmean(rng.choice(logs) for _ in logs))
                  for _ in range(2000))
    lo, hi = boot[int(0.025 * len(boot))], boot[int(0.975 * len(boot)) - 1]
    print(f"{label}: {point:.4f} (95% bootstrap over {len(logs)} pairs "
          f"{lo:.4f} .. {hi:.4f}; pairs' spread "
          f"{100 * statistics.stdev(logs):.1f} %)")

def pair_logs(pairs, fn):
    return [statistics.fmean(math.log(fn(a[c]) / fn(b[c]))
                             for c in sorted(set(a) & set(b)))
            for a, b in pairs]

def pairings(per_run):
    """(label, pairs): sandboxed against unsandboxed run r, then each
    side's run 2k against its run 2k+1 (A/A)."""
    yield "paired ratio sandboxed/unsandboxed", [
        (per_run["1"][r], per_run["0"][r]) for r in range(reps)
        if per_run["1"][r] and per_run["0"][r]]
    for iso, side in (("1", "sandboxed"), ("0", "unsandboxed")):
        yield f"A/A {side:<11} run 2k / 2k+1", [
            (per_run[iso][r], per_run[iso][r + 1]) for r in range(0, reps - 1, 2)
            if per_run[iso][r] and per_run[iso][r + 1]]

print()
for label, pairs in pairings(byrep):
    for name, fn in (("mean", statistics.fmean), ("median", statistics.median),
                     ("min", min)):
        paired_print(f"{label} of the {name:<6}", pair_logs(pairs, fn))

# the child's thread CPU time per call: cases are told apart by input size
print()
for iso, side in (("1", "sandboxed"), ("0", "unsandboxed")):
    for r in range(reps):
        c = cpurep[iso][r]
        if c:
            print(f"cpu run {r} {side:<11} " + "  ".join(
                f"{k}B n {len(v)} med {statistics.median(v):.1f}"
                for k, v in sorted(c.items())))
for label, pairs in pairings(cpurep):
    paired_print(f"{label} of the child's thread CPU time per call (median)",
                 pair_logs(pairs, statistics.median))
sys.exit(0 if ok else 1)
PY
