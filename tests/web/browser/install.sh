#!/bin/sh
# tests/web/browser/install.sh SRC_DIR DEST_DIR: installs the browser
# tests' npm packages (package-lock.json, exact versions) into DEST_DIR,
# a build-tree folder, with `npm ci`. Run by the build only when the lock
# file changed, so a rebuild needs no network; npm's own cache (~/.npm)
# serves a fresh build tree offline once the packages were fetched. A
# failure does not fail the build: the browser test then fails and says
# why.
set -u
src=$1
dest=$2
mkdir -p "$dest"
cp "$src/package.json" "$src/package-lock.json" "$dest/"
if ! command -v npm >/dev/null 2>&1; then
	echo "tests/web: npm not found (scripts/deps.sh installs it); the browser test will fail" >&2
	exit 0
fi
if ! (cd "$dest" && npm ci --no-audit --no-fund --prefer-offline --loglevel=error); then
	echo "tests/web: npm ci failed; the browser test will fail until it succeeds" >&2
	rm -rf "$dest/node_modules"
fi
exit 0
