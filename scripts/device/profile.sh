#!/bin/sh
# Profile mode on this machine's GPU (issue 17 item 3), end to end.
#
#   sh scripts/device/profile.sh [all|diag|cuda|py]     (repo root, dist/ built)
#
# 1. diag: the host's profiling permission (RmProfilingAdminOnly in
#    /proc/driver/nvidia/params), ncu's version, and ncu on a tiny CUDA
#    program outside the worker, as root and as an unprivileged user:
#    whether this host lets a user without capabilities (what the sandbox
#    runs submissions as) read performance counters at all.
# 2. cuda: `kb-worker eval --mode profile` of PMPP vectoradd (every
#    benchmark: profile.0, profile.1) and matmul (--benchmark-index 1,
#    --ncu-launch-count 2), in the sandbox as in production.
# 3. py: the same for pmpp_py vectoradd (torch profiler; KB_PYTHON is the
#    host's venv).
# For each evaluation it prints the verdict, each run's Profile (profiler,
# error, summary, trace size) and checks that the trace zip opens, listing
# its files. Everything goes to stdout and, as one tar file, to $OUT.
set -u
export PATH=/usr/local/cuda/bin:$PATH
R=/tmp/kbprof
rm -rf "$R"
mkdir -p "$R"
W=${KB_WORKER_BIN:-$PWD/dist/bin/kb-worker}
export KB_WORKDIR=/tmp/kbprof-w KB_CACHE_DIR=/tmp/kbprof-cache KB_GPU=${KB_GPU:-H100}
PY=${KB_PY:-/opt/torch/.venv/bin/python3}
part=${1:-all}
# Per evaluation: together they stay within a 10-minute device call.
LIMIT=${KB_PROFILE_LIMIT:-170}

say() { printf '\n==== %s\n' "$*"; }

diag() {
	say "host"
	nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
	echo "ncu: $(command -v ncu || echo MISSING)"
	ncu --version 2>&1 | tail -1
	say "profiling permission (/proc/driver/nvidia/params)"
	grep -i profil /proc/driver/nvidia/params ||
		echo "(no profiling line in /proc/driver/nvidia/params)"
	echo "RmProfilingAdminOnly: 1 means only CAP_SYS_ADMIN may read counters:"
	echo "the sandbox's unprivileged uid then gets ERR_NVGPUCTRPERM, and the"
	echo "worker's Profile.error says so (the expected result on such a host)."
	say "ncu outside the worker: a tiny kernel, as root, then as uid 65534"
	cat >"$R/tiny.cu" <<'EOF'
__global__ void tiny(float *x) { x[threadIdx.x] += 1.0f; }
int main() { float *x; cudaMalloc(&x, 1024); tiny<<<1, 256>>>(x); return cudaDeviceSynchronize() != cudaSuccess; }
EOF
	nvcc -o "$R/tiny" "$R/tiny.cu" >"$R/tiny-build.txt" 2>&1 ||
		{ echo "nvcc failed:"; cat "$R/tiny-build.txt"; return; }
	chmod 755 "$R" "$R/tiny"
	(cd "$R" && timeout 120 ncu --section SpeedOfLight ./tiny) >"$R/ncu-root.txt" 2>&1
	echo "root: exit $? ($(grep -c 'Duration' "$R/ncu-root.txt") Duration rows;" \
		"$(grep -o 'ERR_NVGPUCTRPERM' "$R/ncu-root.txt" | head -1))"
	grep -E '==ERROR==|Duration|Throughput' "$R/ncu-root.txt" | head -6
	if command -v setpriv >/dev/null; then
		(cd /tmp && timeout 120 setpriv --reuid=65534 --regid=65534 \
			--clear-groups --inh-caps=-all env HOME=/tmp TMPDIR=/tmp \
			ncu --section SpeedOfLight "$R/tiny") >"$R/ncu-nobody.txt" 2>&1
		echo "uid 65534: exit $? ($(grep -c 'Duration' "$R/ncu-nobody.txt") Duration rows;" \
			"$(grep -o 'ERR_NVGPUCTRPERM' "$R/ncu-nobody.txt" | head -1))"
		grep -E '==ERROR==|Duration' "$R/ncu-nobody.txt" | head -4
	fi
}

