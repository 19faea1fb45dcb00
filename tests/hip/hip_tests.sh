#!/bin/sh
# hip_tests.sh: CTest driver for the HIP problems (see CMakeLists.txt).
#
#   hip_tests.sh toolchain
#   hip_tests.sh build   TARGETS CACHE WORK PROBLEM_DIR SUBMISSION
#   hip_tests.sh nogpu   TARGETS CACHE WORK PROBLEM_DIR SUBMISSION
#
# toolchain: run where CMake found no hipcc. Exit 77 (skipped) only when
#            Debian offers no hipcc package to install on this machine;
#            a hipcc that could be installed but is not fails (run
#            scripts/deps.sh).
# build:     kbg_build.sh as the worker runs it, for every gfx target in
#            TARGETS (comma-separated, one binary); must produce eval.out
#            and submission.so.
# nogpu:     what eval.out does before it needs a GPU: exit 111 without
#            POPCORN_FD, 2 on a bad mode, 113 on a bad cases file, and 110
#            with a HIP error where the HIP runtime finds no device.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$here/../../problems/harness/cuda/kbg_build.sh
fail() { echo "FAIL: $*" >&2; exit 1; }
# hipcc asks rocm_agent_enumerator for the machine's targets when none is
# given; we always give them, so its complaints are noise.
quiet() { grep -v -e rocm_agent_enumerator -e '^Traceback' -e '^  File ' \
	-e '^    ' -e '^FileNotFoundError' >&2 || true; }

cmd=$1
shift
case $cmd in
toolchain)
	if command -v hipcc >/dev/null 2>&1; then
		fail "hipcc is installed now: re-run cmake to get the HIP tests"
	fi
	cand=$(apt-cache policy hipcc 2>/dev/null | sed -n 's/^ *Candidate: *//p')
	if [ -z "$cand" ] || [ "$cand" = "(none)" ]; then
		echo "skip: no hipcc package for this machine (apt-cache policy hipcc)"
		exit 77
	fi
	fail "hipcc $cand can be installed but is not: run scripts/deps.sh"
	;;
build)
	targets=$1 cache=$2 work=$3 pdir=$4 sub=$5
	rm -rf "$work"
	mkdir -p "$(dirname "$work")"
	sh "$build" -a "$targets" -c "$cache" -w "$work" "$pdir" "$pdir/$sub" \
		2>"$work.err" >/dev/null || { quiet <"$work.err"; fail "build"; }
	[ -x "$work/eval.out" ] || fail "no eval.out"
	[ -f "$work/submission.so" ] || fail "no submission.so"
	[ -s "$work/tests.txt" ] && [ -s "$work/benchmarks.txt" ] || fail "no cases rendered"
	# one code object per target in both
	for t in $(echo "$targets" | tr ',' ' '); do
		for f in eval.out submission.so; do
			grep -aq "amdgcn-amd-amdhsa--$t" "$work/$f" ||
				fail "$f has no code object for $t"
		done
	done
	nm -D "$work/submission.so" | grep -q ' T custom_kernel$' ||
		fail "submission.so does not export custom_kernel"
	echo "ok: $(basename "$pdir") $sub for $targets"
	;;
nogpu)
	targets=$1 cache=$2 work=$3 pdir=$4 sub=$5
	rm -rf "$work"
	mkdir -p "$(dirname "$work")"
	sh "$build" -a "$targets" -c "$cache" -w "$work" "$pdir" "$pdir/$sub" \
		2>"$work.err" >/dev/null || { quiet <"$work.err"; fail "build"; }
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
	expect 2 "unknown mode" -- env POPCORN_FD=3 ./eval.out race tests.txt
	expect 113 "missing cases file" -- env POPCORN_FD=3 ./eval.out test nothere.txt
	printf 'seed: 1\n' >bad1.txt
	expect 113 "case without the problem's keys" -- env POPCORN_FD=3 ./eval.out test bad1.txt
	if [ -e /dev/kfd ]; then
		echo "skip: no-device check (this machine has /dev/kfd)"
	else
		expect 110 "no AMD device" -- env POPCORN_FD=3 ./eval.out test tests.txt
		grep -q "HIP error" err.txt || fail "110 without a HIP error message"
		if grep -q "user-code: started" report.txt; then
			fail "the submission ran without a device"
		fi
	fi
	;;
*)
	echo "usage: hip_tests.sh toolchain|build|nogpu ..." >&2
	exit 2
	;;
esac
