#!/bin/bash
# Device run 5 (H100), one part per call (each within the 10-minute cap):
#
#   bash scripts/device/session5.sh hostile   the CUDA hostile suite on the
#        child-only harness (scripts/gpu-hostile.sh, every program)
#   bash scripts/device/session5.sh prof      why profile mode writes no
#        report: eval.out straight under ncu (no worker, no sandbox), the
#        same under strace, then through kb-worker with the full Result
#   bash scripts/device/session5.sh wprof     profile mode through the
#        worker after the fix, and the smoke of two problems in every mode
#   bash scripts/device/session5.sh nvcc      where a submission's build
#        time goes: nvcc --time of the worker's exact command and variants
#   bash scripts/device/session5.sh turn      turnaround with the
#        submission-build cache (new code / the same file), Python, smoke
#   bash scripts/device/session5.sh rest      persist_l2.sh, turnaround,
#        the Python hostile cases not reached before
#
# Run from the repository root with dist/ built (scripts/bundle.sh). Output
# on stdout; files to $OUT as tar files.
set -u
export PATH=/usr/local/cuda/bin:$PWD/dist/bin:$PATH
export KB_GPU=${KB_GPU:-H100}
PY=/opt/torch/.venv/bin/python3
W=$PWD/dist/bin/kb-worker
R=/tmp/s5
mkdir -p "$R"
say() { printf '\n==== %s\n' "$*"; }

hostile() {
	sh scripts/gpu-hostile.sh -w "$W" -b 470 -o "$R/hostile" 2>&1 | tail -40
}

ncu_args() {
	echo --config-file=off --target-processes=all --set=full \
		--replay-mode=kernel --cache-control=all \
		--clock-control=none --force-overwrite "$@"
}

prof() {
	local w
	w=$(sh problems/harness/cuda/kbg_build.sh -w "$R/va" problems/pmpp/vectoradd \
		problems/pmpp/vectoradd/submission_ok.cu 2>"$R/build.err" | tail -1)
	[ -x "$w/eval.out" ] || { echo "build failed"; tail "$R/build.err"; return; }
	cd "$w" || return
	export KBH_SUBMISSION=$w/submission.so
	say "1. eval.out profile, no profiler"
	POPCORN_FD=3 timeout 60 ./eval.out profile benchmarks.txt 3>rep1.txt >out1.txt 2>&1
	echo "rc=$?"; grep -c . rep1.txt; grep -E '^(check|error|benchmark.0.mean)' rep1.txt | head
	say "2. eval.out under ncu as root, capture range (the worker's arguments)"
	POPCORN_NCU=1 POPCORN_FD=3 timeout 90 ncu $(ncu_args --profile-from-start=off --launch-count=1 --export="$w/p2") \
		./eval.out profile benchmarks.txt 3>rep2.txt >out2.txt 2>&1
	echo "rc=$?"; ls -la "$w"/p2* 2>&1; grep -E '==(PROF|ERROR|WARNING)==' out2.txt | head -20
	grep -E '^(check|error|status)' rep2.txt | head
	say "3. the same, profile from start (every kernel of both processes, 3 launches)"
	POPCORN_NCU=1 POPCORN_FD=3 timeout 90 ncu $(ncu_args --export="$w/p3") --launch-count=3 \
		./eval.out profile benchmarks.txt 3>rep3.txt >out3.txt 2>&1
	echo "rc=$?"; ls -la "$w"/p3* 2>&1; grep -E '==(PROF|ERROR|WARNING)==' out3.txt | head -20
	say "4. under ncu and strace -f (the calls the child's filter refuses)"
	if command -v strace >/dev/null; then
		POPCORN_NCU=1 POPCORN_FD=3 timeout 90 ncu $(ncu_args --profile-from-start=off --launch-count=1 --export="$w/p4") \
			strace -f -o "$w/strace.txt" \
			-e trace=clone,clone3,fork,vfork,execve,kill,tgkill,tkill,socket,connect,ptrace,prctl,seccomp,exit_group \
			./eval.out profile benchmarks.txt 3>rep4.txt >out4.txt 2>&1
		echo "rc=$?"; grep -E 'EPERM|ENOSYS|SIGSYS|killed' "$w/strace.txt" | head -30
		grep -E '==(PROF|ERROR)==' out4.txt | head
	else
		echo "no strace on this host"
	fi
	cd - >/dev/null || return
	say "5. kb-worker eval --mode profile, the Result's runs"
	KB_WORKDIR=$R/kbw KB_CACHE_DIR=$R/kbc timeout 120 "$W" eval problems/pmpp/vectoradd \
		problems/pmpp/vectoradd/submission_ok.cu --mode profile --json >"$R/worker.json" 2>"$R/worker.err"
	echo "rc=$?"; tail -5 "$R/worker.err"
	$PY - "$R/worker.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
print("verdict", r.get("verdict"), (r.get("error") or "")[:300])
for x in r.get("runs", []):
    p = x.get("profile") or {}
    print("--", x.get("key"), x.get("status"), "exit", x.get("exit_code"),
          "| profiler", p.get("profiler"), "| error", (p.get("error") or "")[:400])
    for k in ("stdout", "stderr"):
        t = x.get(k) or ""
        print("  %s (%d bytes):" % (k, len(t)))
        for line in t.splitlines()[-25:]:
            print("   ", line[:200])
EOF
	tar czf "$OUT/prof.tgz" -C "$R" va/out1.txt va/out2.txt va/out3.txt va/out4.txt \
		va/rep1.txt va/rep2.txt va/rep3.txt va/strace.txt worker.json worker.err 2>/dev/null
}

