#!/bin/sh
# pack.sh [PROBLEMS_DIR]: packs a problem tree (default: the repository's
# problems/) into problems.tar.gz beside this script, for the
# problems-configmap component. Reproducible: sorted names, fixed times and
# owners, gzip without a timestamp, so the ConfigMap's hash changes only
# when a file does. Only what the gateway reads is packed (task files, set
# files, harness sources); build files are left out.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "${1:-$here/../../../problems}" 2>/dev/null && pwd) || {
	echo "pack.sh: ${1:-problems/} is not a directory" >&2
	exit 2
}
out=$here/problems.tar.gz
limit=$((900 * 1024))

# The top-level entries, not ".": unpacking "." would try to change the
# mode and times of the (root-owned) emptyDir as the gateway's user.
(cd "$src" && find . -mindepth 1 -maxdepth 1 -print0 | LC_ALL=C sort -z) |
	tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
		--exclude=CMakeLists.txt --exclude='*.o' --exclude='*.out' \
		-C "$src" --null -T - -cf - | gzip -n -9 >"$out.tmp"
size=$(wc -c <"$out.tmp")
if [ "$size" -gt "$limit" ]; then
	rm -f "$out.tmp"
	echo "pack.sh: $size bytes packed; a ConfigMap holds 1 MiB at most." \
		"Bake this set into an image instead (docker/README.md)." >&2
	exit 1
fi
mv "$out.tmp" "$out"
echo "pack.sh: $out ($size bytes) from $src"
