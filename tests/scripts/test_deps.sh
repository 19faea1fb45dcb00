#!/bin/bash
# scripts/deps.sh against fake apt-get / dpkg-query / apt-cache: the run set
# leaves the test-only packages out, the test set has them all, and a held
# package lock is waited for (bounded, saying so) instead of failing.
. "$(dirname "$0")/common.sh"

mkdir "$T/bin"
# Nothing installed; apt-cache has every candidate; no node or npm.
printf '#!/bin/sh\nexit 1\n' >"$T/bin/dpkg-query"
printf '#!/bin/sh\necho "  Candidate: 1.0"\n' >"$T/bin/apt-cache"
printf '#!/bin/sh\necho amd64\n' >"$T/bin/dpkg"
# apt-get: fails with apt's lock message while $T/locked holds a number > 0
# (counting down per call), records its arguments in $T/apt.log.
cat >"$T/bin/apt-get" <<'SH'
#!/bin/bash
echo "$*" >>"$FAKE/apt.log"
n=$(cat "$FAKE/locked" 2>/dev/null || echo 0)
if [ "$n" != 0 ]; then
	[ "$n" = forever ] || echo $((n - 1)) >"$FAKE/locked"
	echo "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt-get)" >&2
	exit 100
fi
exit 0
SH
printf '#!/bin/sh\n"$@"\n' >"$T/bin/sudo"
chmod +x "$T/bin/"*
# Only the tools deps.sh uses, so a real node or npm stays out of sight.
for tool in sh bash grep cat mktemp rm id sleep; do
	ln -s "$(command -v "$tool")" "$T/bin/$tool"
done
export FAKE=$T PATH="$T/bin" KB_DEPS_LOCK_STEP_S=0

run_set=$("$SRC/scripts/deps.sh" --list run 2>/dev/null)
test_set=$("$SRC/scripts/deps.sh" --list test 2>/dev/null)
[ -n "$run_set" ] || fail "deps.sh --list run printed nothing"
for p in chromium clang-14 wrk hipcc clang-format-14 nodejs npm; do
	case " $run_set " in *" $p "*) fail "run set has test-only $p" ;; esac
done
for p in chromium clang-14 wrk clang-format-14 hipcc; do
	case " $test_set " in *" $p "*) ;; *) fail "test set lacks $p" ;; esac
done
for p in $run_set; do
	case " $test_set " in *" $p "*) ;; *) fail "test set lacks run package $p" ;; esac
done

# `run`: installs only the run set, never node.
: >"$T/apt.log"
"$SRC/scripts/deps.sh" run 2>"$T/err" || fail "deps.sh run failed: $(cat "$T/err")"
grep -q 'install' "$T/apt.log" || fail "deps.sh run installed nothing"
grep -qE 'chromium|nodejs|wrk|clang-14' "$T/apt.log" &&
	fail "deps.sh run installed test packages: $(cat "$T/apt.log")"

# A lock held for two tries: waited for, said so, then installed.
: >"$T/apt.log"
echo 2 >"$T/locked"
"$SRC/scripts/deps.sh" test 2>"$T/err" || fail "deps.sh did not wait for the lock: $(cat "$T/err")"
grep -q 'waiting' "$T/err" || fail "no word about waiting: $(cat "$T/err")"
grep -q 'install' "$T/apt.log" || fail "nothing installed after the lock was freed"
grep -q 'nodejs' "$T/apt.log" || fail "deps.sh test did not install nodejs"

# A lock that is never freed: a bounded wait, then a clear failure.
echo forever >"$T/locked"
if KB_DEPS_LOCK_WAIT_S=0 "$SRC/scripts/deps.sh" test 2>"$T/err"; then
	fail "deps.sh succeeded with the lock held"
fi
grep -q 'still held' "$T/err" || fail "no clear message: $(cat "$T/err")"

finish "deps.sh"
