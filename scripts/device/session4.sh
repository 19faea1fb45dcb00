#!/bin/bash
# Device run 4 (H100): profile mode's JSON, the two Python hostile cases
# fixed for the GPU, and the new Python problems' PyTorch and Triton
# examples in test mode through kb-worker eval. One table on stdout.
export PATH=/usr/local/cuda/bin:$PWD/dist/bin:$PATH
export KB_PYTHON=/opt/torch/.venv/bin/python3 KB_WORKDIR=/tmp/kbw
W=dist/bin/kb-worker
export KB_GPU=H100
timeout 60 $W eval problems/pmpp/vectoradd problems/pmpp/vectoradd/submission_ok.cu \
	--mode profile --json >$OUT/profile.json 2>$OUT/profile.err
echo "profile rc=$?"; tail -3 $OUT/profile.err
$KB_PYTHON -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["verdict"]); [print(x["key"], (x.get("profile") or {}).get("profiler"), (x.get("profile") or {}).get("error"), "\n", (x.get("profile") or {}).get("summary")) for x in r["runs"]]' $OUT/profile.json 2>&1 | head -40
# (the hostile cases ran in the previous call)
for p in grayscale histogram prefixsum sort conv2d matmul rmsnorm grouped_gemm; do
	for ex in ok triton; do
		s=$(date +%s.%N)
		timeout 40 $W eval problems/pmpp_py/$p problems/pmpp_py/$p/submission_$ex.py --mode test --json >$OUT/$p-$ex.json 2>/dev/null
		e=$(date +%s.%N)
		printf '%-13s %-7s %5.1f s  %s\n' $p $ex "$(awk "BEGIN{print $e - $s}")" \
			"$($KB_PYTHON -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["verdict"], (r.get("error") or "")[:150])' $OUT/$p-$ex.json 2>&1 | tail -1)"
	done
done
