#!/bin/sh
# kbg_build.sh: builds a CUDA problem's eval.out the way the worker does.
#
#   kbg_build.sh [-a ARCH] [-c CACHE] [-w WORKDIR] PROBLEM_DIR SUBMISSION
#
#   ARCH     compute capability with suffix: 90a (H100, default), 80
#            (A100), 89 (L4), 75 (T4)
#   CACHE    object cache (default ${KBG_CACHE:-${TMPDIR:-/tmp}/kbg-cache})
#   WORKDIR  the run directory to create (default: a new mktemp -d); must
#            not exist or be empty
#
# Steps (docs: problems/harness/cuda/README.md, "Build"):
#   1. copy every task.yml `files` entry flat into WORKDIR, the submission
#      under its @SUBMISSION@ name; render tests and benchmarks into
#      WORKDIR/tests.txt and WORKDIR/benchmarks.txt ("k: v; k: v" lines);
#   2. compile every config.sources entry except the submission, once per
#      content: the cache key is sha256 over the flags, `nvcc --version`
#      and every non-submission task file; objects are reused from
#      CACHE/<key>/;
#   3. compile the submission, seal it (kbg_seal.sh; exports: config.exports
#      if the task has it, else custom_kernel);
#   4. link: harness objects in sources order, then the submission.
# Prints WORKDIR on stdout as its last line. Exit 0; 1 when the submission
# fails to compile or seal (a user error); 2 on usage or task errors.
set -eu

arch=90a
cache=${KBG_CACHE:-${TMPDIR:-/tmp}/kbg-cache}
work=
while getopts a:c:w: opt; do
	case $opt in
	a) arch=$OPTARG ;;
	c) cache=$OPTARG ;;
	w) work=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if [ $# -ne 2 ]; then
	echo "usage: kbg_build.sh [-a ARCH] [-c CACHE] [-w WORKDIR] PROBLEM_DIR SUBMISSION" >&2
	exit 2
fi
pdir=$1
sub=$2
task=$pdir/task.yml
[ -f "$task" ] || { echo "kbg_build: no $task" >&2; exit 2; }
[ -f "$sub" ] || { echo "kbg_build: no $sub" >&2; exit 2; }
NVCC=${NVCC:-nvcc}

# ---- the exact flags (keep in sync with README.md) ----
GENCODE="-gencode=arch=compute_${arch},code=sm_${arch}"
CUFLAGS="-O3 -std=c++17 -lineinfo $GENCODE"
HARNESS_CUFLAGS="$CUFLAGS -Xcompiler -fvisibility=hidden"
HARNESS_CFLAGS="-O3 $GENCODE -Xcompiler -std=gnu17,-fvisibility=hidden"
LDLIBS="-lcuda -ldl"

if [ -z "$work" ]; then
	work=$(mktemp -d "${TMPDIR:-/tmp}/kbg-run.XXXXXX")
else
	mkdir -p "$work"
fi

# ---- 1. files, flat ----
# Our task.yml files use one flow map per line:
#   - {"name": "kbg.h", "source": "../../harness/cuda/kbg.h"}
subname=
sed -n 's/^ *- *{ *"name": *"\([^"]*\)", *"source": *"\([^"]*\)" *}.*$/\1 \2/p' \
	"$task" >"$work/.files"
[ -s "$work/.files" ] || { echo "kbg_build: no files in $task" >&2; exit 2; }
while read -r name src; do
	if [ "$src" = "@SUBMISSION@" ]; then
		subname=$name
		cp "$sub" "$work/$name"
	else
		cp "$pdir/$src" "$work/$name"
	fi
done <"$work/.files"
[ -n "$subname" ] || { echo "kbg_build: $task has no @SUBMISSION@" >&2; exit 2; }

list_value() { # list_value KEY: the flow list of config key KEY, one per line
	sed -n "s/^ *$1: *\[\(.*\)\].*$/\1/p" "$task" | head -n 1 |
		tr ',' '\n' | sed 's/^ *"//; s/" *$//' | sed '/^$/d'
}
sources=$(list_value sources)
exports=$(list_value exports)
[ -n "$sources" ] || { echo "kbg_build: no config.sources in $task" >&2; exit 2; }
[ -n "$exports" ] || exports=custom_kernel

render() { # render SECTION: tests/benchmarks as case lines
	awk -v sec="$1" '
		/^[A-Za-z_]+:/ { on = ($0 ~ "^" sec ":") ; next }
		on && /^ *- *\{/ {
			s = $0
			sub(/^ *- *\{ */, "", s); sub(/ *\} *$/, "", s)
			gsub(/"/, "", s); gsub(/, */, "; ", s)
			print s
		}' "$task"
}
render tests >"$work/tests.txt"
render benchmarks >"$work/benchmarks.txt"

# ---- 2. harness and problem objects, cached by content ----
key=$({
	echo "$HARNESS_CUFLAGS|$HARNESS_CFLAGS|$sources"
	"$NVCC" --version
	while read -r name src; do
		[ "$name" = "$subname" ] && continue
		echo "== $name"
		cat "$work/$name"
	done <"$work/.files"
} | sha256sum | cut -c1-32)
objdir=$cache/$key
if [ ! -f "$objdir/.complete" ]; then
	mkdir -p "$cache"
	tmp=$(mktemp -d "$cache/.tmp.XXXXXX")
	for s in $sources; do
		[ "$s" = "$subname" ] && continue
		o=$tmp/${s%.*}.o
		case $s in
		*.c) (cd "$work" && "$NVCC" $HARNESS_CFLAGS -c "$s" -o "$o") ;;
		*) (cd "$work" && "$NVCC" $HARNESS_CUFLAGS -c "$s" -o "$o") ;;
		esac || { rm -rf "$tmp"; echo "kbg_build: harness source $s failed to compile" >&2; exit 2; }
	done
	touch "$tmp/.complete"
	# Another build may have won the race (then -T refuses to move into
	# its directory); either copy is good.
	mv -T "$tmp" "$objdir" 2>/dev/null || rm -rf "$tmp"
	[ -f "$objdir/.complete" ] || { echo "kbg_build: cache $objdir broken" >&2; exit 2; }
fi

# ---- 3. the submission ----
if ! (cd "$work" && "$NVCC" $CUFLAGS -c "$subname" -o submission.o); then
	echo "kbg_build: the submission failed to compile" >&2
	exit 1
fi
# shellcheck disable=SC2086
sh "$(dirname "$0")/kbg_seal.sh" "$work/submission.o" $exports || exit 1

# ---- 4. link ----
objs=
for s in $sources; do
	[ "$s" = "$subname" ] && continue
	objs="$objs $objdir/${s%.*}.o"
done
# shellcheck disable=SC2086
if ! (cd "$work" && "$NVCC" $GENCODE -o eval.out $objs submission.o $LDLIBS); then
	echo "kbg_build: link failed" >&2
	exit 1
fi
echo "$work"
