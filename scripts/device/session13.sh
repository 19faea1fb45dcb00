#!/bin/bash
# Device run 13 (H100), from the repository root with dist/ built
# (scripts/bundle.sh):
#
#   bash scripts/device/session13.sh heldmem
#        what held Python runs cost the GPU host while they wait for a job
#        (worker/run/ready.py: the harness's parent and child, torch imported,
#        no CUDA context): the platform started from the bundle
#        (scripts/run.sh dist: a CPU worker and one per GPU, each holding
#        a run), left idle 20 s, then every held process's RSS and PSS
#        (shared pages divided among the processes that map them), five
#        samples 1 s apart, and the GPU memory any process holds.
#
#   bash scripts/device/session13.sh nvfloor
#        the floor of a new .cu file's build with the worker's nvcc flags
#        (worker/compile/build_cu.c): vectoradd's submission_ok.cu against a
#        file holding only an empty custom_kernel, three runs each
#        alternating, and `nvcc --time` of the empty file per phase.
#
# The other parts of this session's run are session12.sh's: `STAGGER=28
# session12.sh inline profile P...` and `session12.sh verify`.
set -u
export PATH=/usr/local/cuda/bin:$PWD/dist/bin:$PATH
export KB_PYTHON=${KB_PYTHON:-/opt/torch/.venv/bin/python3}

heldmem() {
	local R=/tmp/s13/p runpid
	rm -rf $R; mkdir -p $R
	export KB_PROBLEMS=$PWD/problems/pmpp_py.yaml
	KB_HTTP_PORT=0 KB_RUN_DIR=$R/run bash scripts/run.sh dist >$R/run.txt 2>&1 &
	runpid=$!
	for _ in $(seq 1 400); do grep -q 'KernelBot is up' $R/run.txt && break; sleep 0.5; done
	grep -q 'KernelBot is up' $R/run.txt || { tail -20 $R/run.txt; kill -TERM $runpid; return 1; }
	sleep 20
	$KB_PYTHON - <<'EOF' | tee "$OUT/heldmem.txt"
import os, subprocess, time


def kib(pid, key):
    try:
        for line in open("/proc/%d/smaps_rollup" % pid):
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def held():
    """The held runs' processes: (pid, ppid, parent or child)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            cmd = open("/proc/%s/cmdline" % d, "rb").read().split(b"\0")
            ppid = int(open("/proc/%s/stat" % d).read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if any(a.endswith(b"ready.py") for a in cmd):
            out.append((int(d), ppid, "child" if b"--child" in cmd else "parent"))
    return sorted(out)


def gpu():
    try:
        r = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory",
                            "--format=csv,noheader"], capture_output=True, text=True)
    except OSError as e:
        return str(e)
    return r.stdout.strip().replace("\n", "; ") or "no process"


for i in range(5):
    ps = held()
    rss = [kib(p, "Rss") / 1024 for p, _, _ in ps]
    pss = [kib(p, "Pss") / 1024 for p, _, _ in ps]
    print("sample %d: %d held processes (%s); RSS %s MiB (sum %.0f); "
          "PSS %s MiB (sum %.0f); GPU: %s" % (
              i, len(ps), " ".join("%d<-%d %s" % x for x in ps),
              " ".join("%.0f" % x for x in rss), sum(rss),
              " ".join("%.0f" % x for x in pss), sum(pss), gpu()))
    time.sleep(1)
EOF
	free -m | tee -a "$OUT/heldmem.txt"
	kill -TERM $runpid; wait $runpid
	cp $R/run.txt "$OUT/heldmem-run.txt"
}

nvfloor() {
	local w=/tmp/s13/nv flags libs i f s e
	rm -rf $w; mkdir -p $w
	cp problems/pmpp/vectoradd/submission_ok.cu problems/pmpp/vectoradd/task.h $w/
	printf '#include "task.h"\nextern "C" void custom_kernel(const __half *, const __half *, __half *, size_t) {}\n' >$w/empty.cu
	cd $w || return
	flags="--std=c++20 -DNDEBUG -Xcompiler=-Wno-psabi -Xcompiler=-fno-strict-aliasing
		--expt-extended-lambda --expt-relaxed-constexpr -forward-unknown-to-host-compiler
		-O3 -lineinfo -gencode=arch=compute_90a,code=sm_90a -shared -Xcompiler=-fPIC
		-cudart shared -Xlinker=--no-undefined"
	libs="-Xlinker=--as-needed -lcublas -lcublasLt -lcuda"
	nvcc $flags submission_ok.cu -o warm.so $libs >/dev/null 2>&1 # page cache
	for i in 1 2 3; do
		for f in submission_ok empty; do
			s=$(date +%s.%N)
			nvcc $flags $f.cu -o $f.so $libs >$f.log 2>&1
			e=$?
			awk -v f=$f -v rc=$e -v s=$s -v t="$(date +%s.%N)" \
				'BEGIN { printf "%-14s rc=%d %6.3f s\n", f, rc, t - s }'
		done
	done | tee "$OUT/nvfloor.txt"
	nvcc --time t.csv $flags empty.cu -o t.so $libs >/dev/null 2>&1
	cat t.csv | tee -a "$OUT/nvfloor.txt"
	cd - >/dev/null || return
}

case ${1:-} in
heldmem) heldmem ;;
nvfloor) nvfloor ;;
*) echo "usage: session13.sh heldmem | nvfloor" >&2; exit 2 ;;
esac
