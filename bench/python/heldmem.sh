#!/bin/bash
# What held Python runs cost a host while they wait for a job
# (KB_PYTHON_READY=1, worker/run/ready.h: each a harness parent and child
# with torch imported, no CUDA context yet). Starts the platform
# (scripts/run.sh: a CPU worker and one per NVIDIA GPU, each holding a
# run), leaves it idle WAIT seconds, then SAMPLES times a second apart
# prints every held process's RSS and PSS (shared pages divided among the
# processes that map them) and the GPU memory any process holds.
#
#   bash bench/python/heldmem.sh [-d DIST] [-w WAIT] [-n SAMPLES]
#
#   DIST     scripts/bundle.sh's output or a build directory (default:
#            dist when it exists, else build)
#   WAIT     default 20;  SAMPLES  default 5
#
# KB_PROBLEMS defaults to the PMPP Python set (so each worker holds a
# run); KB_PYTHON to /opt/torch/.venv/bin/python3 where it exists. The
# table goes to stdout and, with $OUT set (the device tool), to
# $OUT/heldmem.txt.
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
dist='' wait_s=20 samples=5
while getopts d:w:n: o; do
	case $o in
	d) dist=$OPTARG ;;
	w) wait_s=$OPTARG ;;
	n) samples=$OPTARG ;;
	*) echo "usage: heldmem.sh [-d DIST] [-w WAIT] [-n SAMPLES]" >&2; exit 2 ;;
	esac
done
if [ -z "$dist" ]; then
	dist=$here/build
	[ -d "$here/dist/bin" ] && dist=$here/dist
fi
export KB_PROBLEMS=${KB_PROBLEMS:-$here/problems/pmpp_py.yaml}
if [ -z "${KB_PYTHON:-}" ] && [ -x /opt/torch/.venv/bin/python3 ]; then
	export KB_PYTHON=/opt/torch/.venv/bin/python3
fi
R=$(mktemp -d /tmp/kb-heldmem.XXXXXX)
KB_HTTP_PORT=0 KB_RUN_DIR=$R/run bash "$here/scripts/run.sh" "$dist" >"$R/run.txt" 2>&1 &
runpid=$!
trap 'kill -TERM $runpid 2>/dev/null; wait $runpid; rm -rf "$R"' EXIT
for _ in $(seq 1 600); do
	grep -q 'KernelBot is up' "$R/run.txt" && break
	kill -0 $runpid 2>/dev/null || break
	sleep 0.5
done
grep -q 'KernelBot is up' "$R/run.txt" || { tail -20 "$R/run.txt"; exit 1; }
sleep "$wait_s"
python3 - "$samples" <<'EOF' | tee ${OUT:+"$OUT/heldmem.txt"}
import os, subprocess, sys, time


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


for i in range(int(sys.argv[1])):
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
free -m
