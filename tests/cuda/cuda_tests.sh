#!/bin/sh
# cuda_tests.sh: CTest driver for the CUDA problems (see CMakeLists.txt).
#
#   cuda_tests.sh build   ARCH CACHE WORK PROBLEM_DIR SUBMISSION
#   cuda_tests.sh nogpu   CACHE WORK PROBLEM_DIR SUBMISSION
#   cuda_tests.sh hostile CACHE WORK PROBLEM_DIR
#   cuda_tests.sh guard   WORK REPO_ROOT
#
# build:   kbg_build.sh as the worker runs it; must produce eval.out and
#          submission.so.
# nogpu:   builds for sm_90a and checks what eval.out does before it needs
#          a GPU: exit 111 without POPCORN_FD, 2 on a bad mode, 113 on a
#          missing or bad cases file, 110 with CUDA's stub driver.
# hostile: a submission defining memcmp/write/clock_gettime/
#          cudaEventElapsedTime/main builds, and the harness (built without
#          it) takes those from glibc; a submission without a C-linkage
#          custom_kernel is refused at build time (exit 1).
# guard:   test_kbg_guard.cu (the parent side of the driver's process
#          split, kbg_main.cu, kbg_parent.cpp and kbg_case.cpp, included
#          whole, against a fake child: forged and malformed replies, CUDA
#          errors, exits and crashes of the child, writes to the report's
#          descriptor, the child's confinement).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$here/../../problems/harness/cuda/kbg_build.sh
fail() { echo "FAIL: $*" >&2; exit 1; }

cmd=$1
shift
case $cmd in
build)
	arch=$1 cache=$2 work=$3 pdir=$4 sub=$5
	rm -rf "$work"
	sh "$build" -a "$arch" -c "$cache" -w "$work" "$pdir" "$pdir/$sub" >/dev/null
	[ -x "$work/eval.out" ] || fail "no eval.out"
	[ -f "$work/submission.so" ] || fail "no submission.so"
	[ -s "$work/tests.txt" ] && [ -s "$work/benchmarks.txt" ] || fail "no cases rendered"
	;;
nogpu)
	cache=$1 work=$2 pdir=$3 sub=$4
	rm -rf "$work"
	sh "$build" -a 90a -c "$cache" -w "$work" "$pdir" "$pdir/$sub" >/dev/null
	cd "$work"
	export KBH_SUBMISSION="$work/submission.so"
	expect() { # expect CODE DESCRIPTION -- command...
		want=$1 what=$2
		shift 3
		set +e
		"$@" >out.txt 2>err.txt 3>report.txt
		got=$?
		set -e
		[ "$got" = "$want" ] || { cat err.txt >&2; fail "$what: exit $got, want $want"; }
		echo "ok: $what (exit $got: $(head -c 160 err.txt | tr '\n' ' '))"
	}
	expect 111 "no POPCORN_FD" -- env -u POPCORN_FD ./eval.out test tests.txt
	expect 111 "POPCORN_FD not open" -- env POPCORN_FD=9 ./eval.out test tests.txt
	expect 2 "unknown mode" -- env POPCORN_FD=3 ./eval.out race tests.txt
	expect 2 "missing argument" -- env POPCORN_FD=3 ./eval.out test
	expect 113 "missing cases file" -- env POPCORN_FD=3 ./eval.out test nothere.txt
	printf 'seed: 1\n' >bad1.txt
	expect 113 "case without the problem's keys" -- env POPCORN_FD=3 ./eval.out test bad1.txt
	sed -n 1p tests.txt | sed 's/seed: [0-9]*/seed: -1/' >bad2.txt
	expect 113 "negative seed" -- env POPCORN_FD=3 ./eval.out benchmark bad2.txt
	sed -n 1p tests.txt | sed 's/$/; colour: red/' >bad3.txt
	expect 113 "unknown key" -- env POPCORN_FD=3 ./eval.out test bad3.txt
	sed -n 1p benchmarks.txt | sed 's/$/; min_runs: 9; max_runs: 2/' >bad4.txt
	expect 113 "min_runs above max_runs" -- env POPCORN_FD=3 ./eval.out leaderboard bad4.txt
	stub=
	for d in "${CUDA_HOME:-/usr/local/cuda}/lib64/stubs" "${CUDA_HOME:-/usr/local/cuda}/targets/x86_64-linux/lib/stubs"; do
		[ -f "$d/libcuda.so" ] && stub=$d/libcuda.so && break
	done
	if [ -n "$stub" ] && ! ldconfig -p 2>/dev/null | grep -q 'libcuda.so.1 '; then
		mkdir -p stubdrv
		ln -sf "$stub" stubdrv/libcuda.so.1
		expect 110 "stub driver (no GPU)" -- env POPCORN_FD=3 LD_LIBRARY_PATH="$PWD/stubdrv" ./eval.out test tests.txt
		grep -q "CUDA error" err.txt || fail "110 without a CUDA error message"
	else
		echo "skip: stub driver check (a real driver is installed or no stub)"
	fi
	;;
hostile)
	cache=$1 work=$2 pdir=$3
	rm -rf "$work" "$work-cxx"
	sh "$build" -a 90a -c "$cache" -w "$work" "$pdir" "$here/hostile_symbols.cu" >/dev/null ||
		fail "a submission defining library functions must build"
	# The harness is built without the submission: nothing it defines
	# can reach the harness's references.
	syms=$(nm "$work/eval.out")
	for f in memcmp write clock_gettime; do
		echo "$syms" | grep -Eq " [TtWw] $f\$" && fail "eval.out defines $f"
	done
	for f in write clock_gettime; do
		echo "$syms" | grep -Eq "^ +U $f@GLIBC" || fail "$f does not come from glibc"
	done
	echo "ok: the harness takes library functions from glibc"
	set +e
	sh "$build" -a 90a -c "$cache" -w "$work-cxx" "$pdir" "$here/hostile_cxx_linkage.cu" >/dev/null 2>"$work.err"
	rc=$?
	set -e
	[ "$rc" = 1 ] || fail "C++-linkage custom_kernel: exit $rc, want 1"
	grep -q "required symbol .custom_kernel. not defined" "$work.err" ||
		{ cat "$work.err" >&2; fail "no clear message"; }
	echo "ok: C++-linkage custom_kernel refused"
	;;
guard)
	work=$1 root=$2
	rm -rf "$work"
	mkdir -p "$work"
	kbh=$root/problems/harness
	"${NVCC:-nvcc}" -std=c++17 -I"$kbh" -I"$kbh/cuda" -o "$work/test_kbg_guard" \
		"$here/test_kbg_guard.cu" "$kbh/cuda/kbg_dev.cu" "$kbh/cuda/kbg_model.c" \
		"$kbh/cuda/kbg_sys.c" "$kbh/harness.c" "$kbh/guard.c" -ldl ||
		fail "test_kbg_guard does not build"
	printf 'void custom_kernel(void) {}\n' |
		cc -shared -fPIC -x c - -o "$work/submission.so" ||
		fail "the stand-in submission does not build"
	KBH_SUBMISSION="$work/submission.so" "$work/test_kbg_guard"
	;;
*)
	echo "usage: cuda_tests.sh build|nogpu|hostile|guard ..." >&2
	exit 2
	;;
esac
