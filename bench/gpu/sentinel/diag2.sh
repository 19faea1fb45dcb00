#!/bin/sh
# bench/gpu/sentinel/diag2.sh: vectoradd's device-path samples (the probe
# behind the hold against the child's claim), as built and with the
# probe's launch delayed 30 us after the release (-DKBG_PROBE_DELAY_NS).
for v in plain delay; do
	case $v in plain) d= ;; delay) d=-DKBG_PROBE_DELAY_NS=30000ull ;; esac
	echo "=== vectoradd $v"
	EXTRA_DEFS=$d sh "$(dirname "$0")/outside.sh" -o /tmp/diag-$v vectoradd 2>&1 | grep -v "^G watch" | tail -22
	echo "--- E lines 30-45 (path claim sample seen-rel enddev backdev)"
	grep "^E " /tmp/diag-$v/err-vectoradd | sed -n '30,45p'
done
