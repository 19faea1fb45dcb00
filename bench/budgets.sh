#!/bin/bash
# Timing budgets (tests/support/kb_budget.h): runs the suites labelled
# `budgets` with KB_TEST_BUDGETS=1, so that a duration over its budget
# fails, and prints every "measure:" line they report. make test never
# judges these (load can stretch any duration); run this on a quiet
# machine, after a change that could make something slower.
#   bench/budgets.sh [BUILD]
set -uo pipefail
BUILD=${1:-build}
LOG=$(mktemp /tmp/kb-budgets.XXXXXX)
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%F)"
(cd "$BUILD" && KB_TEST_BUDGETS=1 ctest -L budgets -V) >"$LOG" 2>&1
rc=$?
# ctest -V prefixes each line of a test's output with its number.
sed -n 's/^[0-9]*: //; /^measure: /p' "$LOG"
grep -E '^[0-9]+/[0-9]+ Test|tests passed' "$LOG"
if [ $rc = 0 ]; then
	echo "budgets: all within (log $LOG)"
else
	echo "budgets: some exceeded or failed (log $LOG)"
fi
exit $rc
