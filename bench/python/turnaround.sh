#!/bin/sh
# Test-mode turnaround of a small Python job through `kb-worker eval`,
# with and without held runs (KB_PYTHON_READY, worker/run/ready.h): ROUNDS
# rounds of `--repeat 4` each way, alternating, each job timed from its
# start to its Result; then the median of each.
#
#   sh bench/python/turnaround.sh [-n ROUNDS] [-g GPU] [-w KB_WORKER]
#
#   ROUNDS     default 3
#   GPU        KB_GPU of the worker (default CPU; H100 on the GPU host)
#   KB_WORKER  default build/worker/kb-worker (dist/bin/kb-worker: the bundle)
#
# KB_PYTHON names the interpreter (default /usr/bin/python3). The job is
# vectoradd_py's PyTorch example, whose compile step is skipped (no
# load_inline), so a held run takes its only run.
set -eu
rounds=3 gpu=CPU worker=build/worker/kb-worker
while getopts n:g:w: o; do
	case $o in
	n) rounds=$OPTARG ;;
	g) gpu=$OPTARG ;;
	w) worker=$OPTARG ;;
	*) echo "usage: turnaround.sh [-n ROUNDS] [-g GPU] [-w KB_WORKER]" >&2; exit 2 ;;
	esac
done
export KB_PYTHON=${KB_PYTHON:-/usr/bin/python3}
made=
if [ -z "${KB_WORKDIR:-}" ]; then
	KB_WORKDIR=$(mktemp -d /tmp/kb-pyturn.XXXXXX)
	made=$KB_WORKDIR
fi
export KB_WORKDIR
p=problems/pmpp_py/vectoradd
out=$(mktemp)
i=0
while [ $i -lt "$rounds" ]; do
	for r in 0 1; do
		KB_PYTHON_READY=$r "$worker" eval $p $p/submission_ok.py --mode test \
			--gpu "$gpu" --repeat 4 2>&1 >/dev/null | grep "job " |
			sed "s/^/ready=$r /" | tee -a "$out"
	done
	i=$((i + 1))
done
for r in 0 1; do
	grep "^ready=$r " "$out" | sed 's/.* in \([0-9.]*\) s .*/\1/' | sort -n |
		awk -v r=$r '{ v[NR] = $1 } END {
			m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "KB_PYTHON_READY=%s: %d jobs, median %.3f s (%.3f-%.3f)\n", r, NR, m, v[1], v[NR] }'
done
rm -f "$out"
[ -z "$made" ] || rm -rf "$made"
