#!/bin/sh
# Regenerates problems/harness/python/kbh_sentinel.ptx (the Python
# harness's sentinel kernel, loaded through the CUDA driver API) from
# kbh_sentinel.cu and the CUDA driver's kbg_sent.cuh.
#   scripts/gen-sentinel-ptx.sh [OUT]    OUT: where to write (default: the
#                                        committed file)
# compute_75: the oldest architecture CUDA 13 builds for; the driver JITs
# the PTX for the GPU it runs on. Needs nvcc (PATH, CUDA_HOME or
# /usr/local/cuda).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$here/problems/harness/python/kbh_sentinel.ptx}
case $out in /*) ;; *) out=$PWD/$out ;; esac
nvcc=$(command -v nvcc || true)
[ -n "$nvcc" ] || nvcc=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
[ -x "$nvcc" ] || { echo "gen-sentinel-ptx: nvcc not found" >&2; exit 2; }
# relative paths, so that the output does not depend on the checkout's
cd "$here/problems/harness/python"
"$nvcc" -ptx -arch=compute_75 -O3 kbh_sentinel.cu -o "$out.tmp"
mv "$out.tmp" "$out"
