#!/bin/bash
# Checks C/C++ sources against .clang-format with `clang-format --dry-run`.
#
# usage: scripts/check-format.sh                 the default scope (SCOPE)
#        scripts/check-format.sh --list          the files in .clang-format-files
#        scripts/check-format.sh --tree          every C/C++ file of the tree
#        scripts/check-format.sh --base REV      the files added or changed since REV
#        scripts/check-format.sh FILE...         these files
#        scripts/check-format.sh --update-list   rewrite .clang-format-files with
#                                                every file that conforms now
#
# The tree is to be reformatted in one step. Until then make test (CTest's
# layout_format) holds to the style only the files that already conform,
# listed in .clang-format-files; a change that un-formats one of them
# fails. To format a file you own and hold it to the style from then on:
# clang-format-14 -i FILE, then --update-list (or add its line).
# After the one-step reformat, the whole tree: change this line to
# SCOPE=tree.
SCOPE=list

set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
LIST=.clang-format-files
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

mode=${1:---$SCOPE}
case $mode in
--list)
	[ -f "$LIST" ] || { echo "check-format: no $LIST"; exit 2; }
	files=()
	while IFS= read -r f; do
		case $f in '' | '#'*) continue ;; esac
		if [ -f "$f" ]; then
			files+=("$f")
		else
			echo "note: $LIST lists $f, which is gone: drop its line"
		fi
	done <"$LIST"
	;;
--tree)
	mapfile -t files < <(tree_files)
	;;
--base)
	[ $# -ge 2 ] || { echo "usage: $0 --base REV"; exit 2; }
	mapfile -t files < <(git diff --name-only --diff-filter=AMR "$2" -- \
		'*.c' '*.h' '*.cu' '*.cuh' '*.cc' '*.cpp' '*.hpp' |
		grep -v '^tests/[^/]*/data/')
	;;
--update-list)
	{
		echo "# Files held to .clang-format by make test (scripts/check-format.sh)"
		echo "# until the tree is reformatted in one step; written by"
		echo "# scripts/check-format.sh --update-list."
		tree_files | while IFS= read -r f; do
			if conforms "$f"; then echo "$f"; fi
		done
	} >"$LIST.tmp" && mv "$LIST.tmp" "$LIST" || exit 2
	echo "check-format: $(grep -vc '^#' "$LIST") files listed in $LIST"
	exit 0
	;;
-*)
	sed -n '2,20p' "$0"
	exit 2
	;;
*)
	files=("$@")
	;;
esac

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
