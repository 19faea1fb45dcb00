#!/bin/bash
# Device run 2 (H100): Python problems through kb-worker eval, the Python
# turnaround, the upstream-shaped Python fixture, a ranked Python
# submission through the whole platform with the kb client, the CUDA
# persisting-L2 check, the worker's start-up checks. Outputs under /tmp/r,
# tarred into $OUT.
#
#   bash scripts/device/session2.sh a|b
#     a  worker, turnaround, upstream fixture, platform (about 6 min)
#     b  the Python harness's hostile suite and ablations, persist_l2.sh
#     c  a ranked Python submission through the platform (run.sh dist)
set -u
export PATH=/usr/local/cuda/bin:$PWD/dist/bin:$PATH
export KB_PYTHON=/opt/torch/.venv/bin/python3
R=/tmp/r/${1:-a}; rm -rf $R; mkdir -p $R
W=$PWD/dist/bin/kb-worker
export KB_WORKDIR=/tmp/kbw KB_CACHE_DIR=/tmp/kbw-cache
export KB_PROBLEMS=$PWD/problems/cpu.yaml:$PWD/problems/pmpp.yaml:$PWD/problems/pmpp_py.yaml
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
$KB_PYTHON -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
command -v ninja || ls /opt/torch/.venv/bin | grep -i ninja

# ev NAME DIR FILE MODE: one kb-worker eval, its JSON kept, one table line.
ev() {
	local t0 t1 v
	t0=$(date +%s.%N)
	$W eval "$2" "$3" --mode "$4" --gpu H100 --json >$R/$1.json 2>$R/$1.err
	t1=$(date +%s.%N)
	v=$($KB_PYTHON -c 'import json,sys
try:
  r=json.load(open(sys.argv[1]))
  print(r.get("verdict"), r.get("fault",""), "score=%s" % r.get("score","-"), "build_s=%.2f harness_s=%.2f" % (r.get("build_s",0), r.get("harness_s",0)), (r.get("error") or "")[:120])
except Exception as e: print("no json:", e)' $R/$1.json)
	printf '%-44s %-11s %6.2f s  %s\n' "$1" "$4" "$(awk "BEGIN{print $t1 - $t0}")" "$v" | tee -a $R/table.txt
}

part=${1:-a}
if [ "$part" = a ]; then
	( time $W selftest --gpu H100 ) >$R/selftest.txt 2>&1
	tail -5 $R/selftest.txt
	for p in vectoradd vectorsum; do
		d=problems/pmpp_py/$p
		for ex in ok triton inline wrong; do
			ev "$p-$ex" $d $d/submission_$ex.py test
		done
		ev "$p-template" $d $d/template.py test
		ev "$p-ok" $d $d/submission_ok.py benchmark
		ev "$p-triton" $d $d/submission_triton.py leaderboard
	done
	# Turnaround: test mode of the small PyTorch example, warm worker cache.
	for i in 1 2 3; do
		ev "turnaround-$i" problems/pmpp_py/vectoradd problems/pmpp_py/vectoradd/submission_ok.py test
	done
	u=tests/worker/data/upstream_py/vectoradd
	for m in test benchmark leaderboard; do
		ev "upstream-ok" $u $u/submission_ok.py $m
	done
	ev "upstream-wrong" $u $u/submission_wrong.py test
	cat $R/table.txt
elif [ "$part" = c ]; then
	# The platform, from the bundle: a ranked Python submission by kb.
	KB_HTTP_PORT=0 KB_RUN_DIR=$R/run bash scripts/run.sh dist >$R/run.txt 2>&1 &
	runpid=$!
	for _ in $(seq 1 120); do grep -q 'KernelBot is up' $R/run.txt && break; sleep 0.5; done
	api=$(sed -n 's/^ *API *\(http[^ ]*\).*/\1/p' $R/run.txt | head -1)
	cli=$(sed -n 's/^ *CLI id *\([^ ]*\).*/\1/p' $R/run.txt | head -1)
	echo "api=$api cli=$cli"
	printf 'cli_id: %s\n' "$cli" >$R/popcorn.yaml
	( time kb --api-url "$api" --config $R/popcorn.yaml submit --timeout 400 -l vectoradd_py -g H100 \
		-m leaderboard problems/pmpp_py/vectoradd/submission_ok.py ) >$R/kb-submit.txt 2>&1
	tail -15 $R/kb-submit.txt
	curl -s "$api/submissions/vectoradd_py/H100" | tee $R/ranking.json; echo
	tail -3 $R/run/worker-H100-0.log
	kill -INT $runpid; sleep 15; kill -KILL $runpid 2>/dev/null
else
	cd tests/pyharness
	timeout 300 $KB_PYTHON gpu_run.py hostile >$R/pyh-hostile.txt 2>&1
	tail -30 $R/pyh-hostile.txt
	timeout 150 $KB_PYTHON ablate.py persist_l2 clock_shave lazy >$R/pyh-ablate.txt 2>&1
	tail -15 $R/pyh-ablate.txt
	cd ../..
	OUT=$R timeout 100 sh bench/gpu/persist_l2.sh >$R/persist_l2.txt 2>&1
	tail -8 $R/persist_l2.txt
fi
tar czf $OUT/session2-$part.tgz -C /tmp/r $part 2>/dev/null
