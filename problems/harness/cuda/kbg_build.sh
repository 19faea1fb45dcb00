#!/bin/sh
# kbg_build.sh: builds a CUDA or HIP problem with a submission the way
# the worker does (worker/compile/build_cu.c, worker/compile/build_hip.c), for the tests
# and the GPU scripts.
#
#   kbg_build.sh [-a ARCH] [-c CACHE] [-w WORKDIR] PROBLEM_DIR SUBMISSION
#
#   ARCH     compute capability with suffix: 90a (H100, default), 80
#            (A100), 89 (L4), 75 (T4); or an AMD gfx target (gfx942
#            MI300X, gfx90a MI250X): hipcc ($HIPCC, default hipcc)
#            instead of nvcc; several gfx targets separated by commas
#            build one binary for all of them (the tests' shortcut; the
#            worker builds for its own device alone)
#   CACHE    harness cache (default ${KBG_CACHE:-${TMPDIR:-/tmp}/kbg-cache})
#   WORKDIR  the run directory to create (default: a new mktemp -d); must
#            not exist or be empty
# $KBG_DEFS, when set, is added to the flags of every harness source
# (diagnostic and test-only builds: -DKBG_SAMPLE_LOG, the timing hostile
# cases' -DKBG_HOSTILE_*, the claim timing -DKBG_NO_SENTINEL); the worker
# never sets it.
#
# Steps:
#   1. copy every task.yml `files` entry flat into WORKDIR, the submission
#      under its @SUBMISSION@ name; render tests and benchmarks into
#      WORKDIR/tests.txt and WORKDIR/benchmarks.txt ("k: v; k: v" lines);
#   2. the harness: every config.sources entry but the submission,
#      compiled and linked into eval.out with the shared CUDA runtime, once
#      per content (the cache key: sha256 over the flags, `nvcc --version`
#      and every task file but the submission); each object once per its
#      own content (the source and what it includes with "..."), so the
#      common harness sources compile once for all problems;
#   3. the submission alone into submission.so (-shared, the shared
#      runtime, no undefined symbols, custom_kernel required).
# For a gfx target the same steps with hipcc and worker/compile/build_hip.c's
# flags (the HIP runtime is always shared).
# Run it as the worker does:
#   KBH_SUBMISSION=WORKDIR/submission.so POPCORN_FD=3 WORKDIR/eval.out ...
# Prints WORKDIR on stdout as its last line. Exit 0; 1 when the submission
# does not build (a user error); 2 on usage or task errors.
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

case $arch in
gfx*)
	# ---- worker/compile/build_hip.c's HIP_FLAGS ----
	NVCC=${HIPCC:-hipcc}
	GENCODE=$(echo "$arch" | tr ',' '\n' | sed 's/^/--offload-arch=/' | tr '\n' ' ')
	CUFLAGS="-std=c++20 -DNDEBUG -O3 -fno-strict-aliasing"
	CFLAGS="-O3 $GENCODE -std=gnu17"
	LINKRT="-ldl"
	SOFLAGS="-shared -fPIC -Wl,--no-undefined -Wl,--require-defined=custom_kernel"
	SOLIBS=
	;;
*)
	# ---- worker/compile/build_cu.c's CU_FLAGS ----
	GENCODE="-gencode=arch=compute_${arch},code=sm_${arch}"
	CUFLAGS="--std=c++20 -DNDEBUG -Xcompiler=-Wno-psabi \
-Xcompiler=-fno-strict-aliasing --expt-extended-lambda \
--expt-relaxed-constexpr -forward-unknown-to-host-compiler -O3 \
-Xnvlink=--verbose -Xptxas=--verbose -Xptxas=--warn-on-spills -lineinfo \
${KBG_DEFS:-}"
	CFLAGS="-O3 $GENCODE -Xcompiler -std=gnu17"
	LINKRT="-cudart shared -lcuda -ldl"
	SOFLAGS="-shared -Xcompiler=-fPIC -cudart shared -Xlinker=--no-undefined \
-Xlinker=--require-defined=custom_kernel"
	SOLIBS="-Xlinker=--as-needed -lcublas -lcublasLt -lcuda"
	;;
esac

if [ -z "$work" ]; then
	work=$(mktemp -d "${TMPDIR:-/tmp}/kbg-run.XXXXXX")
else
	mkdir -p "$work"
fi

