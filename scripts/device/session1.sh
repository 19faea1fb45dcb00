#!/bin/bash
# Device run 1 (H100): the child-only loading of CUDA submissions, honest
# patterns, cross-run attacks, turnaround. Outputs under /tmp/r, tarred
# into $OUT.
set -u
export PATH=/usr/local/cuda/bin:$PATH
R=/tmp/r; mkdir -p $R
W=$PWD/dist/bin/kb-worker
export KB_WORKDIR=/tmp/kbw KB_CACHE_DIR=/tmp/kbw-cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
part=${1:-a}
if [ "$part" = a ]; then
	bash bench/gpu/turnaround.sh -w $W -n 3 -o $R/turn > $R/turnaround.txt 2>&1
	tail -6 $R/turnaround.txt
	bash tests/hostile/crossrun/crossrun.sh $W problems/pmpp/vectoradd H100 \
		tests/hostile/crossrun/vectoradd_link.cu tests/hostile/crossrun/vectoradd_fifo.cu \
		> $R/crossrun-cuda.txt 2>&1
	tail -30 $R/crossrun-cuda.txt
	OUT=$R sh tests/honest/cuda/honest.sh run $W H100 "global_objects extended_lambda own_stream malloc_async device_vars device_printf" > $R/honest-a.txt 2>&1
	cat $R/honest-a.txt
else
	OUT=$R sh tests/honest/cuda/honest.sh run $W H100 "cub_sum thrust_sum coop_groups wmma cublas malloc_async" > $R/honest-b.txt 2>&1
	cat $R/honest-b.txt
fi
tar czf $OUT/session1-$part.tgz -C /tmp r 2>/dev/null
