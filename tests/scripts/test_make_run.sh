#!/bin/bash
# `make run` builds only what scripts/run.sh starts (no suites, benches or
# npm packages) and installs only the run package set; `make test` and
# .ci/run install the test set. Read from `make -n`: nothing is built.
. "$(dirname "$0")/common.sh"

mkdir "$T/b" && touch "$T/b/CMakeCache.txt"
run=$(make -s -n -C "$SRC" run BUILD="$T/b" JOBS=2)
build=$(printf '%s\n' "$run" | grep 'cmake --build')
case $build in
*--target*) ;;
*) fail "make run builds every target: $build" ;;
esac
printf '%s\n' "$run" | grep -q 'deps.sh run' ||
	fail "make run does not ask deps.sh for the run set: $run"
# Every binary run.sh starts is among the targets.
for name in $(grep -oE 'tool kb-[a-z-]+' "$SRC/scripts/run.sh" | cut -d' ' -f2 | sort -u); do
	case " $build " in *" $name "*) ;; *) fail "make run does not build $name" ;; esac
done
# The README's client.
case " $build " in *" kb "*) ;; *) fail "make run does not build the kb client" ;; esac

testcmd=$(make -s -n -C "$SRC" test BUILD="$T/b" JOBS=2)
printf '%s\n' "$testcmd" | grep -q 'deps.sh test' ||
	fail "make test does not ask for the test set: $testcmd"
grep -qE '^scripts/deps.sh( test)?$' "$SRC/.ci/run" ||
	fail ".ci/run does not install the test set"

finish "make run"
