#!/usr/bin/env bash
# Issue 29 for the CPU harness: nothing the submission's process writes,
# patches or delays may make its score better than its honest one by more
# than max(1 %, 2 us) per call. Run by CTest (problems_cpu_timing).
#
# usage: cpu_timing.sh PROBLEMS_DIR WORK_DIR [CC]
#
# KBT_DEFENDED_AS=N builds the harness the defended runs use with
# ablation N too: a check of this test, whose "within" judgments must then
# fail for the attacks that ablation lets through.
#
# vectorsum_cpu's harness is built as the worker builds it, and again with
# each test-only ablation of the timing rule (harness_cpu.c,
# KBH_TIMING_ABLATE), all with KBH_TIMING_LOG (each sample on stderr).
# subs/vectorsum_shave.c sums honestly on one thread and lies about its
# time; it also writes to stderr what the harness would have been told of
# each call without the lie. The gain of a run is, per timed call, the
# sample that claim would have got (the same window, handoff and rule)
# less the sample the lie got, averaged: what lying bought over the same
# process's honest score. With the defence it must stay within max(1 %,
# 2 us) of that honest score; with the part of the defence that the attack
# targets ablated it must not (each attack is shown to be one the defence
# stops). Both sides of each comparison come from one run, so they hold
# under load.
set -u

PROBLEMS=$(cd "$1" && pwd)
CC=${3:-cc}
SUBS=$(cd "$(dirname "$0")/subs" && pwd)
P=vectorsum_cpu
CALLS=0
# shellcheck source=script_lib.sh
. "$(dirname "$0")/script_lib.sh"
fresh_work "$2" cpu_timing

# ---- builds ---------------------------------------------------------------

# The harness's objects once; harness_cpu.c once per ablation (0 = none).
build() {
	local h="$PROBLEMS/harness" f a
	cp "$h"/{harness,harness_cpu,guard}.[ch] "$PROBLEMS/$P/problem.c" "$WORK/"
	for f in harness guard problem; do
		(cd "$WORK" && $CC -O3 -march=native -fopenmp -c $f.c -o $f.o) ||
			return 1
	done
	for a in 0 1 2 3; do
		local as=$a
		[ $a = 0 ] && as=${KBT_DEFENDED_AS:-0}
		(cd "$WORK" && $CC -O3 -march=native -fopenmp \
			-DKBH_TIMING_ABLATE=$as -DKBH_TIMING_LOG=1 harness_cpu.c \
			harness.o guard.o \
			problem.o -o eval.$a -lm -ldl) || return 1
	done
	(cd "$WORK" && $CC -O3 -march=native -fopenmp -shared -fPIC \
		"$SUBS/vectorsum_shave.c" -o shave.so -lm) || return 1
	# the task's largest benchmark: 4M floats, about 0.5 ms on one core,
	# so that the constant lie below stays inside the window
	printf 'size: 4194304; seed: 8841\n' > "$WORK/one.txt"
}

# ---- runs -----------------------------------------------------------------

# run TAG ABLATION [VAR=VALUE...]: a leaderboard run of shave.so under
# eval.ABLATION with the given environment; report in report.TAG, stderr
# in stderr.TAG. With CAL_ONLY=1 the neighbours (neighbour_start) are
# stopped as soon as the harness logs its calibration.
run() {
	local tag=$1 abl=$2
	shift 2
	(cd "$WORK" && exec env "$@" POPCORN_FD=3 \
		KBH_SUBMISSION="$WORK/shave.so" ./eval.$abl leaderboard \
		one.txt 3> "report.$tag" 2> "stderr.$tag") &
	local pid=$! i
	if [ "${CAL_ONLY:-}" = 1 ]; then
		for ((i = 0; i < 3000; i++)); do
			grep -q '^harness: guard' "$WORK/stderr.$tag" 2> /dev/null &&
				break
			sleep 0.01
		done
		neighbour_stop
	fi
	wait $pid
	local rc=$?
	[ $rc = 0 ] || fail "$tag: eval.$abl exited $rc"
}

# gain TAG: "GAIN BOUND HONEST SCORE N" (ns) of a run, over its N timed
# calls (the last `runs` samples; a call whose claim was not written, the
# last, is left out): the mean honest sample (kbh_guard_verify on the
# submission's untold claim), less the mean sample, and max(1 %, 2 us) of
# the mean honest sample.
gain() {
	local runs
	runs=$(sed -n 's/^benchmark\.0\.runs: //p' "$WORK/report.$1")
	awk -v runs="${runs:-0}" '
		$1 == "shave:" && $2 == "claim" { claim[$3] = $4 }
		$1 == "harness:" && $2 == "sample" {
			n++; call[n] = $3; win[n] = $4; h[n] = $5; got[n] = $6
		}
		END {
			for (i = n - runs + 1; i <= n; i++) {
				if (i < 1 || !(call[i] in claim)) continue
				m = win[i] - h[i]; if (m < 0) m = 0
				a = m / 100 > 2000 ? m / 100 : 2000
				f = m - a > 0 ? m - a : 0
				c = claim[call[i]]
				hon += c > f ? c : f; lie += got[i]; k++
			}
			if (!k) { print "none"; exit }
			b = hon / k / 100 > 2000 ? hon / k / 100 : 2000
			printf "%.0f %.0f %.0f %.0f %d\n", (hon - lie) / k, b,
				hon / k, lie / k, k
		}' "$WORK/stderr.$1"
}