# The worker's profile mode after the fix (the installation's ncu, bound):
# the toolkit's launcher script, the installations, then one evaluation
# and the smoke of two problems in every mode.
wprof() {
	say "the toolkit's ncu"
	ls -la /usr/local/cuda/bin/ncu
	head -c 1500 /usr/local/cuda/bin/ncu | grep -v '^#' | head -30
	ls -d /usr/local/cuda/nsight-compute* /opt/nvidia/nsight-compute/* 2>&1
	say "kb-worker eval --mode profile (vectoradd)"
	KB_WORKDIR=$R/kbw KB_CACHE_DIR=$R/kbc timeout 120 "$W" eval problems/pmpp/vectoradd \
		problems/pmpp/vectoradd/submission_ok.cu --mode profile --json >"$R/worker.json" 2>"$R/worker.err"
	echo "rc=$?"; tail -3 "$R/worker.err"
	$PY -c '
import json, sys
r = json.load(open(sys.argv[1]))
print("verdict", r.get("verdict"), (r.get("error") or "")[:300])
for x in r.get("runs", []):
    p = x.get("profile") or {}
    print("--", x.get("key"), "| profiler", p.get("profiler"), "| error",
          (p.get("error") or "")[:300], "| trace", len(p.get("trace") or ""), "b64 chars")
    print(p.get("summary") or "", "\n", (x.get("stderr") or "")[-400:])
' "$R/worker.json"
	say "smoke, every mode: vectoradd matmul"
	timeout 240 sh scripts/gpu-smoke.sh -w "$W" -p 'vectoradd matmul' 2>&1 | tail -18
}

nvcc_time() {
	local w=$R/nv flags
	rm -rf "$w"; mkdir -p "$w"
	cp problems/pmpp/vectoradd/submission_ok.cu problems/pmpp/vectoradd/task.h "$w/"
	cd "$w" || return
	flags="--std=c++20 -DNDEBUG -Xcompiler=-Wno-psabi -Xcompiler=-fno-strict-aliasing
		--expt-extended-lambda --expt-relaxed-constexpr -forward-unknown-to-host-compiler
		-O3 -Xnvlink=--verbose -Xptxas=--verbose -Xptxas=--warn-on-spills -lineinfo
		-gencode=arch=compute_90a,code=sm_90a -shared -Xcompiler=-fPIC -cudart shared
		-Xlinker=--no-undefined -Xlinker=--require-defined=custom_kernel"
	libs="-Xlinker=--as-needed -lcublas -lcublasLt -lcuda"
	nvcc $flags submission_ok.cu -o warm.so $libs >/dev/null 2>&1 # page cache
	run() { # name, args...
		local name=$1 s e
		shift
		s=$(date +%s.%N)
		nvcc "$@" >"$name.log" 2>&1
		local rc=$?
		e=$(date +%s.%N)
		awk -v n="$name" -v rc=$rc -v s="$s" -v e="$e" 'BEGIN { printf "%-24s rc=%d %6.3f s\n", n, rc, e - s }'
	}
	say "submission build variants (vectoradd submission_ok.cu), 3 runs each"
	for i in 1 2 3; do
		run worker $flags submission_ok.cu -o a.so $libs
		run no-libs $flags submission_ok.cu -o b.so -lcuda
		run no-lineinfo ${flags/-lineinfo/} submission_ok.cu -o c.so $libs
		run cxx17 ${flags/c++20/c++17} submission_ok.cu -o d.so $libs
		run compile-only-c ${flags/-shared/} -c submission_ok.cu -o e.o
		run ptx-only -arch=sm_90a -ptx submission_ok.cu -o f.ptx
	done
	say "nvcc --time of the worker's command (per phase, ms)"
	nvcc --time "$w/t.csv" $flags submission_ok.cu -o t.so $libs >/dev/null 2>&1
	cat "$w/t.csv"
	say "dryrun"
	nvcc --dryrun $flags submission_ok.cu -o t.so $libs 2>&1 | cut -c1-220
	cd - >/dev/null || return
}

rest() {
	say "persist_l2.sh"
	timeout 170 sh bench/gpu/persist_l2.sh 2>&1 | tail -12
	say "turnaround (vectoradd, warm x3)"
	timeout 100 sh bench/gpu/turnaround.sh -w "$W" -n 3 -o "$R/turn" 2>&1 | tail -6
	say "Python hostile: persist_l2, fd_hijack"
	(cd tests/pyharness && KB_PYTHON=$PY timeout 130 $PY gpu_run.py hostile persist_l2 fd_hijack 2>&1 | tail -15)
	say "turnaround, Python (vectoradd_py submission_ok.py, warm x2)"
	KB_PYTHON=$PY timeout 100 sh bench/gpu/turnaround.sh -w "$W" -p problems/pmpp_py/vectoradd \
		-s problems/pmpp_py/vectoradd/submission_ok.py -n 2 -o "$R/pyturn" 2>&1 | tail -5
}

# Turnaround after the submission-build cache and the probe change: new
# code every run (-u) and the same file again, CUDA; Python; a smoke.
turn() {
	say "turnaround CUDA, new code every run"
	timeout 120 sh bench/gpu/turnaround.sh -w "$W" -n 3 -u -o "$R/tu" 2>&1 | tail -5
	say "turnaround CUDA, the same file again"
	timeout 120 sh bench/gpu/turnaround.sh -w "$W" -n 3 -o "$R/ts" 2>&1 | tail -5
	say "turnaround Python (vectoradd_py submission_ok.py)"
	KB_PYTHON=$PY timeout 100 sh bench/gpu/turnaround.sh -w "$W" -p problems/pmpp_py/vectoradd \
		-s problems/pmpp_py/vectoradd/submission_ok.py -n 3 -u -o "$R/pyturn" 2>&1 | tail -5
	say "smoke vectoradd, every mode"
	timeout 150 sh scripts/gpu-smoke.sh -w "$W" -p vectoradd 2>&1 | tail -10
}

case ${1:-} in
hostile) hostile ;;
prof) prof ;;
wprof) wprof ;;
turn) turn ;;
nvcc) nvcc_time ;;
rest) rest ;;
*) echo "usage: session5.sh hostile|prof|wprof|nvcc|rest|turn" >&2; exit 2 ;;
esac
