export PATH=/usr/local/cuda/bin:$PWD/dist/bin:$PATH
KB_PROFILE_LIMIT=100 timeout 150 sh scripts/device/profile.sh cuda 2>&1 | grep -v '^ *$' | head -70
timeout 200 sh scripts/gpu-smoke.sh -w dist/bin/kb-worker -p 'vectoradd matmul sort histogram' 2>&1 | tail -22
cd tests/pyharness && KB_PYTHON=/opt/torch/.venv/bin/python3 timeout 190 /opt/torch/.venv/bin/python3 gpu_run.py hostile > $OUT/pyh-hostile.txt 2>&1; tail -25 $OUT/pyh-hostile.txt
