# Sourced by the CPU problems' test scripts (cpu_problems.sh,
# cpu_timing.sh): their counters and their work directory.

failures=0
checks=0

fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

ok() {
	checks=$((checks + 1))
}

# fresh_work DIR NAME: sets WORK to DIR, emptied and made again, as an
# absolute path. A fresh work directory every run (stale eval.out files
# would test old code); only ever one that a script NAME made before
# (marked .NAME_work) or an empty one is deleted: exits 2 otherwise.
fresh_work() {
	if [ -e "$1" ]; then
		if [ ! -e "$1/.$2_work" ] && [ -n "$(ls -A "$1")" ]; then
			echo "refusing to clear $1: not a $2.sh work directory"
			exit 2
		fi
		rm -rf "$1"
	fi
	mkdir -p "$1"
	touch "$1/.$2_work"
	WORK=$(cd "$1" && pwd)
}