# show NAME: prints the evaluation's outcome and its Profiles, checks the
# traces written by --trace-dir.
show() {
	python3 - "$R/$1.json" "$R/$1.traces" <<'EOF'
import glob, json, os, sys, zipfile
path, traces = sys.argv[1], sys.argv[2]
try:
    r = json.load(open(path))
except Exception as e:
    print("NO RESULT (%s): see the .err file in the tar" % e)
    sys.exit(0)
print("verdict:", r.get("verdict"), "| fault:", r.get("fault"),
      "| error:", r.get("error") or "-")
for run in r.get("runs", []):
    pf = run.get("profile") or {}
    print("\n--- run %s: passed=%s exit=%s wall=%.1fs" % (
        run.get("key"), run.get("passed"), run.get("exit_code"),
        run.get("duration_s", 0)))
    if not pf:
        print("    NO PROFILE in this run")
        continue
    print("    profiler: %s" % pf.get("profiler"))
    print("    error:    %s" % (pf.get("error") or "-"))
    print("    trace:    %s" % (pf.get("trace") or "none"))
    print("    summary:")
    for line in (pf.get("summary") or "(empty)").splitlines()[:60]:
        print("      " + line)
    if not pf.get("summary") and not pf.get("error"):
        print("    !! neither summary nor error: a bug")
    out = (run.get("stdout") or "") + (run.get("stderr") or "")
    ncu = [l for l in out.splitlines() if l.startswith("==")]
    if ncu:
        print("    ncu said:")
        for l in ncu[:12]:
            print("      " + l[:200])
for z in sorted(glob.glob(os.path.join(traces, "*.zip"))):
    try:
        with zipfile.ZipFile(z) as f:
            bad = f.testzip()
            print("\ntrace %s: opens, %s; files: %s" % (
                os.path.basename(z), "CRC ok" if bad is None else
                "BAD member " + bad,
                ", ".join("%s (%d bytes)" % (i.filename, i.file_size)
                          for i in f.infolist())))
    except Exception as e:
        print("\ntrace %s: DOES NOT OPEN: %s" % (os.path.basename(z), e))
EOF
}

# ev NAME DIR FILE [eval options]: one profile-mode evaluation.
ev() {
	name=$1 dir=$2 file=$3
	shift 3
	say "kb-worker eval $dir $(basename "$file") --mode profile $*"
	mkdir -p "$R/$name.traces"
	start=$(date +%s)
	timeout "$LIMIT" "$W" eval "$dir" "$file" --mode profile --json \
		--trace-dir "$R/$name.traces" "$@" >"$R/$name.json" 2>"$R/$name.err"
	rc=$?
	echo "exit $rc after $(($(date +%s) - start)) s$([ $rc = 124 ] && echo ' (TIMED OUT)')"
	tail -3 "$R/$name.err"
	show "$name"
}

case $part in all | diag) diag ;; esac
case $part in all | cuda)
	ev cuda-vectoradd problems/pmpp/vectoradd problems/pmpp/vectoradd/submission_ok.cu
	ev cuda-matmul problems/pmpp/matmul problems/pmpp/matmul/submission_ok.cu \
		--benchmark-index 1 --ncu-launch-count 2
	;;
esac
case $part in all | py)
	export KB_PYTHON="$PY"
	ev py-vectoradd problems/pmpp_py/vectoradd \
		problems/pmpp_py/vectoradd/submission_ok.py
	;;
esac
say "done: files in \$OUT/profile-$part.tgz"
tar czf "${OUT:-/tmp}/profile-$part.tgz" -C /tmp kbprof 2>/dev/null
