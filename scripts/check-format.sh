#!/bin/bash
# Checks C/C++ sources against .clang-format with `clang-format --dry-run`.
#
# usage: scripts/check-format.sh [--tree]        every C/C++ file of the tree
#        scripts/check-format.sh --base REV      the files added or changed since REV
#        scripts/check-format.sh FILE...         these files
#
# make test (CTest's layout_format) holds the whole tree to the style
# (less test fixtures, tests/*/data/, whose exact text a test reads). To
# format what you changed: clang-format-14 -i FILE.

set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
CF=${CLANG_FORMAT:-$(command -v clang-format-14 || command -v clang-format || true)}

if [ -z "$CF" ]; then
	echo "check-format: clang-format-14 is not installed (scripts/deps.sh installs it)"
	exit 77 # CTest: skipped
fi

# Every C/C++ file of the tree, less test fixtures (tests/*/data/), whose
# exact text is what a test reads.
tree_files() {
	git ls-files --cached --others --exclude-standard \
		'*.c' '*.h' '*.cu' '*.cuh' '*.cc' '*.cpp' '*.hpp' |
		grep -v '^tests/[^/]*/data/'
}

conforms() {
	"$CF" --dry-run --Werror "$1" >/dev/null 2>&1
}

mode=${1:---tree}
case $mode in
--tree)
	mapfile -t files < <(tree_files)
	;;
--base)
	[ $# -ge 2 ] || { echo "usage: $0 --base REV"; exit 2; }
	mapfile -t files < <(git diff --name-only --diff-filter=AMR "$2" -- \
		'*.c' '*.h' '*.cu' '*.cuh' '*.cc' '*.cpp' '*.hpp' |
		grep -v '^tests/[^/]*/data/')
	;;
-*)
	sed -n '2,9p' "$0"
	exit 2
	;;
*)
	files=("$@")
	;;
esac

# One clang-format for all (a process per file takes minutes on a loaded
# 2-core machine); file by file only to name the ones that fail.
if [ ${#files[@]} -gt 0 ] &&
	"$CF" --dry-run --Werror "${files[@]}" >/dev/null 2>&1; then
	echo "check-format ($mode): ${#files[@]} files, 0 not formatted ($("$CF" --version | head -n 1))"
	exit 0
fi
bad=0
for f in "${files[@]}"; do
	if ! conforms "$f"; then
		echo "FAIL: $f is not formatted as .clang-format says; the changes:"
		"$CF" "$f" | diff -u "$f" - | sed -n '3,40p'
		bad=$((bad + 1))
	fi
done
echo "check-format ($mode): ${#files[@]} files, $bad not formatted ($("$CF" --version | head -n 1))"
[ "$bad" = 0 ]
