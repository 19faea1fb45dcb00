#!/bin/sh
# kbg_seal.sh OBJECT EXPORT...
#
# Seals a compiled submission before it is linked with the harness: every
# global symbol OBJECT defines becomes local, except the EXPORTs (the
# problem's C ABI, e.g. custom_kernel) and C++ weak definitions (inline
# functions and template instantiations: mangled _Z names and DW.ref.*,
# which live in COMDAT groups; the harness objects come first on the link
# line, so where both define one, the harness's copy is the one kept).
#
# Why: in one executable a definition in any object wins over a shared
# library's for every reference, the harness's included. Without this a
# submission defining memcmp, write or clock_gettime would sit inside the
# harness's checks and timing. (Defining a CUDA runtime function already
# fails to link: the runtime is linked statically, so it is a duplicate.)
#
# Exits 0, or 1 when an EXPORT is not defined by OBJECT (the submission
# does not implement the interface: report it as a compile error).
set -eu

if [ $# -lt 2 ]; then
	echo "usage: kbg_seal.sh OBJECT EXPORT..." >&2
	exit 2
fi
obj=$1
shift
list=$(mktemp "${TMPDIR:-/tmp}/kbg-seal.XXXXXX")
trap 'rm -f "$list"' EXIT

nm -g --defined-only -P "$obj" | awk -v keep="$*" '
BEGIN { n = split(keep, k, " "); for (i = 1; i <= n; i++) K[k[i]] = 1 }
{
	name = $1; type = $2
	if (name in K) next
	if ((type == "W" || type == "V" || type == "u") &&
	    (name ~ /^_Z/ || name ~ /^DW\.ref\./)) next
	print name
}' >"$list"
if [ -s "$list" ]; then
	objcopy --localize-symbols="$list" "$obj"
fi

for e in "$@"; do
	if ! nm -g --defined-only -P "$obj" | awk -v e="$e" '$1 == e { f = 1 } END { exit !f }'; then
		echo "kbg_seal: $obj does not define $e (declare it extern \"C\")" >&2
		exit 1
	fi
done
