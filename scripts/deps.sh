#!/bin/sh
# Installs the Debian packages that are missing, for one purpose:
#
#   scripts/deps.sh run    what building and running the platform needs
#                          (`make run`)
#   scripts/deps.sh test   that, plus what the tests need (`make test`,
#                          .ci/run): browsers, compilers, load tools, Node.js
#   scripts/deps.sh        the same as `test`
#
# Runs as root on a fresh Debian bookworm machine; with everything present it
# does nothing and needs no privileges. When another apt-get or dpkg holds the
# package lock, it waits (KB_DEPS_LOCK_WAIT_S seconds, 600 by default, saying
# so) rather than failing at once.
#
# `deps.sh --list run|test` prints the packages of a set and exits.
set -eu

LIST=
if [ "${1:-}" = --list ]; then
	LIST=1
	shift
fi
SET=${1:-test}
case $SET in
run | test) ;;
*)
	echo "usage: scripts/deps.sh [--list] [run|test]" >&2
	exit 2
	;;
esac

# Building (Check too: CMake configures the suites), and running: the dev
# Redis, curl and python3 for scripts/run.sh, and torch because the default
# problem set serves Python problems on the CPU worker (a worker whose Python
# cannot run its problems refuses to serve).
RUN_PKGS="cmake make gcc pkg-config protobuf-c-compiler libprotobuf-c-dev
librdkafka-dev libhiredis-dev libcurl4-openssl-dev libmicrohttpd-dev
libjansson-dev libyaml-dev libsodium-dev libseccomp-dev libzip-dev libarchive-dev
check
libsubunit-dev redis-server curl python3 python3-yaml python3-torch
python3-numpy"
# The tests alone: clang (sanitizer and fuzz builds), the browser suite's
# Chromium and fonts, wrk (HTTP throughput), clang-format (layout_format).
TEST_PKGS="clang-14 libclang-rt-14-dev chromium fonts-dejavu-core wrk
clang-format-14"
# HIP (tests/hip, worker_hip): Debian's hipcc 5.2 and the HIP runtime it
# links. Debian builds them for amd64 only: elsewhere they are left out
# (the HIP tests then skip, exit 77, saying so); where Debian has them a
# failed install fails this script.
HIP_PKGS="hipcc libamdhip64-dev"

PKGS=$RUN_PKGS
if [ "$SET" = test ]; then
	PKGS="$PKGS $TEST_PKGS"
	for p in $HIP_PKGS; do
		if apt-cache policy "$p" 2>/dev/null | grep -q 'Candidate: [0-9]' ||
			[ "$(dpkg --print-architecture 2>/dev/null)" = amd64 ]; then
			PKGS="$PKGS $p"
		else
			echo "deps: $p is not packaged for this machine: HIP tests will skip" >&2
		fi
	done
fi
if [ -n "$LIST" ]; then
	echo $PKGS
	exit 0
fi

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
# The browser tests (tests/web) run playwright-core from npm on Node.js;
# a machine may have Node.js from elsewhere, so only the commands count.
if [ "$SET" = test ] &&
	{ ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; }; then
	missing="$missing nodejs npm"
fi
[ -z "$missing" ] && exit 0

echo "deps: installing$missing" >&2
if [ "$(id -u)" != 0 ]; then
	SUDO=sudo
else
	SUDO=
fi
export DEBIAN_FRONTEND=noninteractive

# apt_locked ARGS...: runs apt-get ARGS; while it fails because another
# process holds the dpkg or apt lists lock, waits and tries again, up to
# KB_DEPS_LOCK_WAIT_S seconds in all. Any other failure fails at once.
WAIT_S=${KB_DEPS_LOCK_WAIT_S:-600}
STEP_S=${KB_DEPS_LOCK_STEP_S:-5}
ERR=$(mktemp)
trap 'rm -f "$ERR"' EXIT
apt_locked() {
	waited=0
	while :; do
		# shellcheck disable=SC2086
		if $SUDO apt-get -o DPkg::Lock::Timeout="$STEP_S" "$@" 2>"$ERR"; then
			cat "$ERR" >&2
			return 0
		fi
		if ! grep -qiE 'could not get lock|unable to (lock|acquire the dpkg)' "$ERR"; then
			cat "$ERR" >&2
			return 1
		fi
		if [ "$waited" -ge "$WAIT_S" ]; then
			cat "$ERR" >&2
			echo "deps: the package lock is still held after ${WAIT_S} s" \
				"(another apt-get or dpkg is running); try again when it ends" >&2
			return 1
		fi
		[ "$waited" -gt 0 ] ||
			echo "deps: another apt-get or dpkg holds the package lock;" \
				"waiting for it (up to ${WAIT_S} s)" >&2
		sleep "$STEP_S"
		waited=$((waited + STEP_S))
	done
}
apt_locked update -qq
# shellcheck disable=SC2086
apt_locked install -y -qq --no-install-recommends $missing >/dev/null