# judge TAG within|beyond: 0 when the run's gain is at most / more than
# its bound, 1 when not, 2 when the run had no timed call to judge (load
# can leave a case one call, whose claim is never written); prints the
# figures.
judge() {
	local tag=$1 want=$2 g
	g=$(gain "$tag")
	CALLS=0
	if grep -q 'shave: no control page' "$WORK/stderr.$tag"; then
		echo "$tag: the submission found no control page"
		return 1
	fi
	set -- $g
	if [ "$1" = none ]; then
		echo "measure: $tag: no timed call to judge"
		return 2
	fi
	CALLS=$5
	echo "measure: $tag: gain $1 ns (bound $2 ns; honest score $3 ns, score $4 ns, $5 calls)"
	if [ "$want" = within ]; then
		[ "$1" -le "$2" ]
	else
		[ "$1" -gt "$2" ]
	fi
}

# attack TAG ABLATION within|beyond [VAR=VALUE...]: runs and judges, up
# to three runs while a run has nothing to judge; for an ablated run also
# while it shows no gain (load can leave the case a handful of calls, the
# time cap ending it; ablation 2 needs 8 to have its calibration all
# slowed; the handoff of a few calls can be longer than the lie). A
# defended run that shows a gain fails at once: load only lengthens the
# parent's measurement. When the last run had fewer than 10 timed calls,
# an ablated run's "no gain" and anyone's "nothing to judge" are budget
# verdicts (tests/support/kb_budget.h: judged only under
# KB_TEST_BUDGETS=1, by bench/budgets.sh).
attack() {
	local tag=$1 abl=$2 want=$3 try rc
	shift 3
	for try in 1 2 3; do
		[ "${NEIGHBOUR:-}" = 1 ] && neighbour_start
		run "$tag" "$abl" "$@"
		neighbour_stop
		judge "$tag" "$want"
		rc=$?
		if [ $rc = 0 ]; then
			ok
			return
		fi
		[ $rc = 2 ] || [ "$want" = beyond ] || break
		[ $try -lt 3 ] || break
		echo "$tag: attempt $try gave no verdict, again"
	done
	if [ "$CALLS" -lt 10 ] && { [ $rc = 2 ] || [ "$want" = beyond ]; } &&
		[ "${KB_TEST_BUDGETS:-}" != 1 ]; then
		echo "measure: $tag: $CALLS timed calls judged under this load OVER BUDGET (judged by bench/budgets.sh)"
		return
	fi
	fail "$tag: want the gain $want the bound"
	grep -e '^harness: guard' -e 'timing:' "$WORK/stderr.$tag"
}

# A CPU-heavy neighbour: one busy process per CPU, until neighbour_stop.
NEIGHBOURS=()
neighbour_start() {
	local k
	for ((k = 0; k < $(nproc); k++)); do
		(while :; do :; done) &
		NEIGHBOURS+=($!)
	done
}
neighbour_stop() {
	local pid
	for pid in "${NEIGHBOURS[@]}"; do
		kill "$pid" 2> /dev/null
		wait "$pid" 2> /dev/null
	done
	NEIGHBOURS=()
}
trap neighbour_stop EXIT

# ---- the attacks ----------------------------------------------------------

build || { echo "FAIL: build"; exit 1; }

# (a) a thread rewrites the claim in the shared control page, by a factor
# and by a constant; ablation 1 believes any claim inside the window
for lie in KBT_SHAVE_SCALE=0.6 KBT_SHAVE_MINUS_US=100; do
	tag=arena.${lie#KBT_SHAVE_}
	attack "$tag" 0 within KBT_SHAVE_HOW=arena "$lie"
	attack "$tag.ablated" 1 beyond KBT_SHAVE_HOW=arena "$lie"
done

# (b) the harness's clock pointer patched in the submission's process
attack clock 0 within KBT_SHAVE_HOW=clock KBT_SHAVE_SCALE=0.6
attack clock.ablated 1 beyond KBT_SHAVE_HOW=clock KBT_SHAVE_SCALE=0.6

# (c) slack inflation. The submission's process slows the harness's
# calibration requests tenfold (its clock runs slow during them): they
# never reach it, since the twin serves them; ablation 2 sends them to it.
attack calslow 0 within KBT_SHAVE_HOW=clock KBT_SHAVE_SCALE=0.6 \
	KBT_SHAVE_CAL=10
attack calslow.ablated 2 beyond KBT_SHAVE_HOW=clock KBT_SHAVE_SCALE=0.6 \
	KBT_SHAVE_CAL=10

# ... and a CPU-heavy neighbour while the harness calibrates before the
# submission is loaded (the neighbours stop once it has), which widened
# the slack of the rule before this one (ablation 3: that slack, fixed for
# the run); and one that stays for the whole run, calibrations and calls
# alike.
NEIGHBOUR=1 CAL_ONLY=1 attack calload 0 within KBT_SHAVE_HOW=clock \
	KBT_SHAVE_SCALE=0.6
NEIGHBOUR=1 CAL_ONLY=1 attack calload.ablated 3 beyond KBT_SHAVE_HOW=clock \
	KBT_SHAVE_SCALE=0.6
NEIGHBOUR=1 attack neighbour 0 within KBT_SHAVE_HOW=clock KBT_SHAVE_SCALE=0.6

echo "cpu_timing: $checks passed, $failures failed"
[ "$failures" = 0 ]
