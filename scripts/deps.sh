#!/bin/sh
# Installs the Debian packages the build, `make run` and `make test` need,
# when any is missing. Runs as root on a fresh Debian bookworm machine; with
# everything present it does nothing and needs no privileges.
set -eu

PKGS="cmake make gcc pkg-config protobuf-c-compiler libprotobuf-c-dev
librdkafka-dev libhiredis-dev libcurl4-openssl-dev libmicrohttpd-dev
libjansson-dev libyaml-dev libsodium-dev libseccomp-dev libzip-dev libarchive-dev check
libsubunit-dev
redis-server curl python3 python3-yaml clang-14 libclang-rt-14-dev
chromium fonts-dejavu-core wrk python3-torch python3-numpy clang-format-14"
# HIP (tests/hip, worker_hip): Debian's hipcc 5.2 and the HIP runtime it
# links. Debian builds them for amd64 only: elsewhere they are left out
# (the HIP tests then skip, exit 77, saying so); where Debian has them a
# failed install fails this script.
HIP_PKGS="hipcc libamdhip64-dev"
for p in $HIP_PKGS; do
	if apt-cache policy "$p" 2>/dev/null | grep -q 'Candidate: [0-9]' ||
		[ "$(dpkg --print-architecture 2>/dev/null)" = amd64 ]; then
		PKGS="$PKGS $p"
	else
		echo "deps: $p is not packaged for this machine: HIP tests will skip" >&2
	fi
done

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
# The browser tests (tests/web) run playwright-core from npm on Node.js;
# a machine may have Node.js from elsewhere, so only the commands count.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
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
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