# ---- 1. files, flat ----
# Our task.yml files use one flow map per line:
#   - {"name": "kbg.h", "source": "../../harness/cuda/kbg.h"}
# or name a manifest of the harness's files (services/kb_task.h), whose
# sources are relative to the manifest's directory:
#   - {"include": "../../harness/cuda.yml"}
subname=
files_of() {
	sed -n 's/^ *- *{ *"name": *"\([^"]*\)", *"source": *"\([^"]*\)" *}.*$/\1 \2/p' "$1"
}
{
	files_of "$task"
	sed -n 's/^ *- *{ *"include": *"\([^"]*\)" *}.*$/\1/p' "$task" |
		while read -r inc; do
			files_of "$pdir/$inc" | while read -r name src; do
				echo "$name $(dirname "$inc")/$src"
			done
		done
} >"$work/.files"
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

sources=$(sed -n 's/^ *sources: *\[\(.*\)\].*$/\1/p' "$task" | head -n 1 |
	tr ',' '\n' | sed 's/^ *"//; s/" *$//' | sed '/^$/d')
[ -n "$sources" ] || { echo "kbg_build: no config.sources in $task" >&2; exit 2; }

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

# ---- 2. the harness, cached by content ----
# Two levels: eval.out per problem (every task file but the submission),
# and each object per its own source and the files it includes with
# "...", so problems share the objects of the common harness sources.
version=$("$NVCC" --version)
flags="$CUFLAGS|$CFLAGS|$GENCODE"
# includes FILE: FILE and what it includes from $work, recursively.
includes() {
	todo=$1 seen=
	while [ -n "$todo" ]; do
		# shellcheck disable=SC2086
		set -- $todo
		f=$1
		shift
		todo=$*
		case " $seen " in *" $f "*) continue ;; esac
		seen="$seen $f"
		for i in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*$/\1/p' "$work/$f"); do
			[ -f "$work/$i" ] && todo="$todo $i"
		done
	done
	echo "$seen" | tr ' ' '\n' | sed '/^$/d' | sort -u
}
# put TMP DEST: moves a finished file or directory into the cache;
# another build may have won the race, and either copy is good.
put() {
	mv -T "$1" "$2" 2>/dev/null || rm -rf "$1"
}
key=$({
	echo "$flags|$sources"
	echo "$version"
	while read -r name src; do
		[ "$name" = "$subname" ] && continue
		echo "== $name"
		cat "$work/$name"
	done <"$work/.files"
} | sha256sum | cut -c1-32)
entry=$cache/$key
if [ ! -f "$entry/.complete" ]; then
	mkdir -p "$cache/obj"
	tmp=$(mktemp -d "$cache/.tmp.XXXXXX")
	objs=
	for s in $sources; do
		[ "$s" = "$subname" ] && continue
		okey=$({
			echo "$flags|$s"
			echo "$version"
			for i in $(includes "$s"); do
				echo "== $i"
				cat "$work/$i"
			done
		} | sha256sum | cut -c1-32)
		o=$cache/obj/$okey.o
		objs="$objs $o"
		[ -f "$o" ] && continue
		# shellcheck disable=SC2086
		case $s in
		*.c) (cd "$work" && "$NVCC" $CFLAGS -c "$s" -o "$tmp/$okey.o") ;;
		*) (cd "$work" && "$NVCC" $CUFLAGS $GENCODE -c "$s" -o "$tmp/$okey.o") ;;
		esac >"$tmp/log" 2>&1 || {
			cat "$tmp/log" >&2
			rm -rf "$tmp"
			echo "kbg_build: harness source $s failed to compile" >&2
			exit 2
		}
		put "$tmp/$okey.o" "$o"
	done
	# shellcheck disable=SC2086
	"$NVCC" $GENCODE -o "$tmp/eval.out" $objs $LINKRT \
		>"$tmp/log" 2>&1 || {
		cat "$tmp/log" >&2
		rm -rf "$tmp"
		echo "kbg_build: the harness failed to link" >&2
		exit 2
	}
	rm -f "$tmp/log"
	touch "$tmp/.complete"
	put "$tmp" "$entry"
	[ -f "$entry/.complete" ] || { echo "kbg_build: cache $entry broken" >&2; exit 2; }
fi
cp "$entry/eval.out" "$work/eval.out"

# ---- 3. the submission ----
# shellcheck disable=SC2086
if ! (cd "$work" && "$NVCC" $CUFLAGS $GENCODE $SOFLAGS "$subname" \
	-o submission.so $SOLIBS); then
	echo "kbg_build: the submission failed to build" >&2
	exit 1
fi
echo "$work"
