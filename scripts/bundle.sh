#!/bin/bash
# Packs the built binaries with the shared libraries they need into dist/,
# so they run on a GPU host that has only the driver and the CUDA toolkit
# (no Debian -dev packages, no librdkafka, ...).
#
#   scripts/bundle.sh [BUILD_DIR] [DIST_DIR]
#
# dist/bin/<tool> is a wrapper that sets LD_LIBRARY_PATH to dist/lib and
# runs dist/libexec/<tool>. The C library and the dynamic loader are not
# copied: the host's own (newer or equal glibc) are used, as with any
# binary built on an older distribution.
set -euo pipefail

BUILD=${1:-build}
DIST=${2:-dist}
# $KB_BUNDLE_TOOLS: fewer (the device tool carries at most 64 MiB).
TOOLS=${KB_BUNDLE_TOOLS:-"worker/kb-worker gateway/kb-gateway ranker/kb-ranker devbroker/kb-devbroker client/kb tests/hostile/bench-sandbox/kb-sandbox-exec"}
# redis-server and redis-cli too, for `scripts/run.sh dist` on a host
# without them.
REDIS=$(command -v redis-server || true)
REDIS_CLI=$(command -v redis-cli || true)

rm -rf "$DIST"
mkdir -p "$DIST/bin" "$DIST/libexec" "$DIST/lib"

# Libraries that belong to the host's glibc or its driver stack.
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libresolv\.so|libutil\.so|libcuda\.so|libnvidia)'

for t in $TOOLS ${REDIS:+redis-server} ${REDIS_CLI:+redis-cli}; do
	src="$BUILD/$t"
	[ "$t" = redis-server ] && src=$REDIS
	[ "$t" = redis-cli ] && src=$REDIS_CLI
	if [ ! -x "$src" ]; then
		echo "bundle: $src not built; skipped" >&2
		continue
	fi
	name=$(basename "$t")
	cp "$src" "$DIST/libexec/$name"
	ldd "$src" | awk '/=> \// {print $1, $3}' | while read -r soname path; do
		if ! [[ $soname =~ $skip ]] && [ ! -e "$DIST/lib/$soname" ]; then
			cp -L "$path" "$DIST/lib/$soname"
		fi
	done
	cat >"$DIST/bin/$name" <<WRAP
#!/bin/sh
here=\$(cd "\$(dirname "\$0")/.." && pwd)
LD_LIBRARY_PATH="\$here/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "\$here/libexec/$name" "\$@"
WRAP
	chmod +x "$DIST/bin/$name"
done
du -sh "$DIST" | awk '{print "bundle: " $1 " in '"$DIST"'"}'
ls "$DIST/lib" | tr '\n' ' '
echo
